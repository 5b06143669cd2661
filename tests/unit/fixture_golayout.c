// SPDX-License-Identifier: Apache-2.0
/*
 * For tests/integration/labels_test.go: the Go runtime layout of a Go binary from the
 * library's version table and from the binary's DWARF, one line each:
 *   version go1.26.8
 *   table 48 184 352 slice     (or "table none")
 *   dwarf 48 184 352           (or "dwarf none")
 */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "binary/filecache.h"
#include "runtime/golabels/golabels.h"

int main(int argc, char **argv)
{
	struct op_filecache *c;
	struct op_file *f;
	struct op_label_proc lp;
	const char *v;
	int fd;

	if (argc != 2) {
		fprintf(stderr, "usage: %s GO_BINARY\n", argv[0]);
		return 2;
	}
	c = op_filecache_new(0);
	f = c ? op_filecache_get_path(c, argv[1]) : NULL;
	if (!f) {
		fprintf(stderr, "cannot open %s\n", argv[1]);
		return 1;
	}
	v = op_file_go_version(f);
	printf("version %s\n", v ? v : "none");
	if (op_golabels_layout(v, &lp) == 0)
		printf("table %u %u %u %s\n", lp.g_m, lp.m_curg, lp.g_labels,
		       lp.go_hmap ? "map" : "slice");
	else
		printf("table none\n");
	fd = open(argv[1], O_RDONLY);
	if (fd >= 0 && op_golabels_layout_dwarf_fd(fd, &lp) == 0)
		printf("dwarf %u %u %u\n", lp.g_m, lp.m_curg, lp.g_labels);
	else
		printf("dwarf none\n");
	if (fd >= 0)
		close(fd);
	op_file_put(f);
	op_filecache_free(c);
	return 0;
}

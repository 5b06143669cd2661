// SPDX-License-Identifier: Apache-2.0
/*
 * Prints CFI table build figures for each file given (bench/unwind.sh): FDEs, rows before
 * and after merging, distinct rules, bytes in BPF maps, bytes per row, and the best of
 * N compile times.
 *
 * usage: fixture_cfi_stats [-n RUNS] FILE...
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "unwind/cfi.h"

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	int runs = 5, i = 1, rc = 0;

	if (argc > 2 && !strcmp(argv[1], "-n")) {
		runs = atoi(argv[2]);
		i = 3;
	}
	printf("%-40s %7s %8s %8s %6s %10s %9s %9s\n", "file", "fdes", "raw_rows", "rows", "rules",
	       "bytes", "B/row", "build_ms");
	for (; i < argc; i++) {
		struct op_cfi_table *t = NULL;
		double best = 1e9;
		int err = 0;

		for (int r = 0; r < runs; r++) {
			double t0 = now_ms();

			op_cfi_table_free(t);
			err = op_cfi_compile_path(argv[i], &t);
			if (err)
				break;
			if (now_ms() - t0 < best)
				best = now_ms() - t0;
		}
		if (err) {
			fprintf(stderr, "%s: cannot compile its unwind table: %s\n", argv[i],
				strerror(-err));
			rc = 1;
			continue;
		}
		printf("%-40s %7zu %8zu %8zu %6zu %10zu %9.2f %9.2f\n", argv[i], t->n_fdes,
		       t->n_raw_rows, t->n_rows, t->n_rules, op_cfi_table_bytes(t),
		       (double)op_cfi_table_bytes(t) / (double)t->n_rows, best);
		op_cfi_table_free(t);
	}
	return rc;
}

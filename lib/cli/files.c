// SPDX-License-Identifier: Apache-2.0
/* Reading profiles and writing outputs for the otelprof subcommands. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int cli_write_file(const char *path, const void *buf, size_t len)
{
	char *tmp = NULL, *dir_copy = NULL;
	mode_t mask;
	int fd, err;

	if (!strcmp(path, "-")) {
		err = write_all(STDOUT_FILENO, buf, len);
		if (err) {
			fprintf(stderr, "%s: cannot write to stdout: %s\n", prog, strerror(-err));
			return EXIT_RUNTIME;
		}
		return 0;
	}
	dir_copy = strdup(path);
	if (!dir_copy || asprintf(&tmp, "%s/.%s.tmp-XXXXXX", dirname(dir_copy),
				  strrchr(path, '/') ? strrchr(path, '/') + 1 : path) < 0) {
		free(dir_copy);
		fprintf(stderr, "%s: cannot write %s: out of memory\n", prog, path);
		return EXIT_RUNTIME;
	}
	free(dir_copy);
	fd = mkstemp(tmp);
	if (fd < 0) {
		fprintf(stderr, "%s: cannot write %s: %s (choose another output path)\n", prog,
			path, strerror(errno));
		free(tmp);
		return EXIT_RUNTIME;
	}
	/* mkstemp makes 0600; an output file gets the usual 0666 & ~umask */
	mask = umask(0);
	umask(mask);
	err = write_all(fd, buf, len);
	if (!err && fchmod(fd, 0666 & ~mask))
		err = -errno;
	if (close(fd) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err) {
		unlink(tmp);
		fprintf(stderr, "%s: cannot write %s: %s (choose another output path)\n", prog,
			path, strerror(-err));
		free(tmp);
		return EXIT_RUNTIME;
	}
	free(tmp);
	return 0;
}

struct op_data *cli_read_profile(const char *path, enum op_format *fmt)
{
	char err[OP_READ_ERR_LEN];
	enum op_format f;
	struct op_data *d = op_read_file(path, &f, err, sizeof(err));

	if (!d)
		fprintf(stderr, "%s: cannot read %s: %s\n", prog,
			strcmp(path, "-") ? path : "stdin", err);
	if (fmt)
		*fmt = f;
	return d;
}

int cli_value_type(const struct op_data *d, const char *name, const char *file, uint32_t *type)
{
	uint32_t t;

	if (!name) {
		/* a CPU profile's second column (cpu/nanoseconds) says the same as the first */
		*type = 0;
		return 0;
	}
	t = op_data_type_named(d, name);
	if (t == UINT32_MAX) {
		fprintf(stderr, "%s: %s has no sample type '%s'; it has:", prog, file, name);
		for (t = 0; t < d->n_types; t++)
			fprintf(stderr, " %s", op_data_s(d, d->types[t].type));
		fprintf(stderr, " (choose one with --value)\n");
		return EXIT_USAGE;
	}
	*type = t;
	return 0;
}

// SPDX-License-Identifier: Apache-2.0
/*
 * Folded stacks reader: "root;caller;leaf COUNT" per line, as flamegraph.pl's stackcollapse
 * scripts and speedscope write them. Blank lines and lines starting with '#' are skipped.
 * Frames become functions by name, on locations without a mapping; the sample type is
 * samples/count.
 */
#include <stdlib.h>
#include <string.h>

#include "profile/read.h"
#include "profile/read_internal.h"

#define NONE	   UINT32_MAX
#define MAX_FRAMES 65536

int op_read_folded(struct op_data *d, const uint8_t *buf, size_t len, char *err, size_t errlen)
{
	uint32_t type = op_data_type(d, "samples", "count"), *locs;
	size_t pos = 0, line = 0;
	int rc = -1;

	locs = malloc(MAX_FRAMES * sizeof(*locs));
	if (type == NONE || !locs) {
		free(locs);
		return op_errf(err, errlen, "out of memory");
	}
	while (pos < len) {
		const char *s = (const char *)buf + pos, *end, *num, *f;
		struct op_dsample smp = { 0 };
		size_t n = 0, eol;
		uint64_t count = 0;

		line++;
		for (eol = pos; eol < len && buf[eol] != '\n'; eol++)
			;
		end = (const char *)buf + eol;
		pos = eol + 1;
		while (end > s && (end[-1] == '\r' || end[-1] == ' ' || end[-1] == '\t'))
			end--;
		if (end == s || *s == '#')
			continue;
		for (num = end; num > s && num[-1] >= '0' && num[-1] <= '9'; num--)
			;
		if (num == end || num == s || (num[-1] != ' ' && num[-1] != '\t')) {
			op_errf(err, errlen,
				"line %zu: not folded stacks (expected \"frame;frame;... COUNT\")",
				line);
			goto out;
		}
		for (const char *p = num; p < end; p++) {
			if (count > (UINT64_MAX - 9) / 10) {
				op_errf(err, errlen, "line %zu: the count is too large", line);
				goto out;
			}
			count = count * 10 + (uint64_t)(*p - '0');
		}
		if (count > INT64_MAX) {
			op_errf(err, errlen, "line %zu: the count is too large", line);
			goto out;
		}
		end = num - 1;
		while (end > s && (end[-1] == ' ' || end[-1] == '\t'))
			end--;
		/* frames, root first; the stack is stored leaf first */
		for (f = s; f <= end;) {
			const char *e = memchr(f, ';', (size_t)(end - f));
			struct op_dfunction fn = { 0 };
			struct op_dline ln = { 0 };
			struct op_dlocation loc = { .n_lines = 1 };

			if (!e)
				e = end;
			if (n == MAX_FRAMES) {
				op_errf(err, errlen, "line %zu: more than %d frames", line,
					MAX_FRAMES);
				goto out;
			}
			if ((fn.name = op_data_strn(d, f, (size_t)(e - f))) == NONE ||
			    (ln.function = op_data_function(d, &fn)) == NONE ||
			    (locs[n++] = op_data_location(d, &loc, &ln)) == NONE)
				goto oom;
			f = e + 1;
		}
		for (size_t i = 0; i < n / 2; i++) {
			uint32_t t = locs[i];

			locs[i] = locs[n - 1 - i];
			locs[n - 1 - i] = t;
		}
		if ((smp.stack = op_data_stack(d, locs, n)) == NONE ||
		    op_data_add(d, &smp, type, (int64_t)count, NULL, 0) == NONE)
			goto oom;
	}
	rc = 0;
	goto out;
oom:
	op_errf(err, errlen, "out of memory");
out:
	free(locs);
	return rc;
}

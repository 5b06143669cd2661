// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "report/folded.h"
#include "report/view.h"

static void emit(void *ctx, const char *name)
{
	struct op_buf *b = ctx;

	if (b->len)
		op_buf_add(b, ";", 1);
	for (const char *p = name; *p; p++) {
		char c = *p == ';' ? ':' : (*p == '\n' || *p == '\r') ? ' ' : *p;

		op_buf_add(b, &c, 1);
	}
}

int op_write_folded(struct op_data *d, uint32_t type, struct op_buf *out)
{
	struct op_itab lines;
	struct op_buf line = { 0 };
	int64_t *sums = NULL;
	size_t cap = 0;
	uint32_t s, i;
	int rc = -ENOMEM;

	if (op_itab_init(&lines))
		return -ENOMEM;
	for (s = 1; s < d->samples.n; s++) {
		int64_t v = type < d->n_types ? op_data_value(d, s, type) : 0;

		if (v <= 0)
			continue;
		line.len = 0;
		op_stack_frames(d, op_data_sample(d, s)->stack, emit, &line);
		if (!line.len)
			op_buf_puts(&line, "[empty stack]");
		if (line.oom)
			goto out;
		i = op_itab_intern(&lines, line.p, line.len, NULL);
		if (i == UINT32_MAX)
			goto out;
		if (i >= cap) {
			size_t ncap = cap ? cap * 2 : 4096;
			int64_t *n = realloc(sums, ncap * sizeof(*n));

			if (!n)
				goto out;
			memset(n + cap, 0, (ncap - cap) * sizeof(*n));
			sums = n;
			cap = ncap;
		}
		if (__builtin_add_overflow(sums[i], v, &sums[i]))
			sums[i] = INT64_MAX;
	}
	for (i = 1; i < lines.n; i++) {
		uint32_t len;
		const char *p = op_itab_get(&lines, i, &len);

		op_buf_add(out, p, len);
		op_buf_printf(out, " %lld\n", (long long)sums[i]);
	}
	rc = out->oom ? -ENOMEM : 0;
out:
	op_buf_free(&line);
	op_itab_free(&lines);
	free(sums);
	return rc;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the profile-reader fuzz targets (fuzz_pprof.c, fuzz_otlp.c, fuzz_otlpjson.c,
 * fuzz_folded.c) check once a reader accepted an input: the decoded profile goes through
 * every consumer a user has - the HTML report, the diff tables, folded stacks, the pprof and
 * OTLP writers - and both written files read back with the same total for every sample type
 * (unless a total saturated). A reader that refuses an input must say why.
 */
#ifndef OTELPROF_FUZZ_PROFILE_H
#define OTELPROF_FUZZ_PROFILE_H

#include "fuzz.h"
#include "profile/read.h"
#include "profile/write.h"
#include "report/diff.h"
#include "report/folded.h"
#include "report/html.h"
#include "report/view.h"

/* Total of @type, or false when it overflowed (then nothing is compared). */
static inline bool fuzz_total(const struct op_data *d, uint32_t type, int64_t *out)
{
	int64_t t = 0;

	for (uint32_t s = 1; s < d->samples.n; s++)
		if (__builtin_add_overflow(t, op_data_value(d, s, type), &t))
			return false;
	*out = t;
	return true;
}

static inline void fuzz_reread(struct op_data *d, const uint8_t *buf, size_t len)
{
	char err[OP_READ_ERR_LEN] = "";
	struct op_data *back = op_read_buf(buf, len, NULL, err, sizeof(err));

	/* a profile whose samples all merged away into nothing may read as "no samples" */
	if (!back) {
		if (!strstr(err, "no samples"))
			fprintf(stderr, "written profile does not read back: %s\n", err);
		FUZZ_ASSERT(err[0]);
		FUZZ_ASSERT(strstr(err, "no samples"));
		return;
	}
	for (uint32_t t = 0; t < d->n_types; t++) {
		int64_t a, b;
		uint32_t bt = op_data_type_named(back, op_data_s(d, d->types[t].type));

		if (bt == UINT32_MAX || !fuzz_total(d, t, &a) || !fuzz_total(back, bt, &b))
			continue;
		/* a type that appears twice under one name (different units) is not compared */
		if (strcmp(op_data_s(d, d->types[t].unit), op_data_s(back, back->types[bt].unit)))
			continue;
		FUZZ_ASSERT(a == b);
	}
	op_data_free(back);
}

static inline void fuzz_consumers(struct op_data *d)
{
	struct op_html_opts ho = { .title = "fuzz" };
	struct op_diff_opts dopt = { .top = 10 };
	struct op_buf b = { 0 };
	struct op_view *v;
	uint32_t types[16], t, zero = 0;
	uint8_t *out;
	size_t len;

	for (t = 0; t < d->n_types && t < 16; t++)
		types[t] = t;
	v = op_view_new(t);
	FUZZ_ASSERT(v);
	FUZZ_ASSERT(!op_view_add(v, d, types, 0));
	FUZZ_ASSERT(!op_view_finish(v));
	FUZZ_ASSERT(!op_html_write(v, &ho, &b));
	op_buf_free(&b);
	op_view_free(v);

	/* a diff of the profile with itself */
	v = op_view_new(1);
	FUZZ_ASSERT(v);
	v->no_process_frames = true;
	FUZZ_ASSERT(!op_view_add(v, d, &zero, 0) && !op_view_add(v, d, &zero, 1));
	FUZZ_ASSERT(!op_view_finish(v));
	FUZZ_ASSERT(!op_diff_text(v, &dopt, &b));
	op_buf_free(&b);
	op_view_free(v);

	FUZZ_ASSERT(!op_write_folded(d, 0, &b));
	op_buf_free(&b);

	FUZZ_ASSERT(!op_write_pprof(d, &out, &len));
	fuzz_reread(d, out, len);
	free(out);
	FUZZ_ASSERT(!op_write_otlp(d, &out, &len));
	fuzz_reread(d, out, len);
	free(out);
}

/* Run one reader on the input, then the consumers. */
static inline int fuzz_profile_reader(int (*reader)(struct op_data *, const uint8_t *, size_t,
						    char *, size_t),
				      const uint8_t *data, size_t size)
{
	char err[OP_READ_ERR_LEN] = "";
	struct op_data *d = op_data_new();

	/* inputs are bounded by -max_len; a gzip or JSON input may still claim more */
	op_read_max_bytes = 64 << 20;
	FUZZ_ASSERT(d);
	if (reader(d, data, size, err, sizeof(err))) {
		FUZZ_ASSERT(err[0]);
	} else if (d->samples.n > 1) {
		fuzz_consumers(d);
	}
	op_data_free(d);
	/* and the whole path a user takes: detection by content, gzip included */
	d = op_read_buf(data, size, NULL, err, sizeof(err));
	if (d)
		op_data_free(d);
	else
		FUZZ_ASSERT(err[0]);
	return 0;
}

#endif

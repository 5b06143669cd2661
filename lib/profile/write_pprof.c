// SPDX-License-Identifier: Apache-2.0
/*
 * pprof writer of a decoded profile (write.h): only what the samples reference, ids 1..n in
 * first-use order, the main binary's mapping first (go tool pprof heads its reports with
 * mapping[0]), attributes back to the labels they came from (semconv.c), gzipped.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "pprof/profile.pb-c.h"
#include "profile/read_internal.h"
#include "profile/write.h"

typedef Perftools__Profiles__Profile PbProfile;
typedef Perftools__Profiles__Sample PbSample;
typedef Perftools__Profiles__Label PbLabel;
typedef Perftools__Profiles__Mapping PbMapping;
typedef Perftools__Profiles__Location PbLocation;
typedef Perftools__Profiles__Line PbLine;
typedef Perftools__Profiles__Function PbFunction;
typedef Perftools__Profiles__ValueType PbValueType;

struct pw {
	const struct op_data *d;
	struct op_arena a;
	struct op_wmap strs, maps, funcs, locs;
	bool oom;
};

static void *A(struct pw *w, size_t n)
{
	void *p = op_arena_alloc(&w->a, n ? n : 1);

	if (!p)
		w->oom = true;
	else
		memset(p, 0, n ? n : 1);
	return p;
}

static int64_t S(struct pw *w, uint32_t s)
{
	return op_wmap_use(&w->strs, s);
}

/* An output string that is not in the op_data tables: interned on the side. */
static int64_t S_extra(struct pw *w, const char *s, char ***extra, size_t *n_extra);

static PbValueType *vtype(struct pw *w, uint32_t type, uint32_t unit)
{
	PbValueType *vt = A(w, sizeof(*vt));

	if (vt) {
		perftools__profiles__value_type__init(vt);
		vt->type = S(w, type);
		vt->unit = S(w, unit);
	}
	return vt;
}

/* The mapping of the executable of the busiest process, else 0. */
static uint32_t main_mapping(struct pw *w)
{
	const struct op_data *d = w->d;
	uint32_t best_res = 0, i;
	int64_t best = -1;
	int64_t *per_res = calloc(d->sets.n + 1, sizeof(*per_res));
	const struct op_dattr *path;

	if (!per_res)
		return 0;
	for (i = 1; i < d->samples.n; i++) {
		uint32_t r = op_data_sample(d, i)->resource;

		per_res[r] += d->n_types ? op_data_value(d, i, 0) : 0;
		if (per_res[r] > best && op_data_find(d, r, "process.executable.path")) {
			best = per_res[r];
			best_res = r;
		}
	}
	free(per_res);
	path = best_res ? op_data_find(d, best_res, "process.executable.path") : NULL;
	if (!path || path->kind != OP_DVAL_STR)
		return 0;
	for (i = 1; i < d->maps.n; i++)
		if (op_data_map(d, i)->filename == path->str)
			return i;
	return 0;
}

static void label_from_attr(struct pw *w, PbLabel *l, const struct op_dattr *a, char ***extra,
			    size_t *n_extra)
{
	const struct op_data *d = w->d;
	const char *unit, *key = op_label_key(op_data_s(d, a->key), &unit);
	char buf[64];

	perftools__profiles__label__init(l);
	l->key = S_extra(w, key, extra, n_extra);
	switch (a->kind) {
	case OP_DVAL_STR:
		l->str = S(w, a->str);
		break;
	case OP_DVAL_INT:
		l->num = a->num;
		l->num_unit = a->unit ? S(w, a->unit) : unit ? S_extra(w, unit, extra, n_extra) : 0;
		break;
	case OP_DVAL_BOOL:
		l->str = S_extra(w, a->num ? "true" : "false", extra, n_extra);
		break;
	default:
		snprintf(buf, sizeof(buf), "%.17g", a->dbl);
		l->str = S_extra(w, buf, extra, n_extra);
		break;
	}
}

/*
 * Strings the op_data does not hold (label keys renamed back, units, "true") get output
 * indices after the op_data ones: numbered -1, -2 ... while building, fixed up when the
 * table is laid out.
 */
static int64_t S_extra(struct pw *w, const char *s, char ***extra, size_t *n_extra)
{
	uint32_t have = op_data_lookup_str(w->d, s);
	size_t i;

	if (have != UINT32_MAX)
		return S(w, have);
	for (i = 0; i < *n_extra; i++)
		if (!strcmp((*extra)[i], s))
			return -(int64_t)(i + 1);
	if (*n_extra % 64 == 0) {
		char **ne = realloc(*extra, (*n_extra + 64) * sizeof(*ne));

		if (!ne) {
			w->oom = true;
			return 0;
		}
		*extra = ne;
	}
	(*extra)[*n_extra] = strdup(s);
	if (!(*extra)[*n_extra]) {
		w->oom = true;
		return 0;
	}
	return -(int64_t)(++*n_extra);
}

static int gzip_buf(const uint8_t *in, size_t in_len, uint8_t **out, size_t *out_len)
{
	z_stream zs;
	uint8_t *buf;
	size_t cap;

	memset(&zs, 0, sizeof(zs));
	if (deflateInit2(&zs, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	cap = deflateBound(&zs, in_len) + 32;
	buf = malloc(cap);
	if (!buf) {
		deflateEnd(&zs);
		return -ENOMEM;
	}
	zs.next_in = (Bytef *)in;
	zs.avail_in = (uInt)in_len;
	zs.next_out = buf;
	zs.avail_out = (uInt)cap;
	if (deflate(&zs, Z_FINISH) != Z_STREAM_END) {
		deflateEnd(&zs);
		free(buf);
		return -ENOMEM;
	}
	*out_len = zs.total_out;
	*out = buf;
	deflateEnd(&zs);
	return 0;
}

int op_write_pprof(const struct op_data *d, uint8_t **out, size_t *len)
{
	struct pw w = { .d = d };
	PbProfile prof;
	PbSample **samples;
	char **extra = NULL;
	size_t n_extra = 0, i, j, k, n_samples = d->samples.n - 1;
	uint8_t(*flags)[4] = NULL;
	uint8_t *raw = NULL;
	bool add_col = op_pprof_adds_period_column(d);
	uint32_t n_types = d->n_types + add_col;
	int rc = -ENOMEM;

	perftools__profiles__profile__init(&prof);
	if (op_wmap_init(&w.strs, d->strs.n) || op_wmap_init(&w.maps, d->maps.n) ||
	    op_wmap_init(&w.funcs, d->funcs.n) || op_wmap_init(&w.locs, d->locs.n))
		goto out;

	/* sample types first in the string table, as pprof writers do */
	prof.sample_type = A(&w, n_types * sizeof(*prof.sample_type));
	if (!prof.sample_type)
		goto out;
	for (i = 0; i < d->n_types; i++)
		prof.sample_type[i] = vtype(&w, d->types[i].type, d->types[i].unit);
	if (add_col)
		prof.sample_type[d->n_types] = vtype(&w, d->period_type.type, d->period_type.unit);
	prof.n_sample_type = n_types;
	if (d->period_type.type || d->period_type.unit)
		prof.period_type = vtype(&w, d->period_type.type, d->period_type.unit);
	prof.period = d->period;
	prof.time_nanos = (int64_t)d->time_ns;
	prof.duration_nanos = (int64_t)d->duration_ns;

	samples = A(&w, n_samples * sizeof(*samples));
	if (!samples)
		goto out;
	for (i = 0; i < n_samples && !w.oom; i++) {
		const struct op_dsample *s = op_data_sample(d, (uint32_t)i + 1);
		PbSample *ps = A(&w, sizeof(*ps));
		uint32_t nl, nr, na;
		const uint32_t *locs = op_data_list(&d->stacks, s->stack, &nl);
		const uint32_t *res = op_data_list(&d->sets, s->resource, &nr);
		const uint32_t *attrs = op_data_list(&d->sets, s->attrs, &na);

		if (!ps)
			break;
		perftools__profiles__sample__init(ps);
		samples[i] = ps;
		ps->location_id = A(&w, nl * sizeof(*ps->location_id));
		ps->value = A(&w, n_types * sizeof(*ps->value));
		ps->label = A(&w, (nr + na) * sizeof(*ps->label));
		if (w.oom)
			break;
		ps->n_location_id = nl;
		for (j = 0; j < nl; j++)
			ps->location_id[j] = op_wmap_use(&w.locs, locs[j]);
		ps->n_value = n_types;
		for (j = 0; j < d->n_types; j++)
			ps->value[j] = op_data_value(d, (uint32_t)i + 1, (uint32_t)j);
		if (add_col && __builtin_mul_overflow(ps->value[0], d->period, &ps->value[j]))
			ps->value[j] = INT64_MAX;
		for (j = 0; j < nr + na; j++) {
			PbLabel *l = A(&w, sizeof(*l));

			if (!l)
				break;
			/* the process's attributes first, as our encoder writes pid first */
			label_from_attr(&w, l, op_data_at(d, j < nr ? res[j] : attrs[j - nr]),
					&extra, &n_extra);
			ps->label[j] = l;
		}
		ps->n_label = nr + na;
	}
	prof.sample = samples;
	prof.n_sample = n_samples;
	if (w.oom)
		goto out;

	/* mappings: the main binary first, then in first-use order */
	op_wmap_use(&w.maps, main_mapping(&w));
	for (i = 1; i < w.locs.n; i++)
		op_wmap_use(&w.maps, op_data_loc(d, w.locs.order[i])->mapping);

	prof.location = A(&w, w.locs.n * sizeof(*prof.location));
	if (!prof.location)
		goto out;
	for (i = 1; i < w.locs.n && !w.oom; i++) {
		const struct op_dlocation *l = op_data_loc(d, w.locs.order[i]);
		const struct op_dline *ln = op_dloc_lines(l);
		PbLocation *pl = A(&w, sizeof(*pl));

		if (!pl)
			break;
		perftools__profiles__location__init(pl);
		prof.location[i - 1] = pl;
		pl->id = i;
		pl->mapping_id = w.maps.map[l->mapping];
		pl->address = l->address;
		pl->is_folded = l->is_folded;
		pl->line = A(&w, l->n_lines * sizeof(*pl->line));
		for (j = 0; j < l->n_lines && pl->line; j++) {
			PbLine *pln = A(&w, sizeof(*pln));

			if (!pln)
				break;
			perftools__profiles__line__init(pln);
			pln->function_id = op_wmap_use(&w.funcs, ln[j].function);
			pln->line = ln[j].line;
			pln->column = ln[j].column;
			pl->line[j] = pln;
		}
		pl->n_line = l->n_lines;
	}
	prof.n_location = w.locs.n - 1;

	flags = calloc(d->maps.n + 1, sizeof(*flags));
	prof.mapping = A(&w, w.maps.n * sizeof(*prof.mapping));
	if (!flags || !prof.mapping || w.oom)
		goto out;
	op_mapping_flags_from_frames(d, flags);
	for (i = 1; i < w.maps.n; i++) {
		uint32_t mi = w.maps.order[i];
		const struct op_dmapping *m = op_data_map(d, mi);
		PbMapping *pm = A(&w, sizeof(*pm));
		bool has = m->has_functions || m->has_filenames || m->has_line_numbers ||
			   m->has_inline_frames;

		if (!pm)
			goto out;
		perftools__profiles__mapping__init(pm);
		prof.mapping[i - 1] = pm;
		pm->id = i;
		pm->memory_start = m->memory_start;
		pm->memory_limit = m->memory_limit;
		pm->file_offset = m->file_offset;
		pm->filename = S(&w, m->filename);
		pm->build_id = S(&w, m->build_id_gnu	   ? m->build_id_gnu
				     : m->build_id_htlhash ? m->build_id_htlhash
							   : m->build_id_go);
		/* formats without the flags (OTLP, folded): what the frames show */
		pm->has_functions = has ? m->has_functions : flags[mi][0];
		pm->has_filenames = has ? m->has_filenames : flags[mi][1];
		pm->has_line_numbers = has ? m->has_line_numbers : flags[mi][2];
		pm->has_inline_frames = has ? m->has_inline_frames : flags[mi][3];
	}
	prof.n_mapping = w.maps.n - 1;

	prof.function = A(&w, w.funcs.n * sizeof(*prof.function));
	if (!prof.function)
		goto out;
	for (i = 1; i < w.funcs.n; i++) {
		const struct op_dfunction *f = op_data_func(d, w.funcs.order[i]);
		PbFunction *pf = A(&w, sizeof(*pf));

		if (!pf)
			goto out;
		perftools__profiles__function__init(pf);
		prof.function[i - 1] = pf;
		pf->id = i;
		pf->name = S(&w, f->name);
		pf->system_name = S(&w, f->system_name);
		pf->filename = S(&w, f->filename);
		pf->start_line = f->start_line;
	}
	prof.n_function = w.funcs.n - 1;

	prof.drop_frames = S(&w, d->pprof.drop_frames);
	prof.keep_frames = S(&w, d->pprof.keep_frames);
	prof.doc_url = S(&w, d->pprof.doc_url);
	prof.default_sample_type = S(&w, d->pprof.default_sample_type);
	if (d->pprof.n_comments) {
		prof.comment = A(&w, d->pprof.n_comments * sizeof(*prof.comment));
		if (!prof.comment)
			goto out;
		for (i = 0; i < d->pprof.n_comments; i++)
			prof.comment[i] = S(&w, d->pprof.comments[i]);
		prof.n_comment = d->pprof.n_comments;
	}

	/* the string table: op_data strings in first-use order, then the extras */
	prof.string_table = A(&w, (w.strs.n + n_extra) * sizeof(*prof.string_table));
	if (!prof.string_table || w.oom)
		goto out;
	for (i = 0; i < w.strs.n; i++)
		prof.string_table[i] = (char *)op_data_s(d, w.strs.order[i]);
	for (i = 0; i < n_extra; i++)
		prof.string_table[w.strs.n + i] = extra[i];
	prof.n_string_table = w.strs.n + n_extra;
	/* extras were numbered -1, -2 ...: now w.strs.n, w.strs.n + 1 ... */
	for (i = 0; i < n_samples; i++)
		for (j = 0; j < prof.sample[i]->n_label; j++) {
			PbLabel *l = prof.sample[i]->label[j];
			int64_t *f[3] = { &l->key, &l->str, &l->num_unit };

			for (k = 0; k < 3; k++)
				if (*f[k] < 0)
					*f[k] = (int64_t)w.strs.n - 1 - *f[k];
		}

	{
		size_t n = perftools__profiles__profile__get_packed_size(&prof);

		raw = malloc(n ? n : 1);
		if (!raw)
			goto out;
		perftools__profiles__profile__pack(&prof, raw);
		rc = gzip_buf(raw, n, out, len);
	}
out:
	free(raw);
	free(flags);
	for (i = 0; i < n_extra; i++)
		free(extra[i]);
	free(extra);
	op_wmap_free(&w.strs);
	op_wmap_free(&w.maps);
	op_wmap_free(&w.funcs);
	op_wmap_free(&w.locs);
	op_arena_free(&w.a);
	return rc;
}

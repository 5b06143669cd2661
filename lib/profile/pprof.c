// SPDX-License-Identifier: Apache-2.0
/*
 * pprof encoder: perftools.profiles.Profile (proto/pprof/profile.proto) through protobuf-c,
 * gzip-compressed as `go tool pprof` reads it.
 *
 * Ids are positions in compact output tables (1..n): only what the samples reference is
 * emitted, in first-use order, except that the main binary's mapping goes first (pprof takes
 * mapping[0] as the main binary: its name heads `go tool pprof` reports).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "util/log.h"
#include "otelprof.h"
#include "pprof/profile.pb-c.h"
#include "profile/profile_internal.h"

typedef Perftools__Profiles__Profile PbProfile;
typedef Perftools__Profiles__ValueType PbValueType;
typedef Perftools__Profiles__Sample PbSample;
typedef Perftools__Profiles__Label PbLabel;
typedef Perftools__Profiles__Mapping PbMapping;
typedef Perftools__Profiles__Location PbLocation;
typedef Perftools__Profiles__Line PbLine;
typedef Perftools__Profiles__Function PbFunction;

#define N_LABELS 6

struct pprof_enc {
	const struct op_profile *p;
	struct op_grouped g;
	struct op_remap locs, maps, funcs, strs;

	PbProfile prof;
	PbValueType vt[3 + OP_SAMPLE_KINDS];
	PbValueType *vt_ptrs[2 + OP_SAMPLE_KINDS];
	/* samples, cpu; off_cpu when there is off-CPU time; Go's four heap types with allocations
	 */
	size_t n_types;
	size_t col[OP_SAMPLE_KINDS]; /* a kind's value column, 0: none (CPU: columns 0 and 1) */
	PbSample *samples;
	PbSample **sample_ptrs;
	PbLabel *labels;
	PbLabel **label_ptrs;
	uint64_t *loc_ids;
	int64_t *values;
	PbMapping *mappings;
	PbMapping **mapping_ptrs;
	PbLocation *locations;
	PbLocation **location_ptrs;
	PbLine *lines;
	PbLine **line_ptrs;
	PbFunction *functions;
	PbFunction **function_ptrs;
	char **strings;
};

static void enc_free(struct pprof_enc *e)
{
	op_grouped_free(&e->g);
	op_remap_free(&e->locs);
	op_remap_free(&e->maps);
	op_remap_free(&e->funcs);
	op_remap_free(&e->strs);
	free(e->samples);
	free(e->sample_ptrs);
	free(e->labels);
	free(e->label_ptrs);
	free(e->loc_ids);
	free(e->values);
	free(e->mappings);
	free(e->mapping_ptrs);
	free(e->locations);
	free(e->location_ptrs);
	free(e->lines);
	free(e->line_ptrs);
	free(e->functions);
	free(e->function_ptrs);
	free(e->strings);
}

static inline int64_t S(struct pprof_enc *e, uint32_t str)
{
	return op_remap_use(&e->strs, str);
}

static PbLabel *add_label(struct pprof_enc *e, size_t *ni, enum op_wk key)
{
	PbLabel *l = &e->labels[*ni];

	e->label_ptrs[(*ni)++] = l;
	perftools__profiles__label__init(l);
	l->key = S(e, e->p->wk[key]);
	return l;
}

static void str_label(struct pprof_enc *e, size_t *ni, enum op_wk key, uint32_t str)
{
	add_label(e, ni, key)->str = S(e, str);
}

/*
 * Numeric labels carry a unit: pprof readers drop a numeric label whose value is 0 and that
 * has no unit, and cpu 0 (or pid 0, the idle task) is common. A unit pprof does not know is
 * not displayed ("cpu: 0").
 */
static void num_label(struct pprof_enc *e, size_t *ni, enum op_wk key, int64_t num)
{
	PbLabel *l = add_label(e, ni, key);

	l->num = num;
	l->num_unit = S(e, e->p->wk[OP_WK_ID]);
}

/* String labels for the attributes of @set. */
static void set_labels(struct pprof_enc *e, size_t *ni, const struct op_attrset *set)
{
	const struct op_profile *p = e->p;

	for (uint32_t j = 0; j < set->n; j++) {
		const struct op_attr *a = &p->attrs[p->set_attrs[set->first + j]];
		PbLabel *l = &e->labels[*ni];

		e->label_ptrs[(*ni)++] = l;
		perftools__profiles__label__init(l);
		l->key = S(e, a->label_key ? a->label_key : a->key);
		l->str = S(e, a->str);
	}
}

/* Index of the used mapping that is the executable of the busiest process, or 0. */
static uint32_t main_mapping(struct pprof_enc *e)
{
	const struct op_profile *p = e->p;
	uint32_t *by_file, best = 0, i;
	uint64_t best_events = 0;

	by_file = calloc(p->n_strs, sizeof(*by_file));
	if (!by_file)
		return 0;
	for (i = 1; i < e->locs.n; i++) {
		uint32_t m = p->locations[e->locs.order[i]].mapping;
		uint32_t f = p->mappings[m].filename;

		if (m && f && !by_file[f] && m != p->kernel_mapping)
			by_file[f] = m;
	}
	for (i = 1; i < p->n_processes; i++) {
		const struct op_process *pr = &p->processes[i];

		if (pr->exe_path && by_file[pr->exe_path] && pr->events > best_events) {
			best = by_file[pr->exe_path];
			best_events = pr->events;
		}
	}
	free(by_file);
	return best;
}

static int build(struct pprof_enc *e)
{
	const struct op_profile *p = e->p;
	size_t n_loc_ids = 0, li = 0, ni = 0, n_labels = 0;
	uint32_t i, j, n;
	int err;

	err = op_profile_group(p, &e->g);
	if (err)
		return err;
	if (op_remap_init(&e->locs, p->n_locations) || op_remap_init(&e->maps, p->n_mappings) ||
	    op_remap_init(&e->funcs, p->n_functions) || op_remap_init(&e->strs, p->n_strs))
		return -ENOMEM;

	n = p->n_samples - 1;
	for (i = 1; i < p->n_samples; i++)
		n_loc_ids += p->stacks[p->samples[i].stack].n;
	e->samples = calloc(n ? n : 1, sizeof(*e->samples));
	e->sample_ptrs = calloc(n ? n : 1, sizeof(*e->sample_ptrs));
	for (i = 0; i < n; i++) {
		const struct op_psample *s = &p->samples[e->g.order[i]];

		n_labels += N_LABELS + p->sets[s->labels].n +
			    p->sets[p->processes[s->process].resource].n;
	}
	e->labels = calloc(n_labels + 1, sizeof(*e->labels));
	e->label_ptrs = calloc(n_labels + 1, sizeof(*e->label_ptrs));
	e->loc_ids = calloc(n_loc_ids + 1, sizeof(*e->loc_ids));
	e->n_types = 2;
	for (i = 1; i < p->n_samples; i++)
		if (p->samples[i].kind == OP_SAMPLE_OFF_CPU && !e->col[OP_SAMPLE_OFF_CPU])
			e->col[OP_SAMPLE_OFF_CPU] = e->n_types++;
	for (i = 1; i < p->n_samples; i++) {
		if (p->samples[i].kind >= OP_SAMPLE_ALLOC_OBJECTS &&
		    p->samples[i].kind <= OP_SAMPLE_INUSE_SPACE) {
			/* all four, as Go writes a heap profile */
			for (j = OP_SAMPLE_ALLOC_OBJECTS; j <= OP_SAMPLE_INUSE_SPACE; j++)
				e->col[j] = e->n_types++;
			break;
		}
	}
	for (i = 1; i < p->n_samples; i++)
		if (p->samples[i].kind == OP_SAMPLE_PROBE && !e->col[OP_SAMPLE_PROBE])
			e->col[OP_SAMPLE_PROBE] = e->n_types++;
	e->values = calloc((size_t)n * e->n_types + 1, sizeof(*e->values));
	if (!e->samples || !e->sample_ptrs || !e->labels || !e->label_ptrs || !e->loc_ids ||
	    !e->values)
		return -ENOMEM;

	/* the sample types and label keys come first in the string table */
	S(e, p->wk[OP_WK_SAMPLES]);
	S(e, p->wk[OP_WK_COUNT]);
	S(e, p->wk[OP_WK_CPU]);
	S(e, p->wk[OP_WK_NANOSECONDS]);
	for (j = OP_SAMPLE_OFF_CPU; j < OP_SAMPLE_KINDS; j++) {
		uint32_t type, unit;

		if (!e->col[j])
			continue;
		op_kind_type(p, j, &type, &unit);
		S(e, type);
		S(e, unit);
	}

	S(e, p->wk[OP_WK_ID]);

	/* samples, grouped by process; location ids are assigned on first use */
	for (i = 0; i < n; i++) {
		const struct op_psample *s = &p->samples[e->g.order[i]];
		const struct op_process *pr = &p->processes[s->process];
		const struct op_stack *st = &p->stacks[s->stack];
		PbSample *ps = &e->samples[i];

		perftools__profiles__sample__init(ps);
		e->sample_ptrs[i] = ps;
		ps->location_id = &e->loc_ids[li];
		ps->n_location_id = st->n;
		for (j = 0; j < st->n; j++)
			e->loc_ids[li++] = op_remap_use(&e->locs, p->stack_locs[st->first + j]);
		ps->value = &e->values[e->n_types * i];
		ps->n_value = e->n_types;
		if (s->kind != OP_SAMPLE_CPU) {
			/* calloc'ed: no CPU samples, no CPU time */
			ps->value[e->col[s->kind]] = s->value;
		} else {
			ps->value[0] = s->count;
			ps->value[1] = (int64_t)s->count * (int64_t)p->opts.period_ns;
		}
		ps->label = &e->label_ptrs[ni];

		num_label(e, &ni, OP_WK_PID, pr->pid);
		num_label(e, &ni, OP_WK_TID, s->tid);
		if (s->thread_name)
			str_label(e, &ni, OP_WK_THREAD_NAME, s->thread_name);
		if (pr->exe_name)
			str_label(e, &ni, OP_WK_EXE_NAME, pr->exe_name);
		if (s->cpu >= 0)
			num_label(e, &ni, OP_WK_CPU_LABEL, s->cpu);
		if (s->thread_state)
			str_label(e, &ni, OP_WK_THREAD_STATE, s->thread_state);
		/* the thread's labels (key without the OTLP prefix), then the process's resource */
		set_labels(e, &ni, &p->sets[s->labels]);
		set_labels(e, &ni, &p->sets[pr->resource]);
		ps->n_label = &e->label_ptrs[ni] - ps->label;
	}

	/* mappings: the main binary first, then in first-use order */
	op_remap_use(&e->maps, main_mapping(e));
	for (i = 1; i < e->locs.n; i++)
		op_remap_use(&e->maps, p->locations[e->locs.order[i]].mapping);

	/* locations and their lines (functions assigned on first use) */
	n = e->locs.n - 1;
	e->locations = calloc(n ? n : 1, sizeof(*e->locations));
	e->location_ptrs = calloc(n ? n : 1, sizeof(*e->location_ptrs));
	if (!e->locations || !e->location_ptrs)
		return -ENOMEM;
	for (n_loc_ids = 0, i = 1; i < e->locs.n; i++)
		n_loc_ids += p->locations[e->locs.order[i]].n_lines;
	e->lines = calloc(n_loc_ids + 1, sizeof(*e->lines));
	e->line_ptrs = calloc(n_loc_ids + 1, sizeof(*e->line_ptrs));
	if (!e->lines || !e->line_ptrs)
		return -ENOMEM;
	for (li = 0, i = 1; i < e->locs.n; i++) {
		const struct op_location *l = &p->locations[e->locs.order[i]];
		PbLocation *pl = &e->locations[i - 1];

		perftools__profiles__location__init(pl);
		e->location_ptrs[i - 1] = pl;
		pl->id = i;
		pl->mapping_id = e->maps.map[l->mapping];
		pl->address = l->address;
		pl->line = &e->line_ptrs[li];
		pl->n_line = l->n_lines;
		for (j = 0; j < l->n_lines; j++) {
			const struct op_line *ln = &p->lines[l->first_line + j];
			PbLine *pln = &e->lines[li];

			perftools__profiles__line__init(pln);
			e->line_ptrs[li++] = pln;
			pln->function_id = op_remap_use(&e->funcs, ln->function);
			pln->line = ln->line;
			pln->column = ln->column;
		}
	}

	n = e->maps.n - 1;
	e->mappings = calloc(n ? n : 1, sizeof(*e->mappings));
	e->mapping_ptrs = calloc(n ? n : 1, sizeof(*e->mapping_ptrs));
	if (!e->mappings || !e->mapping_ptrs)
		return -ENOMEM;
	for (i = 1; i < e->maps.n; i++) {
		const struct op_mapping *m = &p->mappings[e->maps.order[i]];
		PbMapping *pm = &e->mappings[i - 1];
		uint32_t bid = m->build_id_gnu	     ? m->build_id_gnu
			       : m->build_id_htlhash ? m->build_id_htlhash
						     : m->build_id_go;

		perftools__profiles__mapping__init(pm);
		e->mapping_ptrs[i - 1] = pm;
		pm->id = i;
		pm->memory_start = m->memory_start;
		pm->memory_limit = m->memory_limit;
		pm->file_offset = m->file_offset;
		pm->filename = S(e, m->filename);
		pm->build_id = S(e, bid);
		pm->has_functions = m->has_functions;
		pm->has_filenames = m->has_line_numbers;
		pm->has_line_numbers = m->has_line_numbers;
		pm->has_inline_frames = m->has_inline_frames;
	}

	n = e->funcs.n - 1;
	e->functions = calloc(n ? n : 1, sizeof(*e->functions));
	e->function_ptrs = calloc(n ? n : 1, sizeof(*e->function_ptrs));
	if (!e->functions || !e->function_ptrs)
		return -ENOMEM;
	for (i = 1; i < e->funcs.n; i++) {
		const struct op_function *f = &p->functions[e->funcs.order[i]];
		PbFunction *pf = &e->functions[i - 1];

		perftools__profiles__function__init(pf);
		e->function_ptrs[i - 1] = pf;
		pf->id = i;
		pf->name = S(e, f->name);
		pf->system_name = S(e, f->system_name);
		pf->filename = S(e, f->filename);
		pf->start_line = f->start_line;
	}

	e->strings = calloc(e->strs.n, sizeof(*e->strings));
	if (!e->strings)
		return -ENOMEM;
	for (i = 0; i < e->strs.n; i++)
		e->strings[i] = (char *)p->strs[e->strs.order[i]].s;

	perftools__profiles__profile__init(&e->prof);
	for (i = 0; i < 3 + OP_SAMPLE_KINDS; i++)
		perftools__profiles__value_type__init(&e->vt[i]);
	e->vt[0].type = S(e, p->wk[OP_WK_SAMPLES]);
	e->vt[0].unit = S(e, p->wk[OP_WK_COUNT]);
	e->vt[1].type = e->vt[2].type = S(e, p->wk[OP_WK_CPU]);
	e->vt[1].unit = e->vt[2].unit = S(e, p->wk[OP_WK_NANOSECONDS]);
	e->vt_ptrs[0] = &e->vt[0];
	e->vt_ptrs[1] = &e->vt[1];
	for (j = OP_SAMPLE_OFF_CPU; j < OP_SAMPLE_KINDS; j++) {
		uint32_t type, unit;

		if (!e->col[j])
			continue;
		op_kind_type(p, j, &type, &unit);
		e->vt[1 + e->col[j]].type = S(e, type);
		e->vt[1 + e->col[j]].unit = S(e, unit);
		e->vt_ptrs[e->col[j]] = &e->vt[1 + e->col[j]];
	}
	if (e->n_types > 2) {
		/* `go tool pprof` shows the CPU time unless -sample_index=off_cpu, inuse_space...
		 */
		e->prof.default_sample_type = S(e, p->wk[OP_WK_CPU]);
	}
	e->prof.n_sample_type = e->n_types;
	e->prof.sample_type = e->vt_ptrs;
	e->prof.period_type = &e->vt[2];
	e->prof.period = (int64_t)p->opts.period_ns;
	e->prof.time_nanos = (int64_t)p->opts.start_ns;
	e->prof.duration_nanos = (int64_t)op_profile_duration(p);
	e->prof.n_sample = p->n_samples - 1;
	e->prof.sample = e->sample_ptrs;
	e->prof.n_mapping = e->maps.n - 1;
	e->prof.mapping = e->mapping_ptrs;
	e->prof.n_location = e->locs.n - 1;
	e->prof.location = e->location_ptrs;
	e->prof.n_function = e->funcs.n - 1;
	e->prof.function = e->function_ptrs;
	e->prof.n_string_table = e->strs.n;
	e->prof.string_table = e->strings;
	return 0;
}

static int gzip_buf(const uint8_t *in, size_t in_len, uint8_t **out, size_t *out_len)
{
	z_stream zs;
	uint8_t *buf;
	size_t cap;
	int rc;

	memset(&zs, 0, sizeof(zs));
	/*
	 * windowBits 15 + 16: a gzip header and trailer, not a raw or zlib stream. Best speed,
	 * as Go's runtime/pprof does: level 6 halves the speed for 4% smaller output here.
	 */
	if (deflateInit2(&zs, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -OTELPROF_ERR_ENCODE;
	cap = deflateBound(&zs, in_len) + 32;
	buf = malloc(cap);
	if (!buf) {
		deflateEnd(&zs);
		return -ENOMEM;
	}
	zs.next_in = (Bytef *)in;
	zs.avail_in = in_len;
	zs.next_out = buf;
	zs.avail_out = cap;
	rc = deflate(&zs, Z_FINISH);
	if (rc != Z_STREAM_END) {
		op_err("cannot gzip the pprof profile: zlib error %d", rc);
		deflateEnd(&zs);
		free(buf);
		return -OTELPROF_ERR_ENCODE;
	}
	*out_len = zs.total_out;
	*out = buf;
	deflateEnd(&zs);
	return 0;
}

int op_encode_pprof(const struct op_profile *p, uint8_t **out, size_t *len)
{
	struct pprof_enc e;
	uint8_t *raw = NULL;
	size_t n;
	int err;

	if (!p || !out || !len)
		return -EINVAL;
	memset(&e, 0, sizeof(e));
	e.p = p;
	err = build(&e);
	if (err)
		goto out;
	n = perftools__profiles__profile__get_packed_size(&e.prof);
	raw = malloc(n ? n : 1);
	if (!raw) {
		err = -ENOMEM;
		goto out;
	}
	if (perftools__profiles__profile__pack(&e.prof, raw) != n) {
		op_err("cannot encode the pprof profile: packed size mismatch");
		err = -OTELPROF_ERR_ENCODE;
		goto out;
	}
	err = gzip_buf(raw, n, out, len);
out:
	if (err == -ENOMEM)
		op_err("cannot encode the pprof profile: out of memory");
	free(raw);
	enc_free(&e);
	return err;
}

// SPDX-License-Identifier: Apache-2.0
/*
 * pprof reader: perftools.profiles.Profile (proto/pprof/profile.proto), decoded by protobuf-c
 * into an arena, checked index by index, and moved into a struct op_data. Labels become
 * attributes through semconv.c; the build id string is filed under the OTLP key its shape
 * says (op_build_id_kind).
 */
#include <stdlib.h>
#include <string.h>

#include "pprof/profile.pb-c.h"
#include "profile/read.h"
#include "profile/read_internal.h"

#define NONE UINT32_MAX

typedef Perftools__Profiles__Profile PbProfile;

/* pprof ids -> positions: usually 1..n in order; else a sorted array searched. */
struct idmap {
	uint64_t *ids; /* sorted */
	uint32_t *pos;
	size_t n;
	bool dense; /* id i+1 is at position i */
};

struct idpair {
	uint64_t id;
	uint32_t pos;
};

static int cmp_pair(const void *a, const void *b)
{
	uint64_t x = ((const struct idpair *)a)->id, y = ((const struct idpair *)b)->id;

	return x < y ? -1 : x > y;
}

/* Returns 0, -1 on ENOMEM, or 1 + the position of a duplicate or zero id. */
static long idmap_build(struct idmap *m, uint64_t (*get)(const void *, size_t), const void *arr,
			size_t n)
{
	struct idpair *pairs;
	size_t i;

	memset(m, 0, sizeof(*m));
	m->n = n;
	m->dense = true;
	for (i = 0; i < n; i++)
		if (get(arr, i) != i + 1) {
			m->dense = false;
			break;
		}
	if (m->dense)
		return 0;
	pairs = malloc((n ? n : 1) * sizeof(*pairs));
	m->ids = malloc((n ? n : 1) * sizeof(*m->ids));
	m->pos = malloc((n ? n : 1) * sizeof(*m->pos));
	if (!pairs || !m->ids || !m->pos) {
		free(pairs);
		return -1;
	}
	for (i = 0; i < n; i++) {
		pairs[i].id = get(arr, i);
		pairs[i].pos = (uint32_t)i;
		if (!pairs[i].id) {
			free(pairs);
			return 1 + (long)i;
		}
	}
	qsort(pairs, n, sizeof(*pairs), cmp_pair);
	for (i = 0; i < n; i++) {
		if (i && pairs[i].id == pairs[i - 1].id) {
			long dup = pairs[i].pos;

			free(pairs);
			return 1 + dup;
		}
		m->ids[i] = pairs[i].id;
		m->pos[i] = pairs[i].pos;
	}
	free(pairs);
	return 0;
}

static void idmap_free(struct idmap *m)
{
	free(m->ids);
	free(m->pos);
}

/* Position of @id, or NONE. */
static uint32_t idmap_find(const struct idmap *m, uint64_t id)
{
	size_t lo = 0, hi = m->n;

	if (m->dense)
		return id >= 1 && id <= m->n ? (uint32_t)(id - 1) : NONE;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (m->ids[mid] < id)
			lo = mid + 1;
		else if (m->ids[mid] > id)
			hi = mid;
		else
			return m->pos[mid];
	}
	return NONE;
}

static uint64_t mapping_id(const void *a, size_t i)
{
	return ((Perftools__Profiles__Mapping *const *)a)[i]->id;
}

static uint64_t function_id(const void *a, size_t i)
{
	return ((Perftools__Profiles__Function *const *)a)[i]->id;
}

static uint64_t location_id(const void *a, size_t i)
{
	return ((Perftools__Profiles__Location *const *)a)[i]->id;
}

struct pprof_rd {
	struct op_data *d;
	const PbProfile *p;
	uint32_t *strs; /* string index -> op_data string */
	uint32_t *maps, *funcs, *locs;
	struct idmap mid, fid, lid;
	char *err;
	size_t errlen;
};

/* The op_data string of string-table index @i; NONE (with err set) when out of range. */
static uint32_t S(struct pprof_rd *r, int64_t i, const char *what)
{
	if (i < 0 || (uint64_t)i >= r->p->n_string_table) {
		op_errf(r->err, r->errlen,
			"corrupt pprof: %s refers to string %lld, the string table has %zu", what,
			(long long)i, r->p->n_string_table);
		return NONE;
	}
	return r->strs[i];
}

static int read_tables(struct pprof_rd *r)
{
	const PbProfile *p = r->p;
	struct op_data *d = r->d;
	long bad;
	size_t i, j;

	r->strs = calloc(p->n_string_table + 1, sizeof(*r->strs));
	r->maps = calloc(p->n_mapping + 1, sizeof(*r->maps));
	r->funcs = calloc(p->n_function + 1, sizeof(*r->funcs));
	r->locs = calloc(p->n_location + 1, sizeof(*r->locs));
	if (!r->strs || !r->maps || !r->funcs || !r->locs)
		return op_errf(r->err, r->errlen, "out of memory");
	if (p->n_string_table && p->string_table[0][0])
		return op_errf(r->err, r->errlen,
			       "corrupt pprof: the string table does not start with \"\"");
	for (i = 0; i < p->n_string_table; i++)
		if ((r->strs[i] = op_data_str(d, p->string_table[i])) == NONE)
			return op_errf(r->err, r->errlen, "out of memory");

	if ((bad = idmap_build(&r->mid, mapping_id, p->mapping, p->n_mapping)) ||
	    (bad = idmap_build(&r->fid, function_id, p->function, p->n_function)) ||
	    (bad = idmap_build(&r->lid, location_id, p->location, p->n_location)))
		return bad < 0 ? op_errf(r->err, r->errlen, "out of memory")
			       : op_errf(r->err, r->errlen,
					 "corrupt pprof: a mapping, function or location id is 0 "
					 "or "
					 "used twice");

	for (i = 0; i < p->n_mapping; i++) {
		const Perftools__Profiles__Mapping *pm = p->mapping[i];
		struct op_dmapping m;
		uint32_t bid;

		memset(&m, 0, sizeof(m));
		m.memory_start = pm->memory_start;
		m.memory_limit = pm->memory_limit;
		m.file_offset = pm->file_offset;
		if ((m.filename = S(r, pm->filename, "a mapping's file name")) == NONE ||
		    (bid = S(r, pm->build_id, "a mapping's build id")) == NONE)
			return -1;
		if (bid) {
			const char *kind = op_build_id_kind(op_data_s(d, bid));

			if (!strcmp(kind, "go"))
				m.build_id_go = bid;
			else if (!strcmp(kind, "htlhash"))
				m.build_id_htlhash = bid;
			else
				m.build_id_gnu = bid;
		}
		m.has_functions = pm->has_functions;
		m.has_filenames = pm->has_filenames;
		m.has_line_numbers = pm->has_line_numbers;
		m.has_inline_frames = pm->has_inline_frames;
		if ((r->maps[i] = op_data_mapping(d, &m)) == NONE)
			return op_errf(r->err, r->errlen, "out of memory");
	}
	for (i = 0; i < p->n_function; i++) {
		const Perftools__Profiles__Function *pf = p->function[i];
		struct op_dfunction f = { .start_line = pf->start_line };

		if ((f.name = S(r, pf->name, "a function name")) == NONE ||
		    (f.system_name = S(r, pf->system_name, "a function's system name")) == NONE ||
		    (f.filename = S(r, pf->filename, "a function's file name")) == NONE)
			return -1;
		if ((r->funcs[i] = op_data_function(d, &f)) == NONE)
			return op_errf(r->err, r->errlen, "out of memory");
	}
	for (i = 0; i < p->n_location; i++) {
		const Perftools__Profiles__Location *pl = p->location[i];
		struct op_dlocation l = { .address = pl->address, .is_folded = pl->is_folded };
		struct op_dline *lines;
		uint32_t mi = 0;

		if (pl->mapping_id && (mi = idmap_find(&r->mid, pl->mapping_id)) == NONE)
			return op_errf(r->err, r->errlen,
				       "corrupt pprof: location %llu refers to mapping %llu, which "
				       "the file does not define",
				       (unsigned long long)pl->id,
				       (unsigned long long)pl->mapping_id);
		l.mapping = pl->mapping_id ? r->maps[mi] : 0;
		if (pl->n_line > 65536)
			return op_errf(r->err, r->errlen,
				       "corrupt pprof: location %llu has %zu lines",
				       (unsigned long long)pl->id, pl->n_line);
		l.n_lines = (uint32_t)pl->n_line;
		lines = calloc(pl->n_line + 1, sizeof(*lines));
		if (!lines)
			return op_errf(r->err, r->errlen, "out of memory");
		for (j = 0; j < pl->n_line; j++) {
			uint32_t fi = 0;

			if (pl->line[j]->function_id &&
			    (fi = idmap_find(&r->fid, pl->line[j]->function_id)) == NONE) {
				free(lines);
				return op_errf(
					r->err, r->errlen,
					"corrupt pprof: location %llu refers to function %llu, "
					"which the file does not define",
					(unsigned long long)pl->id,
					(unsigned long long)pl->line[j]->function_id);
			}
			lines[j].function = pl->line[j]->function_id ? r->funcs[fi] : 0;
			lines[j].line = pl->line[j]->line;
			lines[j].column = pl->line[j]->column;
		}
		r->locs[i] = op_data_location(d, &l, lines);
		free(lines);
		if (r->locs[i] == NONE)
			return op_errf(r->err, r->errlen, "out of memory");
	}
	return 0;
}

static int read_samples(struct pprof_rd *r)
{
	const PbProfile *p = r->p;
	struct op_data *d = r->d;
	uint32_t types[OP_DATA_MAX_TYPES], *locs = NULL, *res = NULL, *attrs = NULL;
	size_t cap_locs = 0, cap_labels = 0, i, j;
	int rc = -1;

	if (!p->n_sample_type && p->n_sample)
		return op_errf(r->err, r->errlen, "corrupt pprof: samples but no sample types");
	if (p->n_sample_type > OP_DATA_MAX_TYPES)
		return op_errf(r->err, r->errlen, "pprof with %zu sample types (at most %d read)",
			       p->n_sample_type, OP_DATA_MAX_TYPES);
	for (i = 0; i < p->n_sample_type; i++) {
		uint32_t t = S(r, p->sample_type[i]->type, "a sample type");
		uint32_t u = S(r, p->sample_type[i]->unit, "a sample unit");

		if (t == NONE || u == NONE)
			return -1;
		types[i] = op_data_type(d, op_data_s(d, t), op_data_s(d, u));
		if (types[i] == NONE)
			return op_errf(r->err, r->errlen, "out of memory");
		for (j = 0; j < i; j++)
			if (types[j] == types[i])
				return op_errf(r->err, r->errlen,
					       "corrupt pprof: sample type %s/%s appears twice",
					       op_data_s(d, t), op_data_s(d, u));
	}
	for (i = 0; i < p->n_sample; i++) {
		const Perftools__Profiles__Sample *ps = p->sample[i];
		struct op_dsample s = { 0 };
		size_t nr = 0, na = 0;

		if (ps->n_value != p->n_sample_type) {
			op_errf(r->err, r->errlen,
				"corrupt pprof: sample %zu has %zu values for %zu sample types", i,
				ps->n_value, p->n_sample_type);
			goto out;
		}
		if (ps->n_location_id > cap_locs) {
			free(locs);
			cap_locs = ps->n_location_id * 2;
			locs = malloc(cap_locs * sizeof(*locs));
			if (!locs)
				goto oom;
		}
		for (j = 0; j < ps->n_location_id; j++) {
			uint32_t li = idmap_find(&r->lid, ps->location_id[j]);

			if (li == NONE) {
				op_errf(r->err, r->errlen,
					"corrupt pprof: sample %zu refers to location %llu, which "
					"the "
					"file does not define",
					i, (unsigned long long)ps->location_id[j]);
				goto out;
			}
			locs[j] = r->locs[li];
		}
		if ((s.stack = op_data_stack(d, locs, ps->n_location_id)) == NONE)
			goto oom;
		if (ps->n_label > cap_labels) {
			free(res);
			free(attrs);
			cap_labels = ps->n_label * 2;
			res = malloc(cap_labels * sizeof(*res));
			attrs = malloc(cap_labels * sizeof(*attrs));
			if (!res || !attrs)
				goto oom;
		}
		for (j = 0; j < ps->n_label; j++) {
			const Perftools__Profiles__Label *pl = ps->label[j];
			uint32_t k = S(r, pl->key, "a label key"), v, u, a;
			bool resource;

			v = S(r, pl->str, "a label value");
			u = S(r, pl->num_unit, "a label unit");
			if (k == NONE || v == NONE || u == NONE)
				goto out;
			if (!k)
				continue; /* a label without a key says nothing */
			a = op_label_to_attr(d, op_data_s(d, k), op_data_s(d, v), pl->num,
					     op_data_s(d, u), !v, &resource);
			if (a == NONE)
				goto oom;
			if (resource)
				res[nr++] = a;
			else
				attrs[na++] = a;
		}
		if ((s.resource = op_data_set(d, res, nr)) == NONE ||
		    (s.attrs = op_data_set(d, attrs, na)) == NONE)
			goto oom;
		for (j = 0; j < p->n_sample_type; j++)
			if (op_data_add(d, &s, types[j], ps->value[j], NULL, 0) == NONE)
				goto oom;
	}
	rc = 0;
	goto out;
oom:
	op_errf(r->err, r->errlen, "out of memory");
out:
	free(locs);
	free(res);
	free(attrs);
	return rc;
}

static int read_meta(struct pprof_rd *r)
{
	const PbProfile *p = r->p;
	struct op_data *d = r->d;
	size_t i;

	if (p->period_type) {
		if ((d->period_type.type = S(r, p->period_type->type, "the period type")) == NONE ||
		    (d->period_type.unit = S(r, p->period_type->unit, "the period unit")) == NONE)
			return -1;
	}
	d->period = p->period;
	d->time_ns = p->time_nanos > 0 ? (uint64_t)p->time_nanos : 0;
	d->duration_ns = p->duration_nanos > 0 ? (uint64_t)p->duration_nanos : 0;
	if ((d->pprof.drop_frames = S(r, p->drop_frames, "drop_frames")) == NONE ||
	    (d->pprof.keep_frames = S(r, p->keep_frames, "keep_frames")) == NONE ||
	    (d->pprof.doc_url = S(r, p->doc_url, "doc_url")) == NONE ||
	    (d->pprof.default_sample_type = S(r, p->default_sample_type, "default_sample_type")) ==
		    NONE)
		return -1;
	if (p->n_comment) {
		d->pprof.comments = calloc(p->n_comment, sizeof(*d->pprof.comments));
		if (!d->pprof.comments)
			return op_errf(r->err, r->errlen, "out of memory");
		for (i = 0; i < p->n_comment; i++)
			if ((d->pprof.comments[i] = S(r, p->comment[i], "a comment")) == NONE)
				return -1;
		d->pprof.n_comments = (uint32_t)p->n_comment;
	}
	return 0;
}

int op_read_pprof(struct op_data *d, const uint8_t *buf, size_t len, char *err, size_t errlen)
{
	struct op_arena arena = { 0 };
	ProtobufCAllocator al = op_arena_allocator(&arena);
	struct pprof_rd r = { .d = d, .err = err, .errlen = errlen };
	PbProfile *p;
	int rc = -1;

	p = perftools__profiles__profile__unpack(&al, len, buf);
	if (!p) {
		if (arena.full)
			op_errf(err, errlen, "out of memory decoding the pprof profile");
		else
			op_errf(err, errlen,
				"corrupt pprof: protobuf decoding failed (truncated or not a pprof "
				"Profile)");
		goto out;
	}
	r.p = p;
	if (read_tables(&r) || read_samples(&r) || read_meta(&r))
		goto out;
	rc = 0;
out:
	free(r.strs);
	free(r.maps);
	free(r.funcs);
	free(r.locs);
	idmap_free(&r.mid);
	idmap_free(&r.fid);
	idmap_free(&r.lid);
	op_arena_free(&arena);
	return rc;
}

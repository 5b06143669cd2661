// SPDX-License-Identifier: Apache-2.0
/*
 * OTLP profiles reader: an ExportProfilesServiceRequest (profiles v1development, the layout
 * of the pinned pdata, see profile/otlp.c) decoded by protobuf-c, or built from OTLP/JSON by
 * read_json.c, then checked and moved into a struct op_data.
 *
 * Each request has its own dictionary; everything is re-interned, so several requests (the
 * lines of a file exporter's output) become one profile. Resource and sample attributes are
 * kept as they are; a profile's samples add to the value of its sample type (a sample with
 * timestamps and no values counts one per timestamp, as the upstream eBPF profiler sends
 * CPU samples).
 */
#include <stdlib.h>
#include <string.h>

#include "profile/read.h"
#include "profile/read_internal.h"

#define NONE UINT32_MAX

typedef Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary PbDictionary;
typedef Opentelemetry__Proto__Profiles__V1development__Profile PbProfile;
typedef Opentelemetry__Proto__Profiles__V1development__Sample PbSample;
typedef Opentelemetry__Proto__Common__V1__AnyValue PbAnyValue;
typedef Opentelemetry__Proto__Common__V1__KeyValue PbKeyValue;

#define V(x) OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_##x

struct otlp_rd {
	struct op_data *d;
	const PbDictionary *dict;
	const char *where; /* "" or "line N: " */
	uint32_t *strs, *attrs, *maps, *funcs, *locs, *stacks, *links;
	char *err;
	size_t errlen;
};

#define FAIL(r, ...)                                                                  \
	({                                                                            \
		char _m[OP_READ_ERR_LEN];                                             \
		snprintf(_m, sizeof(_m), __VA_ARGS__);                                \
		op_errf((r)->err, (r)->errlen, "%scorrupt OTLP: %s", (r)->where, _m); \
	})
#define OOM(r) op_errf((r)->err, (r)->errlen, "out of memory")

/* Check index @i of a table of @n entries (what: for the message). */
static bool bad_index(struct otlp_rd *r, int64_t i, size_t n, const char *what, const char *table)
{
	if (i >= 0 && (uint64_t)i < n)
		return false;
	FAIL(r, "%s refers to %s entry %lld, the table has %zu", what, table, (long long)i, n);
	return true;
}

/* An attribute from an AnyValue: strings, integers, booleans and doubles are kept. */
static uint32_t any_attr(struct otlp_rd *r, uint32_t key, uint32_t unit, const PbAnyValue *v)
{
	struct op_dattr a = { .key = key, .unit = unit };
	static const char hex[] = "0123456789abcdef";
	char *s;
	size_t i;

	if (!v)
		return 0;
	switch (v->value_case) {
	case V(STRING_VALUE):
		a.kind = OP_DVAL_STR;
		if ((a.str = op_data_str(r->d, v->string_value)) == NONE)
			return NONE;
		break;
	case V(STRING_VALUE_STRINDEX):
		if (bad_index(r, v->string_value_strindex, r->dict->n_string_table,
			      "an attribute value", "string_table"))
			return NONE - 1;
		a.kind = OP_DVAL_STR;
		a.str = r->strs[v->string_value_strindex];
		break;
	case V(BOOL_VALUE):
		a.kind = OP_DVAL_BOOL;
		a.num = !!v->bool_value;
		break;
	case V(INT_VALUE):
		a.kind = OP_DVAL_INT;
		a.num = v->int_value;
		break;
	case V(DOUBLE_VALUE):
		a.kind = OP_DVAL_DOUBLE;
		a.dbl = v->double_value;
		break;
	case V(BYTES_VALUE):
		/* kept as hex text */
		if (v->bytes_value.len > 4096)
			return 0;
		s = malloc(v->bytes_value.len * 2 + 1);
		if (!s)
			return NONE;
		for (i = 0; i < v->bytes_value.len; i++) {
			s[2 * i] = hex[v->bytes_value.data[i] >> 4];
			s[2 * i + 1] = hex[v->bytes_value.data[i] & 15];
		}
		s[2 * i] = 0;
		a.kind = OP_DVAL_STR;
		a.str = op_data_str(r->d, s);
		free(s);
		if (a.str == NONE)
			return NONE;
		break;
	default:
		return 0; /* arrays and maps: not kept */
	}
	return op_data_attr(r->d, &a);
}

static int read_dictionary(struct otlp_rd *r)
{
	const PbDictionary *dc = r->dict;
	struct op_data *d = r->d;
	size_t i, j;

#define ALLOC(f, n)                                    \
	do {                                           \
		r->f = calloc((n) + 1, sizeof(*r->f)); \
		if (!r->f)                             \
			return OOM(r);                 \
	} while (0)
	ALLOC(strs, dc->n_string_table);
	ALLOC(attrs, dc->n_attribute_table);
	ALLOC(maps, dc->n_mapping_table);
	ALLOC(funcs, dc->n_function_table);
	ALLOC(locs, dc->n_location_table);
	ALLOC(stacks, dc->n_stack_table);
	ALLOC(links, dc->n_link_table);
#undef ALLOC
	for (i = 0; i < dc->n_string_table; i++)
		if ((r->strs[i] = op_data_str(d, dc->string_table[i])) == NONE)
			return OOM(r);
	/* entry 0 of every table is the zero entry: it stays index 0 ("none") */
	for (i = 1; i < dc->n_attribute_table; i++) {
		const Opentelemetry__Proto__Profiles__V1development__KeyValueAndUnit *kv =
			dc->attribute_table[i];
		uint32_t a;

		if (bad_index(r, kv->key_strindex, dc->n_string_table, "an attribute key",
			      "string_table") ||
		    bad_index(r, kv->unit_strindex, dc->n_string_table, "an attribute unit",
			      "string_table"))
			return -1;
		a = any_attr(r, r->strs[kv->key_strindex], r->strs[kv->unit_strindex], kv->value);
		if (a == NONE)
			return OOM(r);
		if (a == NONE - 1)
			return -1;
		/* an attribute without a key is the zero entry (index 0) or says nothing */
		r->attrs[i] = kv->key_strindex ? a : 0;
	}
	for (i = 1; i < dc->n_mapping_table; i++) {
		const Opentelemetry__Proto__Profiles__V1development__Mapping *pm =
			dc->mapping_table[i];
		struct op_dmapping m;

		memset(&m, 0, sizeof(m));
		if (bad_index(r, pm->filename_strindex, dc->n_string_table, "a mapping's file name",
			      "string_table"))
			return -1;
		m.memory_start = pm->memory_start;
		m.memory_limit = pm->memory_limit;
		m.file_offset = pm->file_offset;
		m.filename = r->strs[pm->filename_strindex];
		for (j = 0; j < pm->n_attribute_indices; j++) {
			const struct op_dattr *a;
			const char *k;

			if (bad_index(r, pm->attribute_indices[j], dc->n_attribute_table,
				      "a mapping attribute", "attribute_table"))
				return -1;
			if (!r->attrs[pm->attribute_indices[j]])
				continue;
			a = op_data_at(d, r->attrs[pm->attribute_indices[j]]);
			if (a->kind != OP_DVAL_STR)
				continue;
			k = op_data_s(d, a->key);
			if (!strcmp(k, OP_KEY_BID_GNU))
				m.build_id_gnu = a->str;
			else if (!strcmp(k, OP_KEY_BID_GO))
				m.build_id_go = a->str;
			else if (!strcmp(k, OP_KEY_BID_HTL))
				m.build_id_htlhash = a->str;
		}
		if ((r->maps[i] = op_data_mapping(d, &m)) == NONE)
			return OOM(r);
	}
	for (i = 1; i < dc->n_function_table; i++) {
		const Opentelemetry__Proto__Profiles__V1development__Function *pf =
			dc->function_table[i];
		struct op_dfunction f = { .start_line = pf->start_line };

		if (bad_index(r, pf->name_strindex, dc->n_string_table, "a function name",
			      "string_table") ||
		    bad_index(r, pf->system_name_strindex, dc->n_string_table,
			      "a function's system name", "string_table") ||
		    bad_index(r, pf->filename_strindex, dc->n_string_table,
			      "a function's file name", "string_table"))
			return -1;
		f.name = r->strs[pf->name_strindex];
		f.system_name = r->strs[pf->system_name_strindex];
		f.filename = r->strs[pf->filename_strindex];
		if ((r->funcs[i] = op_data_function(d, &f)) == NONE)
			return OOM(r);
	}
	for (i = 1; i < dc->n_location_table; i++) {
		const Opentelemetry__Proto__Profiles__V1development__Location *pl =
			dc->location_table[i];
		struct op_dlocation l = { .address = pl->address };
		struct op_dline *lines;

		if (bad_index(r, pl->mapping_index, dc->n_mapping_table, "a location",
			      "mapping_table"))
			return -1;
		l.mapping = r->maps[pl->mapping_index];
		for (j = 0; j < pl->n_attribute_indices; j++) {
			const struct op_dattr *a;

			if (bad_index(r, pl->attribute_indices[j], dc->n_attribute_table,
				      "a location attribute", "attribute_table"))
				return -1;
			if (!r->attrs[pl->attribute_indices[j]])
				continue;
			a = op_data_at(d, r->attrs[pl->attribute_indices[j]]);
			if (a->kind == OP_DVAL_STR &&
			    !strcmp(op_data_s(d, a->key), OP_KEY_FRAME_TYPE))
				l.frame_type = a->str;
		}
		if (pl->n_lines > 65536)
			return FAIL(r, "location %zu has %zu lines", i, pl->n_lines);
		l.n_lines = (uint32_t)pl->n_lines;
		lines = calloc(pl->n_lines + 1, sizeof(*lines));
		if (!lines)
			return OOM(r);
		for (j = 0; j < pl->n_lines; j++) {
			if (bad_index(r, pl->lines[j]->function_index, dc->n_function_table,
				      "a location's line", "function_table")) {
				free(lines);
				return -1;
			}
			lines[j].function = r->funcs[pl->lines[j]->function_index];
			lines[j].line = pl->lines[j]->line;
			lines[j].column = pl->lines[j]->column;
		}
		r->locs[i] = op_data_location(d, &l, lines);
		free(lines);
		if (r->locs[i] == NONE)
			return OOM(r);
	}
	for (i = 1; i < dc->n_stack_table; i++) {
		const Opentelemetry__Proto__Profiles__V1development__Stack *ps = dc->stack_table[i];
		uint32_t *locs = malloc((ps->n_location_indices + 1) * sizeof(*locs));

		if (!locs)
			return OOM(r);
		for (j = 0; j < ps->n_location_indices; j++) {
			if (bad_index(r, ps->location_indices[j], dc->n_location_table, "a stack",
				      "location_table")) {
				free(locs);
				return -1;
			}
			locs[j] = r->locs[ps->location_indices[j]];
			/* the zero location on a stack is a frame: an empty one, not "none" */
			if (!ps->location_indices[j]) {
				struct op_dlocation empty = { 0 };

				locs[j] = op_data_location(d, &empty, NULL);
				if (locs[j] == NONE) {
					free(locs);
					return OOM(r);
				}
			}
		}
		r->stacks[i] = op_data_stack(d, locs, ps->n_location_indices);
		free(locs);
		if (r->stacks[i] == NONE)
			return OOM(r);
	}
	for (i = 1; i < dc->n_link_table; i++) {
		const Opentelemetry__Proto__Profiles__V1development__Link *pl = dc->link_table[i];
		struct op_dlink l;

		memset(&l, 0, sizeof(l));
		if ((pl->trace_id.len && pl->trace_id.len != 16) ||
		    (pl->span_id.len && pl->span_id.len != 8))
			return FAIL(r,
				    "link %zu has a %zu-byte trace id and a %zu-byte span id "
				    "(16 and 8 expected)",
				    i, pl->trace_id.len, pl->span_id.len);
		if (pl->trace_id.len)
			memcpy(l.trace_id, pl->trace_id.data, 16);
		if (pl->span_id.len)
			memcpy(l.span_id, pl->span_id.data, 8);
		if ((r->links[i] = op_data_link(d, &l)) == NONE)
			return OOM(r);
	}
	return 0;
}

/* The resource's attributes as a set. */
static uint32_t resource_set(struct otlp_rd *r,
			     const Opentelemetry__Proto__Resource__V1__Resource *res)
{
	uint32_t *attrs, set;
	size_t n = 0, i;

	if (!res || !res->n_attributes)
		return 0;
	attrs = malloc(res->n_attributes * sizeof(*attrs));
	if (!attrs)
		return NONE;
	for (i = 0; i < res->n_attributes; i++) {
		const PbKeyValue *kv = res->attributes[i];
		uint32_t key, a;

		if (kv->key && kv->key[0]) {
			key = op_data_str(r->d, kv->key);
		} else {
			if (bad_index(r, kv->key_strindex, r->dict->n_string_table,
				      "a resource attribute key", "string_table")) {
				free(attrs);
				return NONE - 1;
			}
			key = r->strs[kv->key_strindex];
		}
		if (key == NONE) {
			free(attrs);
			return NONE;
		}
		if (!key)
			continue;
		a = any_attr(r, key, 0, kv->value);
		if (a == NONE || a == NONE - 1) {
			free(attrs);
			return a;
		}
		if (a)
			attrs[n++] = a;
	}
	set = op_data_set(r->d, attrs, n);
	free(attrs);
	return set;
}

static int read_profile(struct otlp_rd *r, const PbProfile *p, uint32_t res, size_t pi)
{
	const PbDictionary *dc = r->dict;
	struct op_data *d = r->d;
	uint32_t type, *attrs = NULL;
	size_t cap = 0, i, j;
	int rc = -1;

	if (!p->sample_type)
		return p->n_samples ? FAIL(r, "profile %zu has samples but no sample type", pi) : 0;
	if (bad_index(r, p->sample_type->type_strindex, dc->n_string_table, "a sample type",
		      "string_table") ||
	    bad_index(r, p->sample_type->unit_strindex, dc->n_string_table, "a sample unit",
		      "string_table"))
		return -1;
	type = op_data_type(d, dc->string_table[p->sample_type->type_strindex],
			    dc->string_table[p->sample_type->unit_strindex]);
	if (type == NONE)
		return op_errf(r->err, r->errlen, "%smore than %d sample types, or out of memory",
			       r->where, OP_DATA_MAX_TYPES);
	if (p->period_type && !d->period_type.type) {
		if (bad_index(r, p->period_type->type_strindex, dc->n_string_table,
			      "the period type", "string_table") ||
		    bad_index(r, p->period_type->unit_strindex, dc->n_string_table,
			      "the period unit", "string_table"))
			return -1;
		d->period_type.type = r->strs[p->period_type->type_strindex];
		d->period_type.unit = r->strs[p->period_type->unit_strindex];
	}
	if (!d->period)
		d->period = p->period;
	if (p->time_unix_nano) {
		uint64_t end = d->time_ns + d->duration_ns,
			 pend = p->time_unix_nano + p->duration_nano;

		if (!d->time_ns || p->time_unix_nano < d->time_ns)
			d->time_ns = p->time_unix_nano;
		if (pend > end)
			end = pend;
		d->duration_ns = end > d->time_ns ? end - d->time_ns : 0;
	}
	for (i = 0; i < p->n_samples; i++) {
		const PbSample *ps = p->samples[i];
		struct op_dsample s = { .resource = res };
		int64_t v = 0;

		if (bad_index(r, ps->stack_index, dc->n_stack_table, "a sample", "stack_table") ||
		    bad_index(r, ps->link_index, dc->n_link_table, "a sample", "link_table"))
			goto out;
		s.stack = r->stacks[ps->stack_index];
		s.link = r->links[ps->link_index];
		if (ps->n_attribute_indices > cap) {
			free(attrs);
			cap = ps->n_attribute_indices * 2;
			attrs = malloc(cap * sizeof(*attrs));
			if (!attrs) {
				OOM(r);
				goto out;
			}
		}
		for (j = 0; j < ps->n_attribute_indices; j++) {
			if (bad_index(r, ps->attribute_indices[j], dc->n_attribute_table,
				      "a sample attribute", "attribute_table"))
				goto out;
			attrs[j] = r->attrs[ps->attribute_indices[j]];
		}
		if ((s.attrs = op_data_set(d, attrs, ps->n_attribute_indices)) == NONE) {
			OOM(r);
			goto out;
		}
		if (ps->n_values && ps->n_timestamps_unix_nano &&
		    ps->n_values != ps->n_timestamps_unix_nano) {
			FAIL(r,
			     "sample %zu of profile %zu has %zu values and %zu timestamps (equal "
			     "counts expected, or one of them empty)",
			     i, pi, ps->n_values, ps->n_timestamps_unix_nano);
			goto out;
		}
		if (!ps->n_values)
			v = (int64_t)ps->n_timestamps_unix_nano;
		for (j = 0; j < ps->n_values; j++)
			if (__builtin_add_overflow(v, ps->values[j], &v))
				v = INT64_MAX;
		if (op_data_add(d, &s, type, v, ps->timestamps_unix_nano,
				ps->n_timestamps_unix_nano) == NONE) {
			OOM(r);
			goto out;
		}
	}
	rc = 0;
out:
	free(attrs);
	return rc;
}

int op_import_otlp(struct op_data *d, const OpOtlpRequest *req, const char *where, char *err,
		   size_t errlen)
{
	static const PbDictionary empty =
		OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__PROFILES_DICTIONARY__INIT;
	struct otlp_rd r = { .d = d, .where = where, .err = err, .errlen = errlen };
	size_t i, j, k, pi = 0;
	int rc = -1;

	r.dict = req->dictionary ? req->dictionary : &empty;
	if (read_dictionary(&r))
		goto out;
	for (i = 0; i < req->n_resource_profiles; i++) {
		const Opentelemetry__Proto__Profiles__V1development__ResourceProfiles *rp =
			req->resource_profiles[i];
		uint32_t res = resource_set(&r, rp->resource);

		if (res == NONE) {
			OOM(&r);
			goto out;
		}
		if (res == NONE - 1)
			goto out;
		for (j = 0; j < rp->n_scope_profiles; j++) {
			const Opentelemetry__Proto__Profiles__V1development__ScopeProfiles *sp =
				rp->scope_profiles[j];

			if (sp->scope && !d->scope_name && sp->scope->name && sp->scope->name[0]) {
				d->scope_name = op_data_str(d, sp->scope->name);
				d->scope_version = op_data_str(d, sp->scope->version);
				if (d->scope_name == NONE || d->scope_version == NONE) {
					d->scope_name = d->scope_version = 0;
					OOM(&r);
					goto out;
				}
			}
			for (k = 0; k < sp->n_profiles; k++)
				if (read_profile(&r, sp->profiles[k], res, pi++))
					goto out;
		}
	}
	rc = 0;
out:
	free(r.strs);
	free(r.attrs);
	free(r.maps);
	free(r.funcs);
	free(r.locs);
	free(r.stacks);
	free(r.links);
	return rc;
}

int op_read_otlp(struct op_data *d, const uint8_t *buf, size_t len, char *err, size_t errlen)
{
	struct op_arena arena = { 0 };
	ProtobufCAllocator al = op_arena_allocator(&arena);
	OpOtlpRequest *req;
	int rc;

	req = opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__unpack(
		&al, len, buf);
	if (!req) {
		rc = op_errf(err, errlen,
			     arena.full
				     ? "out of memory decoding the OTLP request"
				     : "corrupt OTLP: protobuf decoding failed (truncated, or not "
				       "an ExportProfilesServiceRequest)");
	} else {
		rc = op_import_otlp(d, req, "", err, errlen);
	}
	op_arena_free(&arena);
	return rc;
}

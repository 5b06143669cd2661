// SPDX-License-Identifier: Apache-2.0
/*
 * OTLP profiles encoder: a serialized ExportProfilesServiceRequest (profiles v1development)
 * built with protobuf-c from the proto/opentelemetry/ files, laid out as the pinned pdata
 * (pdata v1.70.0, pprofile v0.164.0) decodes it.
 *
 * Shape: one ProfilesDictionary shared by everything; one ResourceProfiles per process, one
 * ScopeProfiles in each (this library's name and version), and in that one Profile per kind
 * of sample the process has: CPU (samples/count, period cpu/nanoseconds) and off-CPU
 * (off_cpu/nanoseconds, one value per event beside its timestamp, as the upstream profiler
 * writes it). Dictionary
 * tables hold only what is referenced, each entry once, with the zero entry at index 0.
 *
 * Attribute values in the dictionary's attribute_table are plain string_value/int_value:
 * pdata resolves string_value_strindex only in resource and scope attributes, so a strindex
 * value in the table would reach consumers as an empty value. Resource and scope attributes
 * use plain keys and values, which pdata's ProtoUnmarshaler and ExportRequest.UnmarshalProto
 * both take as they are, and so does any consumer that ignores the *_strindex fields.
 *
 * Samples carry one timestamp per event and no values, as the upstream eBPF profiler sends
 * CPU samples; a sample with an event lacking its timestamp carries values = [count] instead.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "util/log.h"
#include "opentelemetry/profiles_service.pb-c.h"
#include "otelprof.h"
#include "profile/profile_internal.h"

typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest
	PbRequest;
typedef Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary PbDictionary;
typedef Opentelemetry__Proto__Profiles__V1development__ResourceProfiles PbResourceProfiles;
typedef Opentelemetry__Proto__Profiles__V1development__ScopeProfiles PbScopeProfiles;
typedef Opentelemetry__Proto__Profiles__V1development__Profile PbProfile;
typedef Opentelemetry__Proto__Profiles__V1development__Link PbLink;
typedef Opentelemetry__Proto__Profiles__V1development__ValueType PbValueType;
typedef Opentelemetry__Proto__Profiles__V1development__Sample PbSample;
typedef Opentelemetry__Proto__Profiles__V1development__Mapping PbMapping;
typedef Opentelemetry__Proto__Profiles__V1development__Stack PbStack;
typedef Opentelemetry__Proto__Profiles__V1development__Location PbLocation;
typedef Opentelemetry__Proto__Profiles__V1development__Line PbLine;
typedef Opentelemetry__Proto__Profiles__V1development__Function PbFunction;
typedef Opentelemetry__Proto__Profiles__V1development__KeyValueAndUnit PbKeyValueAndUnit;
typedef Opentelemetry__Proto__Common__V1__AnyValue PbAnyValue;
typedef Opentelemetry__Proto__Common__V1__KeyValue PbKeyValue;
typedef Opentelemetry__Proto__Common__V1__InstrumentationScope PbScope;
typedef Opentelemetry__Proto__Resource__V1__Resource PbResource;

#define PB(name)   opentelemetry__proto__profiles__v1development__##name
#define ANY_STRING OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE
#define ANY_INT	   OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE

/* process.pid, .executable.name, .executable.path, container.id, and the process's own */
#define RES_ATTRS      (4 + OP_PROCESS_MAX_RESOURCE)
#define PROFILE_ID_LEN 16

/* One array of messages plus the array of pointers protobuf-c wants for a repeated field. */
#define TABLE(type, name) \
	type *name;       \
	type **name##_ptrs

struct otlp_enc {
	const struct op_profile *p;
	struct op_grouped g;
	struct op_remap stacks, locs, maps, funcs, attrs, strs, links;

	PbRequest req;
	PbDictionary dict;
	TABLE(PbMapping, mappings);
	TABLE(PbLocation, locations);
	TABLE(PbLine, lines);
	TABLE(PbFunction, functions);
	TABLE(PbStack, stack_tab);
	TABLE(PbKeyValueAndUnit, attr_tab);
	PbAnyValue *attr_values;
	TABLE(PbLink, link_tab);
	char **strings;
	int32_t *ints; /* every int32 index list, back to back */
	size_t n_ints, cap_ints;

	/* per process */
	TABLE(PbResourceProfiles, rps);
	PbResource *resources;
	PbKeyValue *res_kvs;
	PbKeyValue **res_kv_ptrs;
	PbAnyValue *res_values;
	PbScopeProfiles *sps;
	PbScopeProfiles **sp_ptrs;
	PbScope scope;
	PbProfile *profiles;
	PbProfile **profile_ptrs;
	uint8_t *profile_ids;
	/* samples/count, cpu/nanoseconds (period), then vt[1 + kind] for the other kinds */
	PbValueType vt[1 + OP_SAMPLE_KINDS];

	TABLE(PbSample, samples);
	int64_t *counts;
};

static void enc_free(struct otlp_enc *e)
{
	op_grouped_free(&e->g);
	op_remap_free(&e->stacks);
	op_remap_free(&e->locs);
	op_remap_free(&e->maps);
	op_remap_free(&e->funcs);
	op_remap_free(&e->attrs);
	op_remap_free(&e->strs);
	op_remap_free(&e->links);
	free(e->link_tab);
	free(e->link_tab_ptrs);
	free(e->mappings);
	free(e->mappings_ptrs);
	free(e->locations);
	free(e->locations_ptrs);
	free(e->lines);
	free(e->lines_ptrs);
	free(e->functions);
	free(e->functions_ptrs);
	free(e->stack_tab);
	free(e->stack_tab_ptrs);
	free(e->attr_tab);
	free(e->attr_tab_ptrs);
	free(e->attr_values);
	free(e->strings);
	free(e->ints);
	free(e->rps);
	free(e->rps_ptrs);
	free(e->resources);
	free(e->res_kvs);
	free(e->res_kv_ptrs);
	free(e->res_values);
	free(e->sps);
	free(e->sp_ptrs);
	free(e->profiles);
	free(e->profile_ptrs);
	free(e->profile_ids);
	free(e->samples);
	free(e->samples_ptrs);
	free(e->counts);
}

static int alloc_table(void **arr, void ***ptrs, size_t n, size_t elsz)
{
	*arr = calloc(n ? n : 1, elsz);
	*ptrs = calloc(n ? n : 1, sizeof(void *));
	if (!*arr || !*ptrs)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		(*ptrs)[i] = (char *)*arr + i * elsz;
	return 0;
}

#define ALLOC_TABLE(e, name, n) \
	alloc_table((void **)&(e)->name, (void ***)&(e)->name##_ptrs, (n), sizeof(*(e)->name))

/* Room for @n more int32 indices; returns where they go. All are counted up front. */
static int32_t *ints(struct otlp_enc *e, size_t n)
{
	int32_t *r = &e->ints[e->n_ints];

	e->n_ints += n;
	return r;
}

static void random_id(uint8_t *id)
{
	static uint64_t fallback;
	size_t i;

	if (getrandom(id, PROFILE_ID_LEN, GRND_NONBLOCK) == PROFILE_ID_LEN)
		return;
	/* no entropy yet (early boot): unique is what matters here, not unpredictable */
	for (i = 0; i < PROFILE_ID_LEN; i++) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		fallback = fallback * 6364136223846793005ull + (uint64_t)ts.tv_nsec + i;
		id[i] = (uint8_t)(fallback >> 33);
	}
}

/* Walk everything the samples reach and assign output indices on first use. */
static void assign(struct otlp_enc *e)
{
	const struct op_profile *p = e->p;
	uint32_t i, j;

	/* the value types are referenced by the profiles: only when there is one */
	for (i = OP_WK_SAMPLES; p->n_samples > 1 && i <= OP_WK_NANOSECONDS; i++)
		op_remap_use(&e->strs, p->wk[i]);
	for (i = 1; i < p->n_samples; i++) {
		uint32_t type, unit;

		if (p->samples[i].kind == OP_SAMPLE_CPU)
			continue;
		op_kind_type(p, p->samples[i].kind, &type, &unit);
		op_remap_use(&e->strs, type);
		op_remap_use(&e->strs, unit);
	}
	for (i = 0; i < p->n_samples - 1; i++) {
		const struct op_psample *s = &p->samples[e->g.order[i]];

		op_remap_use(&e->stacks, s->stack);
		for (j = 0; j < OP_SAMPLE_ATTRS; j++)
			op_remap_use(&e->attrs, s->attrs[j]);
		for (j = 0; j < p->sets[s->labels].n; j++)
			op_remap_use(&e->attrs, p->set_attrs[p->sets[s->labels].first + j]);
		op_remap_use(&e->links, s->link);
	}
	for (i = 1; i < e->stacks.n; i++) {
		const struct op_stack *st = &p->stacks[e->stacks.order[i]];

		for (j = 0; j < st->n; j++)
			op_remap_use(&e->locs, p->stack_locs[st->first + j]);
	}
	for (i = 1; i < e->locs.n; i++) {
		const struct op_location *l = &p->locations[e->locs.order[i]];

		op_remap_use(&e->maps, l->mapping);
		for (j = 0; j < l->n_lines; j++)
			op_remap_use(&e->funcs, p->lines[l->first_line + j].function);
		op_remap_use(&e->attrs, l->attr);
	}
	for (i = 1; i < e->maps.n; i++) {
		const struct op_mapping *m = &p->mappings[e->maps.order[i]];

		op_remap_use(&e->strs, m->filename);
		for (j = 0; j < m->n_attrs; j++)
			op_remap_use(&e->attrs, m->attrs[j]);
	}
	for (i = 1; i < e->funcs.n; i++) {
		const struct op_function *f = &p->functions[e->funcs.order[i]];

		op_remap_use(&e->strs, f->name);
		op_remap_use(&e->strs, f->system_name);
		op_remap_use(&e->strs, f->filename);
	}
	/* attribute keys are string indices; values travel as plain strings or integers */
	for (i = 1; i < e->attrs.n; i++)
		op_remap_use(&e->strs, p->attrs[e->attrs.order[i]].key);
}

static int build_dictionary(struct otlp_enc *e)
{
	const struct op_profile *p = e->p;
	size_t n_lines = 0, n_ints = 0;
	uint32_t i, j, li = 0;

	for (i = 1; i < e->locs.n; i++)
		n_lines += p->locations[e->locs.order[i]].n_lines;
	for (i = 1; i < e->stacks.n; i++)
		n_ints += p->stacks[e->stacks.order[i]].n;
	n_ints += (size_t)e->locs.n + (size_t)e->maps.n * OP_MAPPING_MAX_ATTRS +
		  (size_t)p->n_samples * OP_SAMPLE_ATTRS;
	for (i = 1; i < p->n_samples; i++)
		n_ints += p->sets[p->samples[i].labels].n;
	e->ints = calloc(n_ints + 1, sizeof(*e->ints));
	e->cap_ints = n_ints;
	e->attr_values = calloc(e->attrs.n, sizeof(*e->attr_values));
	e->strings = calloc(e->strs.n, sizeof(*e->strings));
	if (!e->ints || !e->attr_values || !e->strings || ALLOC_TABLE(e, mappings, e->maps.n) ||
	    ALLOC_TABLE(e, locations, e->locs.n) || ALLOC_TABLE(e, lines, n_lines) ||
	    ALLOC_TABLE(e, functions, e->funcs.n) || ALLOC_TABLE(e, stack_tab, e->stacks.n) ||
	    ALLOC_TABLE(e, attr_tab, e->attrs.n) || ALLOC_TABLE(e, link_tab, e->links.n))
		return -ENOMEM;

	/* element 0 of every table is the zero value (an empty message) */
	for (i = 0; i < e->maps.n; i++) {
		PbMapping *m = &e->mappings[i];
		const struct op_mapping *src = &p->mappings[e->maps.order[i]];

		PB(mapping__init)(m);
		if (!i)
			continue;
		m->memory_start = src->memory_start;
		m->memory_limit = src->memory_limit;
		m->file_offset = src->file_offset;
		m->filename_strindex = e->strs.map[src->filename];
		m->n_attribute_indices = src->n_attrs;
		m->attribute_indices = ints(e, src->n_attrs);
		for (j = 0; j < src->n_attrs; j++)
			m->attribute_indices[j] = e->attrs.map[src->attrs[j]];
	}
	for (i = 0; i < e->locs.n; i++) {
		PbLocation *l = &e->locations[i];
		const struct op_location *src = &p->locations[e->locs.order[i]];

		PB(location__init)(l);
		if (!i)
			continue;
		l->mapping_index = e->maps.map[src->mapping];
		l->address = src->address;
		l->n_lines = src->n_lines;
		l->lines = &e->lines_ptrs[li];
		for (j = 0; j < src->n_lines; j++) {
			const struct op_line *ln = &p->lines[src->first_line + j];
			PbLine *pl = &e->lines[li++];

			PB(line__init)(pl);
			pl->function_index = e->funcs.map[ln->function];
			pl->line = ln->line;
			pl->column = ln->column;
		}
		l->n_attribute_indices = 1;
		l->attribute_indices = ints(e, 1);
		l->attribute_indices[0] = e->attrs.map[src->attr];
	}
	for (i = 0; i < e->funcs.n; i++) {
		PbFunction *f = &e->functions[i];
		const struct op_function *src = &p->functions[e->funcs.order[i]];

		PB(function__init)(f);
		if (!i)
			continue;
		f->name_strindex = e->strs.map[src->name];
		f->system_name_strindex = e->strs.map[src->system_name];
		f->filename_strindex = e->strs.map[src->filename];
		f->start_line = src->start_line;
	}
	for (i = 0; i < e->stacks.n; i++) {
		PbStack *s = &e->stack_tab[i];
		const struct op_stack *src = &p->stacks[e->stacks.order[i]];

		PB(stack__init)(s);
		if (!i)
			continue;
		s->n_location_indices = src->n;
		s->location_indices = ints(e, src->n);
		for (j = 0; j < src->n; j++)
			s->location_indices[j] = e->locs.map[p->stack_locs[src->first + j]];
	}
	for (i = 0; i < e->attrs.n; i++) {
		PbKeyValueAndUnit *kv = &e->attr_tab[i];
		const struct op_attr *src = &p->attrs[e->attrs.order[i]];
		PbAnyValue *v = &e->attr_values[i];

		PB(key_value_and_unit__init)(kv);
		if (!i)
			continue;
		opentelemetry__proto__common__v1__any_value__init(v);
		kv->key_strindex = e->strs.map[src->key];
		kv->value = v;
		if (src->kind == OP_ATTR_STR) {
			v->value_case = ANY_STRING;
			v->string_value = (char *)p->strs[src->str].s;
		} else {
			v->value_case = ANY_INT;
			v->int_value = src->num;
		}
	}
	for (i = 0; i < e->strs.n; i++)
		e->strings[i] = (char *)p->strs[e->strs.order[i]].s;
	/*
	 * The zero attribute carries an empty value, as pdata writes it. (pdata also writes the
	 * zero link's two empty byte fields, which proto3 protobuf-c cannot: 4 bytes.)
	 */
	for (i = 0; i < e->links.n; i++) {
		PbLink *l = &e->link_tab[i];
		const struct op_link *src = &p->links[e->links.order[i]];

		PB(link__init)(l);
		if (!i)
			continue;
		l->trace_id.data = (uint8_t *)src->trace_id;
		l->trace_id.len = sizeof(src->trace_id);
		l->span_id.data = (uint8_t *)src->span_id;
		l->span_id.len = sizeof(src->span_id);
	}
	opentelemetry__proto__common__v1__any_value__init(&e->attr_values[0]);
	e->attr_tab[0].value = &e->attr_values[0];

	PB(profiles_dictionary__init)(&e->dict);
	e->dict.n_mapping_table = e->maps.n;
	e->dict.mapping_table = e->mappings_ptrs;
	e->dict.n_location_table = e->locs.n;
	e->dict.location_table = e->locations_ptrs;
	e->dict.n_function_table = e->funcs.n;
	e->dict.function_table = e->functions_ptrs;
	e->dict.n_link_table = e->links.n;
	e->dict.link_table = e->link_tab_ptrs;
	e->dict.n_string_table = e->strs.n;
	e->dict.string_table = e->strings;
	e->dict.n_attribute_table = e->attrs.n;
	e->dict.attribute_table = e->attr_tab_ptrs;
	e->dict.n_stack_table = e->stacks.n;
	e->dict.stack_table = e->stack_tab_ptrs;
	return 0;
}

static void res_attr(PbKeyValue *kv, PbAnyValue *v, const char *key)
{
	opentelemetry__proto__common__v1__key_value__init(kv);
	opentelemetry__proto__common__v1__any_value__init(v);
	kv->key = (char *)key;
	kv->value = v;
}

/* Sample @sidx of the profile into @ps. */
static void build_sample(struct otlp_enc *e, PbSample *ps, uint32_t sidx)
{
	const struct op_profile *p = e->p;
	const struct op_psample *s = &p->samples[sidx];
	const struct op_attrset *ls = &p->sets[s->labels];
	uint32_t t0 = e->g.ts_off[sidx], t1 = e->g.ts_off[sidx + 1], t, a;
	bool all_ts = true;

	PB(sample__init)(ps);
	ps->stack_index = e->stacks.map[s->stack];
	ps->attribute_indices = ints(e, OP_SAMPLE_ATTRS + ls->n);
	for (a = 0; a < OP_SAMPLE_ATTRS && s->attrs[a]; a++)
		ps->attribute_indices[a] = e->attrs.map[s->attrs[a]];
	for (t = 0; t < ls->n; t++)
		ps->attribute_indices[a++] = e->attrs.map[p->set_attrs[ls->first + t]];
	ps->n_attribute_indices = a;
	ps->link_index = e->links.map[s->link];
	for (t = t0; t < t1; t++)
		all_ts &= e->g.ts[t] != 0;
	if (s->kind != OP_SAMPLE_CPU) {
		/* one value per event, beside its timestamp (the upstream profiler's off-CPU) */
		if (all_ts) {
			ps->n_timestamps_unix_nano = t1 - t0;
			ps->timestamps_unix_nano = &e->g.ts[t0];
			ps->n_values = t1 - t0;
			ps->values = &e->g.val[t0];
		} else {
			e->counts[sidx] = s->value;
			ps->n_values = 1;
			ps->values = &e->counts[sidx];
		}
	} else if (all_ts) {
		ps->n_timestamps_unix_nano = t1 - t0;
		ps->timestamps_unix_nano = &e->g.ts[t0];
	} else {
		e->counts[sidx] = s->count;
		ps->n_values = 1;
		ps->values = &e->counts[sidx];
	}
}

static int build_resources(struct otlp_enc *e)
{
	const struct op_profile *p = e->p;
	uint32_t n_proc = 0, i, j, k, si = 0, np = 0, sp_first, kind;
	uint64_t duration = op_profile_duration(p);

	for (i = 1; i < p->n_processes; i++)
		n_proc += e->g.proc_n[i] > 0;
	e->resources = calloc(n_proc + 1, sizeof(*e->resources));
	e->res_kvs = calloc((size_t)n_proc * RES_ATTRS + 1, sizeof(*e->res_kvs));
	e->res_kv_ptrs = calloc((size_t)n_proc * RES_ATTRS + 1, sizeof(*e->res_kv_ptrs));
	e->res_values = calloc((size_t)n_proc * RES_ATTRS + 1, sizeof(*e->res_values));
	e->sps = calloc(n_proc + 1, sizeof(*e->sps));
	e->sp_ptrs = calloc(n_proc + 1, sizeof(*e->sp_ptrs));
	e->profiles = calloc((size_t)n_proc * OP_SAMPLE_KINDS + 1, sizeof(*e->profiles));
	e->profile_ptrs = calloc((size_t)n_proc * OP_SAMPLE_KINDS + 1, sizeof(*e->profile_ptrs));
	e->profile_ids = calloc((size_t)n_proc * OP_SAMPLE_KINDS + 1, PROFILE_ID_LEN);
	e->counts = calloc(p->n_samples, sizeof(*e->counts));
	if (!e->resources || !e->res_kvs || !e->res_kv_ptrs || !e->res_values || !e->sps ||
	    !e->sp_ptrs || !e->profiles || !e->profile_ptrs || !e->profile_ids || !e->counts ||
	    ALLOC_TABLE(e, rps, n_proc) || ALLOC_TABLE(e, samples, p->n_samples - 1))
		return -ENOMEM;

	opentelemetry__proto__common__v1__instrumentation_scope__init(&e->scope);
	e->scope.name = p->scope_name;
	e->scope.version = p->scope_version;
	PB(value_type__init)(&e->vt[0]);
	PB(value_type__init)(&e->vt[1]);
	for (kind = OP_SAMPLE_OFF_CPU; kind < OP_SAMPLE_KINDS; kind++) {
		uint32_t type, unit;

		PB(value_type__init)(&e->vt[1 + kind]);
		op_kind_type(p, kind, &type, &unit);
		/* strings no sample used are not in the table (map 0): the type is unused too */
		e->vt[1 + kind].type_strindex = e->strs.map[type];
		e->vt[1 + kind].unit_strindex = e->strs.map[unit];
	}
	e->vt[0].type_strindex = e->strs.map[p->wk[OP_WK_SAMPLES]];
	e->vt[0].unit_strindex = e->strs.map[p->wk[OP_WK_COUNT]];
	e->vt[1].type_strindex = e->strs.map[p->wk[OP_WK_CPU]];
	e->vt[1].unit_strindex = e->strs.map[p->wk[OP_WK_NANOSECONDS]];

	for (k = 0, i = 1; i < p->n_processes; i++) {
		const struct op_process *pr = &p->processes[i];
		PbResourceProfiles *rp;
		PbResource *res;
		PbScopeProfiles *sp;
		PbProfile *prof;
		PbKeyValue *kv;
		PbAnyValue *v;
		size_t na = 0;

		if (!e->g.proc_n[i])
			continue;
		rp = &e->rps[k];
		res = &e->resources[k];
		sp = &e->sps[k];
		kv = &e->res_kvs[(size_t)k * RES_ATTRS];
		v = &e->res_values[(size_t)k * RES_ATTRS];

		res_attr(&kv[na], &v[na], "process.pid");
		v[na].value_case = ANY_INT;
		v[na++].int_value = pr->pid;
		if (pr->exe_name) {
			res_attr(&kv[na], &v[na], "process.executable.name");
			v[na].value_case = ANY_STRING;
			v[na++].string_value = (char *)p->strs[pr->exe_name].s;
		}
		if (pr->exe_path) {
			res_attr(&kv[na], &v[na], "process.executable.path");
			v[na].value_case = ANY_STRING;
			v[na++].string_value = (char *)p->strs[pr->exe_path].s;
		}
		if (pr->container_id) {
			res_attr(&kv[na], &v[na], "container.id");
			v[na].value_case = ANY_STRING;
			v[na++].string_value = (char *)p->strs[pr->container_id].s;
		}
		for (j = 0; j < p->sets[pr->resource].n && na < RES_ATTRS; j++) {
			const struct op_attr *ra =
				&p->attrs[p->set_attrs[p->sets[pr->resource].first + j]];

			res_attr(&kv[na], &v[na], p->strs[ra->key].s);
			v[na].value_case = ANY_STRING;
			v[na++].string_value = (char *)p->strs[ra->str].s;
		}
		for (j = 0; j < na; j++)
			e->res_kv_ptrs[(size_t)k * RES_ATTRS + j] = &kv[j];
		opentelemetry__proto__resource__v1__resource__init(res);
		res->n_attributes = na;
		res->attributes = &e->res_kv_ptrs[(size_t)k * RES_ATTRS];

		sp_first = np;
		for (kind = 0; kind < OP_SAMPLE_KINDS; kind++) {
			uint32_t pk = i * OP_SAMPLE_KINDS + kind, first = e->g.pk_first[pk];

			if (!e->g.pk_n[pk])
				continue;
			prof = &e->profiles[np];
			PB(profile__init)(prof);
			if (kind != OP_SAMPLE_CPU) {
				/* as the upstream profiler's off-CPU profile: values, no period */
				prof->sample_type = &e->vt[1 + kind];
			} else {
				prof->sample_type = &e->vt[0];
				prof->period_type = &e->vt[1];
				prof->period = (int64_t)p->opts.period_ns;
			}
			prof->time_unix_nano = p->opts.start_ns;
			prof->duration_nano = duration;
			random_id(&e->profile_ids[(size_t)np * PROFILE_ID_LEN]);
			prof->profile_id.data = &e->profile_ids[(size_t)np * PROFILE_ID_LEN];
			prof->profile_id.len = PROFILE_ID_LEN;
			prof->n_samples = e->g.pk_n[pk];
			prof->samples = &e->samples_ptrs[si];
			for (j = 0; j < e->g.pk_n[pk]; j++, si++)
				build_sample(e, &e->samples[si], e->g.order[first + j]);
			e->profile_ptrs[np++] = prof;
		}

		PB(scope_profiles__init)(sp);
		sp->scope = &e->scope;
		sp->n_profiles = np - sp_first;
		sp->profiles = &e->profile_ptrs[sp_first];
		e->sp_ptrs[k] = sp;

		PB(resource_profiles__init)(rp);
		rp->resource = res;
		rp->n_scope_profiles = 1;
		rp->scope_profiles = &e->sp_ptrs[k];
		k++;
	}

	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__init(
		&e->req);
	e->req.n_resource_profiles = k;
	e->req.resource_profiles = e->rps_ptrs;
	e->req.dictionary = &e->dict;
	return 0;
}

int op_encode_otlp(const struct op_profile *p, uint8_t **out, size_t *len)
{
	struct otlp_enc e;
	uint8_t *buf = NULL;
	size_t n;
	int err;

	if (!p || !out || !len)
		return -EINVAL;
	memset(&e, 0, sizeof(e));
	e.p = p;
	err = op_profile_group(p, &e.g);
	if (err)
		goto out;
	if (op_remap_init(&e.stacks, p->n_stacks) || op_remap_init(&e.locs, p->n_locations) ||
	    op_remap_init(&e.maps, p->n_mappings) || op_remap_init(&e.funcs, p->n_functions) ||
	    op_remap_init(&e.attrs, p->n_attrs) || op_remap_init(&e.strs, p->n_strs) ||
	    op_remap_init(&e.links, p->n_links)) {
		err = -ENOMEM;
		goto out;
	}
	assign(&e);
	err = build_dictionary(&e);
	if (!err)
		err = build_resources(&e);
	if (err)
		goto out;
	if (e.n_ints > e.cap_ints) {
		op_err("cannot encode the OTLP profile: index space miscounted (a bug)");
		err = -OTELPROF_ERR_ENCODE;
		goto out;
	}
	n = opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__get_packed_size(
		&e.req);
	buf = malloc(n ? n : 1);
	if (!buf) {
		err = -ENOMEM;
		goto out;
	}
	if (opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__pack(
		    &e.req, buf) != n) {
		op_err("cannot encode the OTLP profile: packed size mismatch");
		err = -OTELPROF_ERR_ENCODE;
		goto out;
	}
	*out = buf;
	*len = n;
	buf = NULL;
out:
	if (err == -ENOMEM)
		op_err("cannot encode the OTLP profile: out of memory");
	free(buf);
	enc_free(&e);
	return err;
}

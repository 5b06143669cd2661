// SPDX-License-Identifier: Apache-2.0
/*
 * OTLP writer of a decoded profile (write.h): an ExportProfilesServiceRequest laid out as
 * our encoder (profile/otlp.c) lays it out, which the pinned pdata decodes: one dictionary
 * holding only what is referenced, zero entries first; one ResourceProfiles per resource
 * (process), one ScopeProfiles in it, one Profile per sample type (the derived cpu/nanoseconds
 * column of a pprof CPU profile is dropped: period_type and period say it). Resource
 * attributes have plain keys and values; a sample whose timestamps number its value carries
 * the timestamps only, as the upstream eBPF profiler's CPU samples do.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "profile/read_internal.h"
#include "profile/write.h"

#define PB(name) opentelemetry__proto__profiles__v1development__##name
#define V(x)	 OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_##x

typedef Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary PbDictionary;
typedef Opentelemetry__Proto__Profiles__V1development__ResourceProfiles PbResourceProfiles;
typedef Opentelemetry__Proto__Profiles__V1development__ScopeProfiles PbScopeProfiles;
typedef Opentelemetry__Proto__Profiles__V1development__Profile PbProfile;
typedef Opentelemetry__Proto__Profiles__V1development__Sample PbSample;
typedef Opentelemetry__Proto__Profiles__V1development__Mapping PbMapping;
typedef Opentelemetry__Proto__Profiles__V1development__Location PbLocation;
typedef Opentelemetry__Proto__Profiles__V1development__Line PbLine;
typedef Opentelemetry__Proto__Profiles__V1development__Function PbFunction;
typedef Opentelemetry__Proto__Profiles__V1development__Stack PbStack;
typedef Opentelemetry__Proto__Profiles__V1development__Link PbLink;
typedef Opentelemetry__Proto__Profiles__V1development__KeyValueAndUnit PbKeyValueAndUnit;
typedef Opentelemetry__Proto__Profiles__V1development__ValueType PbValueType;
typedef Opentelemetry__Proto__Common__V1__AnyValue PbAnyValue;
typedef Opentelemetry__Proto__Common__V1__KeyValue PbKeyValue;
typedef Opentelemetry__Proto__Common__V1__InstrumentationScope PbScope;
typedef Opentelemetry__Proto__Resource__V1__Resource PbResource;

struct ow {
	struct op_data *d; /* strings for frame types and build id keys are added */
	struct op_arena a;
	struct op_wmap strs, attrs, maps, funcs, locs, stacks, links;
	bool oom;
};

static void *A(struct ow *w, size_t n)
{
	void *p = op_arena_alloc(&w->a, n ? n : 1);

	if (!p)
		w->oom = true;
	else
		memset(p, 0, n ? n : 1);
	return p;
}

static void any_value(PbAnyValue *v, const struct op_data *d, const struct op_dattr *a)
{
	opentelemetry__proto__common__v1__any_value__init(v);
	switch (a->kind) {
	case OP_DVAL_STR:
		v->value_case = V(STRING_VALUE);
		v->string_value = (char *)op_data_s(d, a->str);
		break;
	case OP_DVAL_INT:
		v->value_case = V(INT_VALUE);
		v->int_value = a->num;
		break;
	case OP_DVAL_BOOL:
		v->value_case = V(BOOL_VALUE);
		v->bool_value = a->num != 0;
		break;
	default:
		v->value_case = V(DOUBLE_VALUE);
		v->double_value = a->dbl;
		break;
	}
}

/* profile.frame.type of a location: as read, else "kernel" for the kernel's mapping. */
static uint32_t frame_type_attr(struct ow *w, const struct op_dlocation *l)
{
	uint32_t v = l->frame_type;

	if (!v) {
		const char *file = op_data_s(w->d, op_data_map(w->d, l->mapping)->filename);

		if (strncmp(file, "[kernel", 7) && strncmp(file, "[vmlinux", 8))
			return 0;
		v = op_data_str(w->d, "kernel");
	}
	{
		struct op_dattr a = { .kind = OP_DVAL_STR, .str = v };

		a.key = op_data_str(w->d, OP_KEY_FRAME_TYPE);
		if (a.key == UINT32_MAX || v == UINT32_MAX)
			return UINT32_MAX;
		return op_data_attr(w->d, &a);
	}
}

int op_write_otlp(struct op_data *d, uint8_t **out, size_t *len)
{
	struct ow w = { 0 };
	PbDictionary dict;
	OpOtlpRequest req;
	PbScope scope;
	PbValueType *period_type = NULL;
	uint32_t *res_of = NULL, *res_order = NULL, n_res = 0, *ts_off = NULL, *loc_attr = NULL;
	uint32_t *map_attr = NULL, *by_res = NULL, *res_first = NULL, types[OP_DATA_MAX_TYPES],
		 n_types = 0, i, j, t;
	uint64_t *ts = NULL;
	size_t *per_res = NULL;
	uint8_t *buf = NULL;
	int rc = -ENOMEM;

	w.d = d;
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__init(
		&req);
	PB(profiles_dictionary__init)(&dict);
	if (op_wmap_init(&w.strs, d->strs.n + 64) || op_wmap_init(&w.attrs, d->attrs.n + 64) ||
	    op_wmap_init(&w.maps, d->maps.n) || op_wmap_init(&w.funcs, d->funcs.n) ||
	    op_wmap_init(&w.locs, d->locs.n) || op_wmap_init(&w.stacks, d->stacks.n) ||
	    op_wmap_init(&w.links, d->links.n) || op_group_timestamps(d, &ts_off, &ts))
		goto out;
	for (t = 0; t < d->n_types; t++)
		if (!op_type_is_derived(d, t))
			types[n_types++] = t;

	/* resources in first-use order */
	res_of = calloc(d->sets.n + 1, sizeof(*res_of));
	res_order = calloc(d->sets.n + 1, sizeof(*res_order));
	per_res = calloc(d->sets.n + 1, sizeof(*per_res));
	if (!res_of || !res_order || !per_res)
		goto out;
	for (i = 1; i < d->samples.n; i++) {
		const struct op_dsample *s = op_data_sample(d, i);

		if (!res_of[s->resource]) {
			res_order[n_res++] = s->resource;
			res_of[s->resource] = n_res;
		}
		per_res[s->resource]++;
		op_wmap_use(&w.stacks, s->stack);
		op_wmap_use(&w.links, s->link);
	}
	/* samples grouped by resource: by_res[res_first[r] .. res_first[r + 1]) */
	by_res = malloc(d->samples.n * sizeof(*by_res));
	res_first = calloc(n_res + 1, sizeof(*res_first));
	if (!by_res || !res_first)
		goto out;
	for (i = 0; i < n_res; i++)
		res_first[i + 1] = res_first[i] + (uint32_t)per_res[res_order[i]];
	{
		uint32_t *pos = calloc(n_res + 1, sizeof(*pos));

		if (!pos)
			goto out;
		memcpy(pos, res_first, n_res * sizeof(*pos));
		for (i = 1; i < d->samples.n; i++)
			by_res[pos[res_of[op_data_sample(d, i)->resource] - 1]++] = i;
		free(pos);
	}

	/* the dictionary, walked from the stacks down */
	for (i = 1; i < w.stacks.n; i++) {
		uint32_t n;
		const uint32_t *l = op_data_list(&d->stacks, w.stacks.order[i], &n);

		for (j = 0; j < n; j++)
			op_wmap_use(&w.locs, l[j]);
	}
	loc_attr = calloc(w.locs.n + 1, sizeof(*loc_attr));
	map_attr = calloc((size_t)(d->maps.n + 1) * 3, sizeof(*map_attr));
	if (!loc_attr || !map_attr)
		goto out;
	for (i = 1; i < w.locs.n; i++) {
		uint32_t li = w.locs.order[i];

		loc_attr[i] = frame_type_attr(&w, op_data_loc(d, li));
		if (loc_attr[i] == UINT32_MAX)
			goto out;
		/* op_data_loc() again: interning may have moved the pools */
		op_wmap_use(&w.maps, op_data_loc(d, li)->mapping);
	}
	for (i = 1; i < w.maps.n; i++) {
		const struct op_dmapping m = *op_data_map(d, w.maps.order[i]);
		uint32_t ids[3] = { m.build_id_gnu, m.build_id_go, m.build_id_htlhash };
		static const char *const keys[3] = { OP_KEY_BID_GNU, OP_KEY_BID_GO,
						     OP_KEY_BID_HTL };

		for (j = 0; j < 3; j++) {
			struct op_dattr a = { .kind = OP_DVAL_STR, .str = ids[j] };

			if (!ids[j])
				continue;
			a.key = op_data_str(d, keys[j]);
			if (a.key == UINT32_MAX ||
			    (map_attr[i * 3 + j] = op_data_attr(d, &a)) == UINT32_MAX)
				goto out;
		}
	}
	/* the tables may have grown: remaps sized to them now */
	{
		struct op_wmap na, ns;

		if (op_wmap_init(&na, d->attrs.n) || op_wmap_init(&ns, d->strs.n)) {
			op_wmap_free(&na);
			goto out;
		}
		op_wmap_free(&w.attrs);
		op_wmap_free(&w.strs);
		w.attrs = na;
		w.strs = ns;
	}
	/* sample types and the period first in the string table */
	for (t = 0; t < n_types; t++) {
		op_wmap_use(&w.strs, d->types[types[t]].type);
		op_wmap_use(&w.strs, d->types[types[t]].unit);
	}
	op_wmap_use(&w.strs, d->period_type.type);
	op_wmap_use(&w.strs, d->period_type.unit);

	/* mappings */
	dict.mapping_table = A(&w, w.maps.n * sizeof(void *));
	if (!dict.mapping_table)
		goto out;
	for (i = 0; i < w.maps.n; i++) {
		const struct op_dmapping *m = op_data_map(d, w.maps.order[i]);
		PbMapping *pm = A(&w, sizeof(*pm));

		if (!pm)
			goto out;
		PB(mapping__init)(pm);
		dict.mapping_table[i] = pm;
		if (!i)
			continue;
		pm->memory_start = m->memory_start;
		pm->memory_limit = m->memory_limit;
		pm->file_offset = m->file_offset;
		pm->filename_strindex = (int32_t)op_wmap_use(&w.strs, m->filename);
		pm->attribute_indices = A(&w, 3 * sizeof(int32_t));
		if (!pm->attribute_indices)
			goto out;
		for (j = 0; j < 3; j++)
			if (map_attr[i * 3 + j])
				pm->attribute_indices[pm->n_attribute_indices++] =
					(int32_t)op_wmap_use(&w.attrs, map_attr[i * 3 + j]);
	}
	dict.n_mapping_table = w.maps.n;

	/* locations and their functions */
	dict.location_table = A(&w, w.locs.n * sizeof(void *));
	if (!dict.location_table)
		goto out;
	for (i = 0; i < w.locs.n; i++) {
		const struct op_dlocation *l = op_data_loc(d, w.locs.order[i]);
		const struct op_dline *ln = op_dloc_lines(l);
		PbLocation *pl = A(&w, sizeof(*pl));

		if (!pl)
			goto out;
		PB(location__init)(pl);
		dict.location_table[i] = pl;
		if (!i)
			continue;
		pl->mapping_index = (int32_t)w.maps.map[l->mapping];
		pl->address = l->address;
		pl->lines = A(&w, l->n_lines * sizeof(void *));
		if (!pl->lines)
			goto out;
		for (j = 0; j < l->n_lines; j++) {
			PbLine *pln = A(&w, sizeof(*pln));

			if (!pln)
				goto out;
			PB(line__init)(pln);
			pln->function_index = (int32_t)op_wmap_use(&w.funcs, ln[j].function);
			pln->line = ln[j].line;
			pln->column = ln[j].column;
			pl->lines[j] = pln;
		}
		pl->n_lines = l->n_lines;
		if (loc_attr[i]) {
			pl->attribute_indices = A(&w, sizeof(int32_t));
			if (!pl->attribute_indices)
				goto out;
			pl->attribute_indices[0] = (int32_t)op_wmap_use(&w.attrs, loc_attr[i]);
			pl->n_attribute_indices = 1;
		}
	}
	dict.n_location_table = w.locs.n;
	dict.function_table = A(&w, w.funcs.n * sizeof(void *));
	if (!dict.function_table)
		goto out;
	for (i = 0; i < w.funcs.n; i++) {
		const struct op_dfunction *f = op_data_func(d, w.funcs.order[i]);
		PbFunction *pf = A(&w, sizeof(*pf));

		if (!pf)
			goto out;
		PB(function__init)(pf);
		dict.function_table[i] = pf;
		if (!i)
			continue;
		pf->name_strindex = (int32_t)op_wmap_use(&w.strs, f->name);
		pf->system_name_strindex = (int32_t)op_wmap_use(&w.strs, f->system_name);
		pf->filename_strindex = (int32_t)op_wmap_use(&w.strs, f->filename);
		pf->start_line = f->start_line;
	}
	dict.n_function_table = w.funcs.n;
	dict.stack_table = A(&w, w.stacks.n * sizeof(void *));
	if (!dict.stack_table)
		goto out;
	for (i = 0; i < w.stacks.n; i++) {
		PbStack *ps = A(&w, sizeof(*ps));
		uint32_t n;
		const uint32_t *l = op_data_list(&d->stacks, w.stacks.order[i], &n);

		if (!ps)
			goto out;
		PB(stack__init)(ps);
		dict.stack_table[i] = ps;
		if (!i)
			continue;
		ps->location_indices = A(&w, n * sizeof(int32_t));
		if (!ps->location_indices)
			goto out;
		for (j = 0; j < n; j++)
			ps->location_indices[j] = (int32_t)w.locs.map[l[j]];
		ps->n_location_indices = n;
	}
	dict.n_stack_table = w.stacks.n;
	dict.link_table = A(&w, w.links.n * sizeof(void *));
	if (!dict.link_table)
		goto out;
	for (i = 0; i < w.links.n; i++) {
		PbLink *pl = A(&w, sizeof(*pl));

		if (!pl)
			goto out;
		PB(link__init)(pl);
		dict.link_table[i] = pl;
		if (!i)
			continue;
		{
			const struct op_dlink *l = op_itab_get(&d->links, w.links.order[i], NULL);

			pl->trace_id.data = (uint8_t *)l->trace_id;
			pl->trace_id.len = 16;
			pl->span_id.data = (uint8_t *)l->span_id;
			pl->span_id.len = 8;
		}
	}
	dict.n_link_table = w.links.n;

	/* resources, each with one profile per sample type */
	opentelemetry__proto__common__v1__instrumentation_scope__init(&scope);
	scope.name = (char *)op_data_s(d, d->scope_name);
	scope.version = (char *)op_data_s(d, d->scope_version);
	if (d->period_type.type || d->period_type.unit) {
		period_type = A(&w, sizeof(*period_type));
		if (!period_type)
			goto out;
		PB(value_type__init)(period_type);
		period_type->type_strindex = (int32_t)w.strs.map[d->period_type.type];
		period_type->unit_strindex = (int32_t)w.strs.map[d->period_type.unit];
	}
	req.resource_profiles = A(&w, n_res * sizeof(void *));
	if (!req.resource_profiles)
		goto out;
	req.n_resource_profiles = n_res;
	for (i = 0; i < n_res; i++) {
		uint32_t rset = res_order[i], n_attr;
		const uint32_t *ra = op_data_list(&d->sets, rset, &n_attr);
		PbResourceProfiles *rp = A(&w, sizeof(*rp));
		PbResource *res = A(&w, sizeof(*res));
		PbScopeProfiles *sp = A(&w, sizeof(*sp));

		if (!rp || !res || !sp)
			goto out;
		PB(resource_profiles__init)(rp);
		opentelemetry__proto__resource__v1__resource__init(res);
		PB(scope_profiles__init)(sp);
		req.resource_profiles[i] = rp;
		rp->resource = res;
		res->attributes = A(&w, n_attr * sizeof(void *));
		if (!res->attributes)
			goto out;
		for (j = 0; j < n_attr; j++) {
			const struct op_dattr *a = op_data_at(d, ra[j]);
			PbKeyValue *kv = A(&w, sizeof(*kv));
			PbAnyValue *v = A(&w, sizeof(*v));

			if (!kv || !v)
				goto out;
			opentelemetry__proto__common__v1__key_value__init(kv);
			kv->key = (char *)op_data_s(d, a->key);
			any_value(v, d, a);
			kv->value = v;
			res->attributes[j] = kv;
		}
		res->n_attributes = n_attr;
		rp->scope_profiles = A(&w, sizeof(void *));
		if (!rp->scope_profiles)
			goto out;
		rp->scope_profiles[0] = sp;
		rp->n_scope_profiles = 1;
		sp->scope = &scope;
		sp->profiles = A(&w, n_types * sizeof(void *));
		if (!sp->profiles)
			goto out;
		sp->n_profiles = n_types;
		for (t = 0; t < n_types; t++) {
			PbProfile *pr = A(&w, sizeof(*pr));
			PbValueType *st = A(&w, sizeof(*st));
			size_t ns = 0;

			if (!pr || !st)
				goto out;
			PB(profile__init)(pr);
			PB(value_type__init)(st);
			sp->profiles[t] = pr;
			st->type_strindex = (int32_t)w.strs.map[d->types[types[t]].type];
			st->unit_strindex = (int32_t)w.strs.map[d->types[types[t]].unit];
			pr->sample_type = st;
			pr->period_type = period_type;
			pr->period = d->period;
			pr->time_unix_nano = d->time_ns;
			pr->duration_nano = d->duration_ns;
			pr->profile_id.data = A(&w, 16);
			if (!pr->profile_id.data)
				goto out;
			if (getrandom(pr->profile_id.data, 16, GRND_NONBLOCK) != 16)
				memcpy(pr->profile_id.data, &pr, sizeof(pr)); /* unique will do */
			pr->profile_id.len = 16;
			pr->samples = A(&w, per_res[rset] * sizeof(void *));
			if (!pr->samples)
				goto out;
			for (uint32_t bi = res_first[i]; bi < res_first[i + 1]; bi++) {
				uint32_t si = by_res[bi];
				const struct op_dsample *s = op_data_sample(d, si);
				int64_t v = op_data_value(d, si, types[t]);
				uint32_t nts = ts_off[si + 1] - ts_off[si], na, k;
				const uint32_t *sa;
				PbSample *ps;

				/* a sample with nothing for this type is in the first profile only
				 */
				if (!v && t)
					continue;
				ps = A(&w, sizeof(*ps));
				if (!ps)
					goto out;
				PB(sample__init)(ps);
				ps->stack_index = (int32_t)w.stacks.map[s->stack];
				ps->link_index = (int32_t)w.links.map[s->link];
				sa = op_data_list(&d->sets, s->attrs, &na);
				ps->attribute_indices = A(&w, na * sizeof(int32_t));
				if (!ps->attribute_indices)
					goto out;
				for (k = 0; k < na; k++)
					ps->attribute_indices[k] =
						(int32_t)op_wmap_use(&w.attrs, sa[k]);
				ps->n_attribute_indices = na;
				if (t == 0 && nts && (int64_t)nts == v) {
					ps->timestamps_unix_nano = &ts[ts_off[si]];
					ps->n_timestamps_unix_nano = nts;
				} else {
					ps->values = A(&w, sizeof(int64_t));
					if (!ps->values)
						goto out;
					ps->values[0] = v;
					ps->n_values = 1;
				}
				pr->samples[ns++] = ps;
			}
			pr->n_samples = ns;
		}
	}

	/* attributes (their keys are strings), then the string table */
	dict.attribute_table = A(&w, w.attrs.n * sizeof(void *));
	if (!dict.attribute_table)
		goto out;
	for (i = 0; i < w.attrs.n; i++) {
		PbKeyValueAndUnit *kv = A(&w, sizeof(*kv));
		PbAnyValue *v = A(&w, sizeof(*v));

		if (!kv || !v)
			goto out;
		PB(key_value_and_unit__init)(kv);
		opentelemetry__proto__common__v1__any_value__init(v);
		kv->value = v; /* the zero entry carries an empty value, as pdata writes it */
		dict.attribute_table[i] = kv;
		if (!i)
			continue;
		{
			const struct op_dattr *a = op_data_at(d, w.attrs.order[i]);

			kv->key_strindex = (int32_t)op_wmap_use(&w.strs, a->key);
			kv->unit_strindex = (int32_t)op_wmap_use(&w.strs, a->unit);
			any_value(v, d, a);
		}
	}
	dict.n_attribute_table = w.attrs.n;
	dict.string_table = A(&w, w.strs.n * sizeof(char *));
	if (!dict.string_table)
		goto out;
	for (i = 0; i < w.strs.n; i++)
		dict.string_table[i] = (char *)op_data_s(d, w.strs.order[i]);
	dict.n_string_table = w.strs.n;
	req.dictionary = &dict;
	if (w.oom)
		goto out;

	{
		size_t n =
			opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__get_packed_size(
				&req);

		buf = malloc(n ? n : 1);
		if (!buf)
			goto out;
		opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__pack(
			&req, buf);
		*out = buf;
		*len = n;
		buf = NULL;
		rc = 0;
	}
out:
	free(buf);
	free(res_of);
	free(res_order);
	free(by_res);
	free(res_first);
	free(per_res);
	free(ts_off);
	free(ts);
	free(loc_attr);
	free(map_attr);
	op_wmap_free(&w.strs);
	op_wmap_free(&w.attrs);
	op_wmap_free(&w.maps);
	op_wmap_free(&w.funcs);
	op_wmap_free(&w.locs);
	op_wmap_free(&w.stacks);
	op_wmap_free(&w.links);
	op_arena_free(&w.a);
	return rc;
}

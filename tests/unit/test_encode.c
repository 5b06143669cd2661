// SPDX-License-Identifier: Apache-2.0
/*
 * Encoders: encode the known profile (test_encode_fixture.h), decode our own bytes back with
 * protobuf-c (after gunzip for pprof) and check what a user of each format would see. The
 * same bytes are checked against real decoders (pdata, google/pprof, go tool pprof) by
 * tests/integration/otlp_roundtrip_test.go.
 */
#include <errno.h>
#include <time.h>

#include <zlib.h>

#include "check.h"
#include "opentelemetry/profiles_service.pb-c.h"
#include "otelprof.h"
#include "pprof/profile.pb-c.h"
#include "profile/profile_internal.h"
#include "test_encode_fixture.h"

typedef Perftools__Profiles__Profile PProf;
typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest OReq;
typedef Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary ODict;
typedef Opentelemetry__Proto__Profiles__V1development__Profile OProfile;
typedef Opentelemetry__Proto__Profiles__V1development__Sample OSample;
typedef Opentelemetry__Proto__Profiles__V1development__Location OLocation;
typedef Opentelemetry__Proto__Profiles__V1development__Mapping OMapping;
typedef Opentelemetry__Proto__Common__V1__KeyValue OKeyValue;
typedef Opentelemetry__Proto__Common__V1__AnyValue OAnyValue;

#define ANY_STRING OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE
#define ANY_INT	   OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ------------------------------------------------------------------ pprof */

static uint8_t *gunzip(const uint8_t *in, size_t len, size_t *out_len)
{
	size_t cap = len * 8 + 4096;
	uint8_t *out = malloc(cap);
	z_stream zs = { 0 };
	int rc;

	/* the gzip magic: a raw deflate or zlib stream is not what pprof readers expect */
	if (len < 2 || in[0] != 0x1f || in[1] != 0x8b || !out) {
		free(out);
		return NULL;
	}
	if (inflateInit2(&zs, 15 + 16) != Z_OK) {
		free(out);
		return NULL;
	}
	zs.next_in = (Bytef *)in;
	zs.avail_in = len;
	for (;;) {
		zs.next_out = out + zs.total_out;
		zs.avail_out = cap - zs.total_out;
		rc = inflate(&zs, Z_NO_FLUSH);
		if (rc == Z_STREAM_END)
			break;
		if (rc != Z_OK && rc != Z_BUF_ERROR) {
			inflateEnd(&zs);
			free(out);
			return NULL;
		}
		cap *= 2;
		out = realloc(out, cap);
		if (!out) {
			inflateEnd(&zs);
			return NULL;
		}
	}
	*out_len = zs.total_out;
	inflateEnd(&zs);
	return out;
}

static PProf *decode_pprof(const uint8_t *buf, size_t len)
{
	size_t rawlen;
	uint8_t *raw = gunzip(buf, len, &rawlen);
	PProf *pp;

	if (!raw)
		return NULL;
	pp = perftools__profiles__profile__unpack(NULL, rawlen, raw);
	free(raw);
	return pp;
}

static const char *pstr(const PProf *pp, int64_t i)
{
	return i >= 0 && (size_t)i < pp->n_string_table ? pp->string_table[i] : "<bad index>";
}

static const Perftools__Profiles__Location *ploc(const PProf *pp, uint64_t id)
{
	for (size_t i = 0; i < pp->n_location; i++)
		if (pp->location[i]->id == id)
			return pp->location[i];
	return NULL;
}

static const Perftools__Profiles__Function *pfunc(const PProf *pp, uint64_t id)
{
	for (size_t i = 0; i < pp->n_function; i++)
		if (pp->function[i]->id == id)
			return pp->function[i];
	return NULL;
}

static const Perftools__Profiles__Mapping *pmap(const PProf *pp, uint64_t id)
{
	for (size_t i = 0; i < pp->n_mapping; i++)
		if (pp->mapping[i]->id == id)
			return pp->mapping[i];
	return NULL;
}

/* Function name of line @j of location @id, or "". */
static const char *pfname(const PProf *pp, uint64_t id, size_t j)
{
	const Perftools__Profiles__Location *l = ploc(pp, id);
	const Perftools__Profiles__Function *f;

	if (!l || j >= l->n_line)
		return "";
	f = pfunc(pp, l->line[j]->function_id);
	return f ? pstr(pp, f->name) : "";
}

static const Perftools__Profiles__Label *
plabel(const PProf *pp, const Perftools__Profiles__Sample *s, const char *key)
{
	for (size_t i = 0; i < s->n_label; i++)
		if (!strcmp(pstr(pp, s->label[i]->key), key))
			return s->label[i];
	return NULL;
}

static void test_pprof(void)
{
	struct op_profile *p = fx_build();
	const Perftools__Profiles__Sample *s_main = NULL, *s_sys = NULL, *s_srv = NULL;
	uint64_t total = 0, total_cpu = 0;
	uint8_t *buf = NULL;
	size_t len = 0, i, j;
	PProf *pp;

	REQUIRE(p);
	REQUIRE(op_profile_sample_count(p) == 10);
	REQUIRE(op_encode_pprof(p, &buf, &len) == 0);
	pp = decode_pprof(buf, len);
	REQUIRE(pp);

	CHECK(pp->n_string_table > 0);
	CHECK_STR(pp->string_table[0], "");
	for (i = 1; i < pp->n_string_table; i++)
		for (j = i + 1; j < pp->n_string_table; j++)
			CHECK(strcmp(pp->string_table[i], pp->string_table[j]));
	REQUIRE(pp->n_sample_type == 2);
	CHECK_STR(pstr(pp, pp->sample_type[0]->type), "samples");
	CHECK_STR(pstr(pp, pp->sample_type[0]->unit), "count");
	CHECK_STR(pstr(pp, pp->sample_type[1]->type), "cpu");
	CHECK_STR(pstr(pp, pp->sample_type[1]->unit), "nanoseconds");
	REQUIRE(pp->period_type);
	CHECK_STR(pstr(pp, pp->period_type->type), "cpu");
	CHECK_STR(pstr(pp, pp->period_type->unit), "nanoseconds");
	CHECK_EQ(pp->period, FX_PERIOD);
	CHECK_EQ(pp->time_nanos, FX_T0);
	CHECK_EQ(pp->duration_nanos, FX_END - FX_T0);

	/* ids unique and non-zero; every reference resolves */
	for (i = 0; i < pp->n_location; i++) {
		CHECK(pp->location[i]->id != 0);
		CHECK(ploc(pp, pp->location[i]->id) == pp->location[i]);
		if (pp->location[i]->mapping_id)
			CHECK(pmap(pp, pp->location[i]->mapping_id) != NULL);
		for (j = 0; j < pp->location[i]->n_line; j++)
			CHECK(pfunc(pp, pp->location[i]->line[j]->function_id) != NULL);
	}
	for (i = 0; i < pp->n_function; i++)
		CHECK(pp->function[i]->id && pfunc(pp, pp->function[i]->id) == pp->function[i]);
	for (i = 0; i < pp->n_mapping; i++)
		CHECK(pp->mapping[i]->id && pmap(pp, pp->mapping[i]->id) == pp->mapping[i]);
	CHECK_EQ(pp->n_location, 8);
	CHECK_EQ(pp->n_function, 9);
	CHECK_EQ(pp->n_mapping, 4); /* app, libc, server, [kernel.kallsyms] */

	/* the main binary (executable of the busiest process) is mapping[0] */
	REQUIRE(pp->n_mapping >= 1);
	CHECK_STR(pstr(pp, pp->mapping[0]->filename), "/usr/bin/app");
	CHECK_STR(pstr(pp, pp->mapping[0]->build_id), FX_APP_BUILD_ID);
	CHECK(pp->mapping[0]->has_functions && pp->mapping[0]->has_inline_frames);
	CHECK_EQ(pp->mapping[0]->memory_start, 0x400000);
	CHECK_EQ(pp->mapping[0]->memory_limit, 0x500000);

	REQUIRE(pp->n_sample == 4);
	for (i = 0; i < pp->n_sample; i++) {
		const Perftools__Profiles__Sample *s = pp->sample[i];
		const Perftools__Profiles__Label *tn = plabel(pp, s, "thread.name");

		REQUIRE(s->n_value == 2);
		CHECK_EQ(s->value[1], s->value[0] * (int64_t)FX_PERIOD);
		total += s->value[0];
		total_cpu += s->value[1];
		REQUIRE(tn);
		if (!strcmp(pstr(pp, tn->str), "app-main") && s->n_location_id == 2)
			s_main = s;
		if (!strcmp(pstr(pp, tn->str), "app-main") && s->n_location_id == 4)
			s_sys = s;
		if (!strcmp(pstr(pp, tn->str), "server"))
			s_srv = s;
	}
	CHECK_EQ(total, 10);
	CHECK_EQ(total_cpu, 10 * FX_PERIOD);
	REQUIRE(s_main && s_sys && s_srv);

	/* leaf first; an inlined callee comes before its caller within one location */
	CHECK_EQ(s_main->value[0], 3);
	CHECK_STR(pfname(pp, s_main->location_id[0], 0), "square");
	CHECK_STR(pfname(pp, s_main->location_id[0], 1), "compute");
	CHECK_EQ(ploc(pp, s_main->location_id[0])->line[0]->line, 22);
	CHECK_EQ(ploc(pp, s_main->location_id[0])->address, 0x401010);
	CHECK_STR(pfname(pp, s_main->location_id[1], 0), "main");
	CHECK_EQ(plabel(pp, s_main, "pid")->num, 100);
	CHECK_EQ(plabel(pp, s_main, "tid")->num, 100);
	CHECK_EQ(plabel(pp, s_main, "cpu")->num, 0);
	/* with a unit: pprof readers drop a unitless numeric label whose value is 0 */
	CHECK(plabel(pp, s_main, "cpu")->num_unit != 0);
	CHECK_STR(pstr(pp, plabel(pp, s_main, "process.executable.name")->str), "app");

	/* kernel frames sit on the [kernel.kallsyms] mapping */
	CHECK_STR(pfname(pp, s_sys->location_id[0], 0), "ksys_write");
	CHECK_STR(pfname(pp, s_sys->location_id[1], 0), "entry_SYSCALL_64");
	CHECK_STR(pfname(pp, s_sys->location_id[2], 0), "__write");
	CHECK_STR(pstr(pp, pmap(pp, ploc(pp, s_sys->location_id[0])->mapping_id)->filename),
		  "[kernel.kallsyms]");
	CHECK_STR(pstr(pp, pmap(pp, ploc(pp, s_sys->location_id[2])->mapping_id)->build_id),
		  FX_LIBC_BUILD_ID);

	/* the abort marker: a named function, no mapping */
	CHECK_EQ(s_srv->value[0], 4);
	CHECK_EQ(s_srv->n_location_id, 3);
	CHECK_STR(pfname(pp, s_srv->location_id[2], 0), "[truncated]");
	CHECK_EQ(ploc(pp, s_srv->location_id[2])->mapping_id, 0);
	CHECK_EQ(plabel(pp, s_srv, "pid")->num, 200);
	CHECK_EQ(plabel(pp, s_srv, "cpu")->num, 1);
	/* no GNU build id: the htlhash identifies the Go binary */
	CHECK_STR(pstr(pp, pmap(pp, ploc(pp, s_srv->location_id[0])->mapping_id)->build_id),
		  FX_SERVER_HTLHASH);

	perftools__profiles__profile__free_unpacked(pp, NULL);
	free(buf);
	op_profile_free(p);
}

/* ------------------------------------------------------------------ OTLP */

static OReq *decode_otlp(const uint8_t *buf, size_t len)
{
	return opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__unpack(
		NULL, len, buf);
}

static void free_otlp(OReq *r)
{
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__free_unpacked(
		r, NULL);
}

static const char *ostr(const ODict *d, int64_t i)
{
	return i >= 0 && (size_t)i < d->n_string_table ? d->string_table[i] : "<bad index>";
}

static bool idx_ok(int32_t i, size_t n)
{
	return i >= 0 && (size_t)i < n;
}

/* Value of attribute @key among @idx (attribute_table indices), or NULL. */
static const OAnyValue *oattr(const ODict *d, const int32_t *idx, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++) {
		if (!idx_ok(idx[i], d->n_attribute_table))
			continue;
		if (!strcmp(ostr(d, d->attribute_table[idx[i]]->key_strindex), key))
			return d->attribute_table[idx[i]]->value;
	}
	return NULL;
}

static const char *oattr_str(const ODict *d, const int32_t *idx, size_t n, const char *key)
{
	const OAnyValue *v = oattr(d, idx, n, key);

	return v && v->value_case == ANY_STRING ? v->string_value : NULL;
}

static int64_t oattr_int(const ODict *d, const int32_t *idx, size_t n, const char *key)
{
	const OAnyValue *v = oattr(d, idx, n, key);

	return v && v->value_case == ANY_INT ? v->int_value : -1;
}

static const char *res_str(const Opentelemetry__Proto__Resource__V1__Resource *r, const char *key)
{
	for (size_t i = 0; i < r->n_attributes; i++)
		if (!strcmp(r->attributes[i]->key, key) && r->attributes[i]->value &&
		    r->attributes[i]->value->value_case == ANY_STRING)
			return r->attributes[i]->value->string_value;
	return NULL;
}

static int64_t res_int(const Opentelemetry__Proto__Resource__V1__Resource *r, const char *key)
{
	for (size_t i = 0; i < r->n_attributes; i++)
		if (!strcmp(r->attributes[i]->key, key) && r->attributes[i]->value &&
		    r->attributes[i]->value->value_case == ANY_INT)
			return r->attributes[i]->value->int_value;
	return -1;
}

/* Function name of line @j of location @li. */
static const char *ofname(const ODict *d, int32_t li, size_t j)
{
	const OLocation *l;
	int32_t fi;

	if (!idx_ok(li, d->n_location_table))
		return "<bad location>";
	l = d->location_table[li];
	if (j >= l->n_lines)
		return "";
	fi = l->lines[j]->function_index;
	if (!idx_ok(fi, d->n_function_table))
		return "<bad function>";
	return ostr(d, d->function_table[fi]->name_strindex);
}

static const char *frame_type(const ODict *d, int32_t li)
{
	const OLocation *l = d->location_table[li];

	return oattr_str(d, l->attribute_indices, l->n_attribute_indices, "profile.frame.type");
}

/* Dictionary invariants: zero entries, no duplicates, no orphans, references in range. */
static void check_dictionary(const OReq *r)
{
	const ODict *d = r->dictionary;
	uint8_t *s_used, *a_used, *l_used, *f_used, *m_used, *st_used;
	size_t i, j, k, n;

	REQUIRE(d);
	REQUIRE(d->n_string_table && d->n_mapping_table && d->n_location_table &&
		d->n_function_table && d->n_link_table && d->n_attribute_table && d->n_stack_table);
	CHECK_STR(d->string_table[0], "");
	CHECK(!d->mapping_table[0]->memory_start && !d->mapping_table[0]->memory_limit &&
	      !d->mapping_table[0]->filename_strindex && !d->mapping_table[0]->n_attribute_indices);
	CHECK(!d->location_table[0]->mapping_index && !d->location_table[0]->address &&
	      !d->location_table[0]->n_lines && !d->location_table[0]->n_attribute_indices);
	CHECK(!d->function_table[0]->name_strindex && !d->function_table[0]->filename_strindex);
	CHECK_EQ(d->n_link_table, 1);
	CHECK(!d->link_table[0]->trace_id.len && !d->link_table[0]->span_id.len);
	CHECK(!d->attribute_table[0]->key_strindex &&
	      (!d->attribute_table[0]->value ||
	       d->attribute_table[0]->value->value_case ==
		       OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE__NOT_SET));
	CHECK(!d->stack_table[0]->n_location_indices);

	for (i = 1; i < d->n_string_table; i++)
		for (j = i + 1; j < d->n_string_table; j++)
			CHECK(strcmp(d->string_table[i], d->string_table[j]));
	for (i = 1; i < d->n_stack_table; i++) {
		for (j = i + 1; j < d->n_stack_table; j++) {
			const Opentelemetry__Proto__Profiles__V1development__Stack
				*a = d->stack_table[i],
				*b = d->stack_table[j];

			CHECK(a->n_location_indices != b->n_location_indices ||
			      memcmp(a->location_indices, b->location_indices,
				     a->n_location_indices * sizeof(int32_t)));
		}
	}
	for (i = 1; i < d->n_attribute_table; i++) {
		for (j = i + 1; j < d->n_attribute_table; j++) {
			const OAnyValue *a = d->attribute_table[i]->value;
			const OAnyValue *b = d->attribute_table[j]->value;
			bool same = d->attribute_table[i]->key_strindex ==
					    d->attribute_table[j]->key_strindex &&
				    a->value_case == b->value_case &&
				    (a->value_case == ANY_INT
					     ? a->int_value == b->int_value
					     : !strcmp(a->string_value, b->string_value));

			CHECK(!same);
		}
	}
	for (i = 1; i < d->n_function_table; i++)
		for (j = i + 1; j < d->n_function_table; j++)
			CHECK(memcmp((char *)d->function_table[i] + sizeof(ProtobufCMessage),
				     (char *)d->function_table[j] + sizeof(ProtobufCMessage),
				     sizeof(*d->function_table[i]) - sizeof(ProtobufCMessage)));

	/* mark everything referenced, starting from the samples */
	s_used = calloc(d->n_string_table, 1);
	a_used = calloc(d->n_attribute_table, 1);
	l_used = calloc(d->n_location_table, 1);
	f_used = calloc(d->n_function_table, 1);
	m_used = calloc(d->n_mapping_table, 1);
	st_used = calloc(d->n_stack_table, 1);
	REQUIRE(s_used && a_used && l_used && f_used && m_used && st_used);
	for (i = 0; i < r->n_resource_profiles; i++) {
		const Opentelemetry__Proto__Profiles__V1development__ResourceProfiles *rp =
			r->resource_profiles[i];

		for (j = 0; j < rp->n_scope_profiles; j++) {
			for (k = 0; k < rp->scope_profiles[j]->n_profiles; k++) {
				const OProfile *pr = rp->scope_profiles[j]->profiles[k];

				REQUIRE(pr->sample_type && pr->period_type);
				s_used[pr->sample_type->type_strindex] = 1;
				s_used[pr->sample_type->unit_strindex] = 1;
				s_used[pr->period_type->type_strindex] = 1;
				s_used[pr->period_type->unit_strindex] = 1;
				for (n = 0; n < pr->n_samples; n++) {
					const OSample *s = pr->samples[n];

					REQUIRE(idx_ok(s->stack_index, d->n_stack_table));
					st_used[s->stack_index] = 1;
					for (size_t a = 0; a < s->n_attribute_indices; a++) {
						REQUIRE(idx_ok(s->attribute_indices[a],
							       d->n_attribute_table));
						a_used[s->attribute_indices[a]] = 1;
					}
					/* values empty or as many as the timestamps */
					CHECK(!s->n_values ||
					      s->n_values == s->n_timestamps_unix_nano ||
					      !s->n_timestamps_unix_nano);
				}
			}
		}
	}
	for (i = 1; i < d->n_stack_table; i++) {
		for (j = 0; j < d->stack_table[i]->n_location_indices; j++) {
			REQUIRE(idx_ok(d->stack_table[i]->location_indices[j],
				       d->n_location_table));
			l_used[d->stack_table[i]->location_indices[j]] = 1;
		}
	}
	for (i = 1; i < d->n_location_table; i++) {
		const OLocation *l = d->location_table[i];

		REQUIRE(idx_ok(l->mapping_index, d->n_mapping_table));
		m_used[l->mapping_index] = 1;
		for (j = 0; j < l->n_lines; j++) {
			REQUIRE(idx_ok(l->lines[j]->function_index, d->n_function_table));
			f_used[l->lines[j]->function_index] = 1;
		}
		for (j = 0; j < l->n_attribute_indices; j++) {
			REQUIRE(idx_ok(l->attribute_indices[j], d->n_attribute_table));
			a_used[l->attribute_indices[j]] = 1;
		}
	}
	for (i = 1; i < d->n_mapping_table; i++) {
		const OMapping *m = d->mapping_table[i];

		REQUIRE(idx_ok(m->filename_strindex, d->n_string_table));
		s_used[m->filename_strindex] = 1;
		for (j = 0; j < m->n_attribute_indices; j++) {
			REQUIRE(idx_ok(m->attribute_indices[j], d->n_attribute_table));
			a_used[m->attribute_indices[j]] = 1;
		}
	}
	for (i = 1; i < d->n_function_table; i++) {
		const Opentelemetry__Proto__Profiles__V1development__Function *f =
			d->function_table[i];

		REQUIRE(idx_ok(f->name_strindex, d->n_string_table) &&
			idx_ok(f->system_name_strindex, d->n_string_table) &&
			idx_ok(f->filename_strindex, d->n_string_table));
		s_used[f->name_strindex] = s_used[f->system_name_strindex] = 1;
		s_used[f->filename_strindex] = 1;
	}
	for (i = 1; i < d->n_attribute_table; i++) {
		REQUIRE(idx_ok(d->attribute_table[i]->key_strindex, d->n_string_table));
		s_used[d->attribute_table[i]->key_strindex] = 1;
		CHECK(d->attribute_table[i]->value != NULL);
	}
	for (i = 1; i < d->n_string_table; i++)
		if (!s_used[i])
			fprintf(stderr, "orphan string %zu \"%s\"\n", i, d->string_table[i]);
#define NO_ORPHANS(used, n)       \
	for (i = 1; i < (n); i++) \
	CHECK(used[i])
	NO_ORPHANS(s_used, d->n_string_table);
	NO_ORPHANS(a_used, d->n_attribute_table);
	NO_ORPHANS(l_used, d->n_location_table);
	NO_ORPHANS(f_used, d->n_function_table);
	NO_ORPHANS(m_used, d->n_mapping_table);
	NO_ORPHANS(st_used, d->n_stack_table);
#undef NO_ORPHANS
	free(s_used);
	free(a_used);
	free(l_used);
	free(f_used);
	free(m_used);
	free(st_used);
}

static void test_otlp(void)
{
	struct op_profile *p = fx_build();
	const OSample *s_main = NULL, *s_sys = NULL, *s_work = NULL, *s_srv = NULL;
	const OProfile *prof_app = NULL, *prof_srv = NULL;
	const Opentelemetry__Proto__Resource__V1__Resource *res_app = NULL, *res_srv = NULL;
	uint8_t *buf = NULL;
	size_t len = 0, i, j;
	const ODict *d;
	OReq *r;

	REQUIRE(p);
	REQUIRE(op_encode_otlp(p, &buf, &len) == 0);
	r = decode_otlp(buf, len);
	REQUIRE(r);
	check_dictionary(r);
	d = r->dictionary;

	REQUIRE(r->n_resource_profiles == 2);
	for (i = 0; i < r->n_resource_profiles; i++) {
		const Opentelemetry__Proto__Profiles__V1development__ResourceProfiles *rp =
			r->resource_profiles[i];
		const Opentelemetry__Proto__Profiles__V1development__ScopeProfiles *sp;

		REQUIRE(rp->resource && rp->n_scope_profiles == 1);
		sp = rp->scope_profiles[0];
		REQUIRE(sp->scope && sp->n_profiles == 1);
		CHECK_STR(sp->scope->name, "otelprof");
		CHECK_STR(sp->scope->version, OTELPROF_VERSION_STRING);
		/* plain keys only: never key and key_strindex together */
		for (j = 0; j < rp->resource->n_attributes; j++)
			CHECK(rp->resource->attributes[j]->key_strindex == 0);
		if (res_int(rp->resource, "process.pid") == 100) {
			res_app = rp->resource;
			prof_app = sp->profiles[0];
		} else if (res_int(rp->resource, "process.pid") == 200) {
			res_srv = rp->resource;
			prof_srv = sp->profiles[0];
		}
	}
	REQUIRE(res_app && res_srv);
	CHECK_STR(res_str(res_app, "process.executable.name"), "app");
	CHECK_STR(res_str(res_app, "process.executable.path"), "/usr/bin/app");
	CHECK_STR(res_str(res_app, "container.id"), FX_CONTAINER);
	CHECK_STR(res_str(res_srv, "process.executable.name"), "server");
	CHECK(res_str(res_srv, "container.id") == NULL);

	for (i = 0; i < 2; i++) {
		const OProfile *pr = i ? prof_srv : prof_app;

		CHECK_STR(ostr(d, pr->sample_type->type_strindex), "samples");
		CHECK_STR(ostr(d, pr->sample_type->unit_strindex), "count");
		CHECK_STR(ostr(d, pr->period_type->type_strindex), "cpu");
		CHECK_STR(ostr(d, pr->period_type->unit_strindex), "nanoseconds");
		CHECK_EQ(pr->period, FX_PERIOD);
		CHECK_EQ(pr->time_unix_nano, FX_T0);
		CHECK_EQ(pr->duration_nano, FX_END - FX_T0);
		CHECK_EQ(pr->profile_id.len, 16);
	}
	CHECK(memcmp(prof_app->profile_id.data, prof_srv->profile_id.data, 16));

	REQUIRE(prof_app->n_samples == 3 && prof_srv->n_samples == 1);
	for (i = 0; i < prof_app->n_samples; i++) {
		const OSample *s = prof_app->samples[i];
		const char *tn =
			oattr_str(d, s->attribute_indices, s->n_attribute_indices, "thread.name");
		size_t depth = d->stack_table[s->stack_index]->n_location_indices;

		CHECK_EQ(s->n_values, 0); /* timestamps only, like the upstream eBPF profiler */
		if (tn && !strcmp(tn, "app-main") && depth == 2)
			s_main = s;
		else if (tn && !strcmp(tn, "app-main") && depth == 4)
			s_sys = s;
		else if (tn && !strcmp(tn, "app-worker"))
			s_work = s;
	}
	s_srv = prof_srv->samples[0];
	REQUIRE(s_main && s_sys && s_work);

	/* one timestamp per event, in order */
	REQUIRE(s_main->n_timestamps_unix_nano == 3);
	for (i = 0; i < 3; i++)
		CHECK_EQ(s_main->timestamps_unix_nano[i], FX_T0 + 1000 * i);
	CHECK_EQ(s_sys->n_timestamps_unix_nano, 1);
	CHECK_EQ(s_sys->timestamps_unix_nano[0], FX_T0 + 3000);
	CHECK_EQ(s_work->n_timestamps_unix_nano, 2);
	CHECK_EQ(s_srv->n_timestamps_unix_nano, 4);
	CHECK_EQ(s_srv->timestamps_unix_nano[3], FX_T0 + 9000);

	/* sample attributes */
	CHECK_EQ(oattr_int(d, s_main->attribute_indices, s_main->n_attribute_indices, "thread.id"),
		 100);
	CHECK_EQ(oattr_int(d, s_main->attribute_indices, s_main->n_attribute_indices,
			   "cpu.logical_number"),
		 0);
	CHECK_EQ(oattr_int(d, s_work->attribute_indices, s_work->n_attribute_indices, "thread.id"),
		 101);
	CHECK_EQ(oattr_int(d, s_work->attribute_indices, s_work->n_attribute_indices,
			   "cpu.logical_number"),
		 1);
	CHECK_STR(oattr_str(d, s_srv->attribute_indices, s_srv->n_attribute_indices, "thread.name"),
		  "server");

	/* stacks leaf first, inline frames innermost first, frame types */
	{
		const int32_t *st = d->stack_table[s_main->stack_index]->location_indices;
		const int32_t *sy = d->stack_table[s_sys->stack_index]->location_indices;
		const int32_t *sv = d->stack_table[s_srv->stack_index]->location_indices;
		const OMapping *m;

		/* both app samples share one stack entry */
		CHECK_EQ(s_main->stack_index, s_work->stack_index);
		CHECK_STR(ofname(d, st[0], 0), "square");
		CHECK_STR(ofname(d, st[0], 1), "compute");
		CHECK_EQ(d->location_table[st[0]]->lines[0]->line, 22);
		CHECK_EQ(d->location_table[st[0]]->lines[0]->column, 5);
		CHECK_EQ(d->location_table[st[0]]->address, 0x401010);
		CHECK_STR(ofname(d, st[1], 0), "main");
		CHECK_STR(frame_type(d, st[0]), "native");
		m = d->mapping_table[d->location_table[st[0]]->mapping_index];
		CHECK_STR(ostr(d, m->filename_strindex), "/usr/bin/app");
		CHECK_STR(oattr_str(d, m->attribute_indices, m->n_attribute_indices,
				    "process.executable.build_id.gnu"),
			  FX_APP_BUILD_ID);

		CHECK_STR(ofname(d, sy[0], 0), "ksys_write");
		CHECK_STR(frame_type(d, sy[0]), "kernel");
		CHECK_STR(frame_type(d, sy[1]), "kernel");
		CHECK_STR(ofname(d, sy[2], 0), "__write");
		CHECK_STR(frame_type(d, sy[2]), "native");
		CHECK_EQ(sy[3], st[1]); /* main: one location shared by both stacks */
		m = d->mapping_table[d->location_table[sy[0]]->mapping_index];
		CHECK_STR(ostr(d, m->filename_strindex), "[kernel.kallsyms]");
		m = d->mapping_table[d->location_table[sy[2]]->mapping_index];
		CHECK_STR(oattr_str(d, m->attribute_indices, m->n_attribute_indices,
				    "process.executable.build_id.gnu"),
			  FX_LIBC_BUILD_ID);
		CHECK_STR(oattr_str(d, m->attribute_indices, m->n_attribute_indices,
				    "process.executable.build_id.htlhash"),
			  FX_LIBC_HTLHASH);
		CHECK_EQ(m->file_offset, 0x28000);

		CHECK_STR(ofname(d, sv[0], 0), "main.handler");
		CHECK_STR(frame_type(d, sv[0]), "go");
		CHECK_STR(ofname(d, sv[1], 0), "main.main");
		CHECK_STR(ofname(d, sv[2], 0), "[truncated]");
		CHECK_STR(frame_type(d, sv[2]), "abort-marker");
		CHECK_EQ(d->location_table[sv[2]]->mapping_index, 0);
		m = d->mapping_table[d->location_table[sv[0]]->mapping_index];
		CHECK_STR(oattr_str(d, m->attribute_indices, m->n_attribute_indices,
				    "process.executable.build_id.go"),
			  FX_SERVER_GO_BUILD_ID);
		CHECK(oattr(d, m->attribute_indices, m->n_attribute_indices,
			    "process.executable.build_id.gnu") == NULL);
	}
	free_otlp(r);
	free(buf);
	op_profile_free(p);
}

/* Entries the caller interned but no sample reaches are not emitted. */
static void test_no_orphans(void)
{
	struct op_profile *p = fx_build();
	struct op_function_desc fd = { .name = "unused_fn", .filename = "unused.c" };
	struct op_mapping_desc md = { .filename = "/unused.so", .build_id_gnu = "dead" };
	struct op_line_desc ln;
	uint32_t loc;
	uint8_t *buf;
	size_t len, i;
	OReq *r;

	REQUIRE(p);
	op_profile_string(p, "unused string");
	ln = (struct op_line_desc){ .function = op_profile_function(p, &fd) };
	loc = op_profile_location(p, op_profile_mapping(p, &md), 0x10, &ln, 1, OP_FRAME_NATIVE);
	op_profile_stack(p, &loc, 1);
	REQUIRE(op_encode_otlp(p, &buf, &len) == 0);
	r = decode_otlp(buf, len);
	REQUIRE(r);
	check_dictionary(r);
	for (i = 0; i < r->dictionary->n_string_table; i++) {
		CHECK(strcmp(r->dictionary->string_table[i], "unused string"));
		CHECK(strcmp(r->dictionary->string_table[i], "unused_fn"));
		CHECK(strcmp(r->dictionary->string_table[i], "/unused.so"));
	}
	free_otlp(r);
	free(buf);
	op_profile_free(p);
}

/* No samples: both formats still give a valid, empty profile. */
static void test_empty(void)
{
	struct op_profile_opts o = { .period_ns = FX_PERIOD, .start_ns = FX_T0 };
	struct op_profile *p = op_profile_new(&o);
	uint8_t *buf;
	size_t len;
	PProf *pp;
	OReq *r;

	REQUIRE(p);
	REQUIRE(op_encode_otlp(p, &buf, &len) == 0);
	r = decode_otlp(buf, len);
	REQUIRE(r);
	CHECK_EQ(r->n_resource_profiles, 0);
	check_dictionary(r);
	free_otlp(r);
	free(buf);

	REQUIRE(op_encode_pprof(p, &buf, &len) == 0);
	pp = decode_pprof(buf, len);
	REQUIRE(pp);
	CHECK_EQ(pp->n_sample, 0);
	CHECK_EQ(pp->n_sample_type, 2);
	CHECK_STR(pp->string_table[0], "");
	perftools__profiles__profile__free_unpacked(pp, NULL);
	free(buf);
	op_profile_free(p);
}

/* A sample whose events lack timestamps carries its count as a value instead. */
static void test_no_timestamps(void)
{
	struct op_profile *p = op_profile_new(NULL);
	struct op_process_desc pr = { .pid = 1 };
	struct op_function_desc fd = { .name = "f" };
	struct op_sample_desc s = { .process = &pr };
	struct op_line_desc ln;
	uint32_t loc;
	uint8_t *buf;
	size_t len;
	OReq *r;

	REQUIRE(p);
	ln = (struct op_line_desc){ .function = op_profile_function(p, &fd) };
	loc = op_profile_location(p, 0, 0x10, &ln, 1, OP_FRAME_NATIVE);
	s.stack = op_profile_stack(p, &loc, 1);
	CHECK_EQ(op_profile_add_sample(p, &s), 0);
	CHECK_EQ(op_profile_add_sample(p, &s), 0);
	REQUIRE(op_encode_otlp(p, &buf, &len) == 0);
	r = decode_otlp(buf, len);
	REQUIRE(r && r->n_resource_profiles == 1);
	{
		const OSample *os =
			r->resource_profiles[0]->scope_profiles[0]->profiles[0]->samples[0];

		CHECK_EQ(os->n_timestamps_unix_nano, 0);
		REQUIRE(os->n_values == 1);
		CHECK_EQ(os->values[0], 2);
	}
	free_otlp(r);
	free(buf);
	op_profile_free(p);
}

/* 10,000 distinct samples over a realistic dictionary: time and size of both encoders. */
static void test_bench(void)
{
	enum { PROCS = 40, FUNCS = 3000, LOCS = 6000, SAMPLES = 10000, DEPTH = 24 };
	struct op_profile_opts o = { .period_ns = FX_PERIOD, .start_ns = FX_T0 };
	struct op_profile *p = op_profile_new(&o);
	struct op_process_desc procs[PROCS];
	char names[PROCS][32], paths[PROCS][64], fname[64];
	uint32_t maps[PROCS], funcs[FUNCS], locs[LOCS], stack[DEPTH];
	uint64_t rnd = 88172645463325252ull;
	uint8_t *buf;
	size_t plen = 0, olen = 0, rawlen = 0;
	double t0, t_pprof = 0, t_otlp = 0;
	int i, j, rep, reps = 5;

#define RND() (rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17, rnd)
	REQUIRE(p);
	for (i = 0; i < PROCS; i++) {
		struct op_mapping_desc md = { .memory_start = 0x400000,
					      .memory_limit = 0x800000,
					      .filename = paths[i],
					      .build_id_gnu =
						      "0123456789abcdef0123456789abcdef01234567",
					      .has_functions = 1 };

		snprintf(names[i], sizeof(names[i]), "proc%d", i);
		snprintf(paths[i], sizeof(paths[i]), "/usr/bin/proc%d", i);
		procs[i] = (struct op_process_desc){ .pid = 1000 + i,
						     .executable_name = names[i],
						     .executable_path = paths[i] };
		maps[i] = op_profile_mapping(p, &md);
	}
	for (i = 0; i < FUNCS; i++) {
		struct op_function_desc fd = { .name = fname,
					       .system_name = fname,
					       .filename = "/src/project/module/file.c" };

		snprintf(fname, sizeof(fname), "namespace::Class::method_%d(int, char const*)", i);
		funcs[i] = op_profile_function(p, &fd);
	}
	for (i = 0; i < LOCS; i++) {
		struct op_line_desc ln = { .function = funcs[RND() % FUNCS], .line = i % 500 };

		locs[i] = op_profile_location(p, maps[i % PROCS], 0x400000 + 16 * (uint64_t)i, &ln,
					      1, OP_FRAME_NATIVE);
	}
	for (i = 0; i < SAMPLES; i++) {
		struct op_sample_desc s = { .process = &procs[i % PROCS],
					    .tid = 1000 + i % 400,
					    .thread_name = names[i % PROCS],
					    .cpu = i % 2,
					    .timestamp_ns = FX_T0 + (uint64_t)i * 1000 };

		for (j = 0; j < DEPTH; j++)
			stack[j] = locs[RND() % LOCS];
		s.stack = op_profile_stack(p, stack, DEPTH);
		REQUIRE(op_profile_add_sample(p, &s) == 0);
	}
	REQUIRE(p->n_samples - 1 == SAMPLES);
	for (rep = 0; rep < reps; rep++) {
		t0 = now_s();
		REQUIRE(op_encode_pprof(p, &buf, &plen) == 0);
		t_pprof += now_s() - t0;
		if (!rep) {
			uint8_t *raw = gunzip(buf, plen, &rawlen);

			REQUIRE(raw);
			free(raw);
		}
		free(buf);
		t0 = now_s();
		REQUIRE(op_encode_otlp(p, &buf, &olen) == 0);
		t_otlp += now_s() - t0;
		free(buf);
	}
	printf("bench: %d samples, depth %d, %u locations, %u functions, %d processes "
	       "(builder %zu KiB)\n",
	       SAMPLES, DEPTH, p->n_locations - 1, p->n_functions - 1, PROCS,
	       op_profile_memory(p) / 1024);
	printf("bench: pprof %.2f ms, %zu bytes gzipped (%zu raw); otlp %.2f ms, %zu bytes\n",
	       t_pprof * 1000 / reps, plen, rawlen, t_otlp * 1000 / reps, olen);
	/* generous bounds: catch a quadratic encoder, not a slow machine */
	CHECK(t_pprof / reps < 1.0);
	CHECK(t_otlp / reps < 1.0);
	op_profile_free(p);
#undef RND
}

int main(void)
{
	test_pprof();
	test_otlp();
	test_no_orphans();
	test_empty();
	test_no_timestamps();
	test_bench();
	return check_done();
}

// SPDX-License-Identifier: Apache-2.0
/*
 * Fuzz the profile builder and both encoders (lib/profile/profile.c, pprof.c, otlp.c). The input is
 * a little program of builder calls (strings, mappings, functions, locations with inline
 * lines, stacks, samples of a few processes, with arbitrary - also invalid - indices); the
 * profile is encoded as pprof and as OTLP and decoded back with the protobuf-c code generated
 * from proto/. Invariants: both decode; the sample counts equal the samples the builder
 * accepted; every index in the output points inside its table.
 */
#include <stdbool.h>

#include "fuzz.h"
#include "opentelemetry/profiles_service.pb-c.h"
#include "pprof/profile.pb-c.h"
#include "profile/profile.h"

typedef Perftools__Profiles__Profile PProf;
typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest OReq;
typedef Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary ODict;

#define NSTR 8

static const char *const words[NSTR] = {
	"", "main", "/usr/lib/libc.so.6", "_ZN3foo3barEv", "[vdso]", "é\xff\x01", "a b c", "x",
};

static char scratch[NSTR][64];

/* A string: one of a few fixed ones, or up to 63 input bytes (NUL-terminated). */
static const char *take_str(struct fuzz_in *in, int slot)
{
	uint8_t k = fuzz_take(in, 1);
	size_t n;

	if (k < 0x80)
		return k % 4 == 0 ? NULL : words[k % NSTR];
	n = k % 64;
	if (n > in->n)
		n = in->n;
	memcpy(scratch[slot], in->p, n);
	scratch[slot][n] = '\0';
	in->p += n;
	in->n -= n;
	return scratch[slot];
}

static uint32_t pick(struct fuzz_in *in, const uint32_t *have, size_t n)
{
	uint8_t k = fuzz_take(in, 1);

	if (k >= 0xf0)
		return k == 0xff ? UINT32_MAX - 1 : k - 0xf0 + 1000; /* likely invalid */
	return n ? have[k % n] : 0;
}

static void check_pprof(const uint8_t *buf, size_t len, uint64_t want)
{
	size_t rawlen;
	uint8_t *raw = fuzz_gunzip(buf, len, &rawlen);
	uint64_t n = 0;
	PProf *pp;

	FUZZ_ASSERT(raw);
	pp = perftools__profiles__profile__unpack(NULL, rawlen, raw);
	FUZZ_ASSERT(pp);
	FUZZ_ASSERT(pp->n_string_table >= 1 && pp->string_table[0][0] == '\0');
	for (size_t i = 0; i < pp->n_sample; i++) {
		const Perftools__Profiles__Sample *s = pp->sample[i];

		FUZZ_ASSERT(s->n_value == pp->n_sample_type && s->n_value >= 1);
		FUZZ_ASSERT(s->value[0] > 0);
		n += s->value[0];
		for (size_t j = 0; j < s->n_location_id; j++) {
			bool found = false;

			for (size_t k = 0; k < pp->n_location && !found; k++)
				found = pp->location[k]->id == s->location_id[j];
			FUZZ_ASSERT(found);
		}
		for (size_t j = 0; j < s->n_label; j++) {
			FUZZ_ASSERT(s->label[j]->key > 0 &&
				    (size_t)s->label[j]->key < pp->n_string_table);
			FUZZ_ASSERT(s->label[j]->str >= 0 &&
				    (size_t)s->label[j]->str < pp->n_string_table);
		}
	}
	for (size_t k = 0; k < pp->n_function; k++)
		FUZZ_ASSERT(pp->function[k]->name >= 0 &&
			    (size_t)pp->function[k]->name < pp->n_string_table);
	FUZZ_ASSERT(n == want);
	perftools__profiles__profile__free_unpacked(pp, NULL);
	free(raw);
}

static void check_otlp(const uint8_t *buf, size_t len, uint64_t want)
{
	OReq *r =
		opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__unpack(
			NULL, len, buf);
	const ODict *d;
	uint64_t n = 0;

	FUZZ_ASSERT(r);
	d = r->dictionary;
	FUZZ_ASSERT(d || !r->n_resource_profiles);
	for (size_t i = 0; i < r->n_resource_profiles; i++) {
		const typeof(**r->resource_profiles) *rp = r->resource_profiles[i];

		for (size_t j = 0; j < rp->n_scope_profiles; j++) {
			for (size_t k = 0; k < rp->scope_profiles[j]->n_profiles; k++) {
				const typeof(**rp->scope_profiles[j]->profiles) *pr =
					rp->scope_profiles[j]->profiles[k];

				for (size_t m = 0; m < pr->n_samples; m++) {
					const typeof(**pr->samples) *s = pr->samples[m];

					FUZZ_ASSERT(s->stack_index >= 0 &&
						    (size_t)s->stack_index < d->n_stack_table);
					for (size_t a = 0; a < s->n_attribute_indices; a++)
						FUZZ_ASSERT(s->attribute_indices[a] >= 0 &&
							    (size_t)s->attribute_indices[a] <
								    d->n_attribute_table);
					n += s->n_values ? (uint64_t)s->values[0]
							 : s->n_timestamps_unix_nano;
				}
			}
		}
	}
	if (d) {
		for (size_t i = 0; i < d->n_stack_table; i++)
			for (size_t j = 0; j < d->stack_table[i]->n_location_indices; j++)
				FUZZ_ASSERT(d->stack_table[i]->location_indices[j] >= 0 &&
					    (size_t)d->stack_table[i]->location_indices[j] <
						    d->n_location_table);
		for (size_t i = 0; i < d->n_location_table; i++) {
			FUZZ_ASSERT(d->location_table[i]->mapping_index >= 0 &&
				    (size_t)d->location_table[i]->mapping_index <
					    d->n_mapping_table);
			for (size_t j = 0; j < d->location_table[i]->n_lines; j++)
				FUZZ_ASSERT(d->location_table[i]->lines[j]->function_index >= 0 &&
					    (size_t)d->location_table[i]->lines[j]->function_index <
						    d->n_function_table);
		}
		for (size_t i = 0; i < d->n_function_table; i++)
			FUZZ_ASSERT(d->function_table[i]->name_strindex >= 0 &&
				    (size_t)d->function_table[i]->name_strindex <
					    d->n_string_table);
	}
	FUZZ_ASSERT(n == want);
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__free_unpacked(
		r, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct op_profile_opts po = { .period_ns = 1000000,
				      .start_ns = 1700000000000000000ull,
				      .scope_name = "fuzz",
				      .scope_version = "0" };
	static uint32_t maps[64], funcs[64], locs[256], stacks[64];
	size_t n_maps = 0, n_funcs = 0, n_locs = 0, n_stacks = 0;
	struct fuzz_in in = { data, size };
	struct op_profile *p = op_profile_new(&po);
	uint64_t accepted = 0;
	uint8_t *out;
	size_t len;
	int steps = 0;

	FUZZ_ASSERT(p);
	while (in.n && steps++ < 2000) {
		switch (fuzz_take(&in, 1) % 6) {
		case 0:
			(void)op_profile_string(p, take_str(&in, 0));
			break;
		case 1: {
			struct op_mapping_desc m = {
				.memory_start = fuzz_take(&in, 4) << 12,
				.filename = take_str(&in, 0),
				.build_id_gnu = take_str(&in, 1),
				.build_id_htlhash = take_str(&in, 2),
				.has_functions = fuzz_take(&in, 1) & 1,
			};
			uint32_t i;

			m.memory_limit = m.memory_start + (fuzz_take(&in, 2) << 12);
			m.file_offset = fuzz_take(&in, 2) << 12;
			i = op_profile_mapping(p, &m);
			if (i != OP_PROFILE_ERR && n_maps < 64)
				maps[n_maps++] = i;
			break;
		}
		case 2: {
			struct op_function_desc f = { .name = take_str(&in, 0),
						      .system_name = take_str(&in, 1),
						      .filename = take_str(&in, 2),
						      .start_line =
							      (int64_t)fuzz_take(&in, 2) - 5 };
			uint32_t i = op_profile_function(p, &f);

			if (i != OP_PROFILE_ERR && n_funcs < 64)
				funcs[n_funcs++] = i;
			break;
		}
		case 3: {
			struct op_line_desc lines[4];
			size_t nl = fuzz_take(&in, 1) % 5;
			uint32_t m = pick(&in, maps, n_maps), i;
			uint64_t addr = fuzz_take(&in, 6);
			enum op_frame_type type = fuzz_take(&in, 1) % 4;

			for (size_t k = 0; k < nl; k++) {
				lines[k].function = pick(&in, funcs, n_funcs);
				lines[k].line = (int64_t)fuzz_take(&in, 2);
				lines[k].column = 0;
			}
			i = op_profile_location(p, m, addr, lines, nl, type);
			if (i != OP_PROFILE_ERR && n_locs < 256)
				locs[n_locs++] = i;
			break;
		}
		case 4: {
			uint32_t l[16], i;
			size_t n = fuzz_take(&in, 1) % 17;

			for (size_t k = 0; k < n; k++)
				l[k] = pick(&in, locs, n_locs);
			i = op_profile_stack(p, l, n);
			if (i != OP_PROFILE_ERR && n_stacks < 64)
				stacks[n_stacks++] = i;
			break;
		}
		case 5: {
			uint8_t who = fuzz_take(&in, 1);
			struct op_process_desc pd = {
				.pid = who % 5 + (who & 0x80 ? -1 : 1),
				.executable_name = take_str(&in, 0),
				.executable_path = who & 0x40 ? take_str(&in, 1) : NULL,
				.container_id = who & 0x20 ? take_str(&in, 2) : NULL,
			};
			struct op_sample_desc s = {
				.stack = pick(&in, stacks, n_stacks),
				.process = &pd,
				.tid = (int32_t)fuzz_take(&in, 2),
				.thread_name = take_str(&in, 3),
				.cpu = (int32_t)(fuzz_take(&in, 1) % 4),
				.timestamp_ns = fuzz_take(&in, 1) == 0
							? 0
							: po.start_ns + fuzz_take(&in, 4) * 1000,
			};

			if (op_profile_add_sample(p, &s) == 0)
				accepted++;
			break;
		}
		}
	}
	FUZZ_ASSERT(op_profile_sample_count(p) == accepted);
	op_profile_set_end(p, po.start_ns + 5000000000ull);
	FUZZ_ASSERT(op_profile_memory(p) > 0);

	FUZZ_ASSERT(op_encode_pprof(p, &out, &len) == 0);
	check_pprof(out, len, accepted);
	free(out);
	FUZZ_ASSERT(op_encode_otlp(p, &out, &len) == 0);
	check_otlp(out, len, accepted);
	free(out);
	op_profile_free(p);
	return 0;
}

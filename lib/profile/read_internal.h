/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by the profile readers and writers (read*.c, write*.c, semconv.c) only. */
#ifndef OTELPROF_PROFILE_READ_INTERNAL_H
#define OTELPROF_PROFILE_READ_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#include <protobuf-c/protobuf-c.h>

#include "opentelemetry/profiles_service.pb-c.h"
#include "profile/data.h"

/* A bump allocator for protobuf-c: a decoded message is freed in one go. */
struct op_arena {
	struct op_arena_blk *head;
	size_t used; /* bytes handed out, bounded by op_read_max_bytes * 4 */
	bool full;
};

void *op_arena_alloc(struct op_arena *a, size_t n);
void op_arena_free(struct op_arena *a);
/* A ProtobufCAllocator over @a. */
ProtobufCAllocator op_arena_allocator(struct op_arena *a);

/* Set @err (printf style); returns -1. */
int op_errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest
	OpOtlpRequest;

/* The OTLP import shared by the protobuf and the JSON readers. */
int op_import_otlp(struct op_data *d, const OpOtlpRequest *req, const char *where, char *err,
		   size_t errlen);

/*
 * pprof labels <-> OTLP attributes (semconv.c). A pprof label (key, str or num + unit)
 * becomes an attribute and says whether it belongs to the resource (the process) or to the
 * sample. The writer maps back: op_label_key() gives the pprof key of an attribute key and
 * the unit to write for a number without one.
 */
uint32_t op_label_to_attr(struct op_data *d, const char *key, const char *str, int64_t num,
			  const char *unit, bool is_num, bool *resource);
const char *op_label_key(const char *attr_key, const char **num_unit);

/* The kind of a pprof build id string: "gnu", "go" or "htlhash" (see semconv.c). */
const char *op_build_id_kind(const char *s);

/* OTLP attribute keys. */
#define OP_KEY_FRAME_TYPE "profile.frame.type"
#define OP_KEY_BID_GNU	  "process.executable.build_id.gnu"
#define OP_KEY_BID_GO	  "process.executable.build_id.go"
#define OP_KEY_BID_HTL	  "process.executable.build_id.htlhash"

/* Writers: first-use remapping of one op_data table into a compact output table. */
struct op_wmap {
	uint32_t *map;	 /* op_data index -> output index (0 = not used yet) */
	uint32_t *order; /* output index -> op_data index; order[0] = 0 */
	uint32_t n;	 /* output entries, the zero entry included */
};

int op_wmap_init(struct op_wmap *m, uint32_t n_in);
void op_wmap_free(struct op_wmap *m);

static inline uint32_t op_wmap_use(struct op_wmap *m, uint32_t i)
{
	if (!i)
		return 0;
	if (!m->map[i]) {
		m->map[i] = m->n;
		m->order[m->n++] = i;
	}
	return m->map[i];
}

/*
 * The value column a pprof CPU profile has besides samples/count (cpu/nanoseconds = count x
 * period): for the pprof writer, the type to add (1) or not (0); for the OTLP writer, whether
 * type @t is that derived column (drop it).
 */
bool op_pprof_adds_period_column(const struct op_data *d);
bool op_type_is_derived(const struct op_data *d, uint32_t t);

/* Per mapping (op_data index): the has_* flags seen in its frames, for formats without them. */
void op_mapping_flags_from_frames(const struct op_data *d, uint8_t (*flags)[4]);

/* Samples' timestamps grouped: ts[off[s] .. off[s + 1]) are sample s's. */
int op_group_timestamps(const struct op_data *d, uint32_t **off, uint64_t **ts);

#endif

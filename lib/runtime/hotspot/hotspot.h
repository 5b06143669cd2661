/* SPDX-License-Identifier: Apache-2.0 */
/* Java (HotSpot) frames (hotspot.c): the runtime that fills hotspot_procs and names the frames. */
#ifndef OTELPROF_HOTSPOT_RUNTIME_H
#define OTELPROF_HOTSPOT_RUNTIME_H

#include <stdint.h>

struct op_runtime;
struct op_runtime_env;

struct op_runtime *op_hotspot_runtime_new(const struct op_runtime_env *env);

/* Why a JVM or a Java frame fell back to native frames, or was not named; counted. */
enum op_hotspot_reason {
	OP_HOTSPOT_NOT_READY,	   /* the JVM's tables not filled yet (it is starting) */
	OP_HOTSPOT_NO_SYMBOLS,	   /* libjvm.so without the gHotSpotVM* symbols */
	OP_HOTSPOT_UNKNOWN_LAYOUT, /* a field the walk needs missing from the tables */
	OP_HOTSPOT_BAD_TABLES,	   /* tables or code heaps that make no sense, or unreadable */
	OP_HOTSPOT_MAP_FULL,	   /* hotspot_procs had no room */
	OP_HOTSPOT_STALE_METHOD,   /* a frame's Method* no longer holds that method: unnamed */
	/* counted in BPF (enum op_hs_err): the walk's fallbacks */
	OP_HOTSPOT_WALK_NO_PROC,
	OP_HOTSPOT_WALK_NO_HEAP,
	OP_HOTSPOT_WALK_NO_BLOB,
	OP_HOTSPOT_WALK_READ,
	OP_HOTSPOT_WALK_INTERP_FP,
	OP_HOTSPOT_WALK_BAD_RA,
	OP_HOTSPOT_WALK_DEPTH,
	OP_HOTSPOT_REASON_MAX,
};

struct op_hotspot_stats {
	uint64_t jvms;	/* JVMs whose frames are walked now */
	uint64_t named; /* methods named (cache misses) */
	uint64_t reasons[OP_HOTSPOT_REASON_MAX];
};
void op_hotspot_stats(const struct op_runtime *rt, struct op_hotspot_stats *st);
const char *op_hotspot_reason_name(enum op_hotspot_reason r);

#endif

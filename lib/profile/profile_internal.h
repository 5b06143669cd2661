/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internals of the profile builder shared with its encoders (pprof.c, otlp.c) and the unit
 * tests. Nothing outside those files includes this.
 *
 * Every table is a vector whose element 0 is the zero entry; an index is a position in it.
 * Strings are interned into one table that holds every string the caller handed in (names,
 * paths, build ids, attribute keys and values, thread names). The encoders emit only what
 * their format references, remapping indices on first use (struct op_remap), so neither
 * output carries an unreferenced ("orphan") dictionary entry whatever the caller interned.
 */
#ifndef OTELPROF_PROFILE_INTERNAL_H
#define OTELPROF_PROFILE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"

/* Open-addressing hash index over one table: slots hold (entry index, hash); 0 = empty. */
struct op_hslot {
	uint32_t idx;
	uint32_t hash;
};

struct op_htab {
	struct op_hslot *slots;
	uint32_t mask; /* capacity - 1; capacity is a power of two */
	uint32_t used;
};

struct op_str {
	const char *s;
	uint32_t len;
};

enum op_attr_kind {
	OP_ATTR_STR = 1,
	OP_ATTR_INT = 2,
};

struct op_attr {
	uint32_t key; /* string index */
	uint32_t kind;
	uint32_t str;	    /* OP_ATTR_STR: string index of the value */
	int64_t num;	    /* OP_ATTR_INT */
	uint32_t label_key; /* a label's key as pprof shows it (no OTLP prefix), else 0 */
};

#define OP_MAPPING_MAX_ATTRS 3

struct op_mapping {
	uint64_t memory_start;
	uint64_t memory_limit;
	uint64_t file_offset;
	uint32_t filename; /* string indices */
	uint32_t build_id_gnu;
	uint32_t build_id_go;
	uint32_t build_id_htlhash;
	uint8_t has_functions;
	uint8_t has_line_numbers;
	uint8_t has_inline_frames;
	uint8_t n_attrs;
	uint32_t attrs[OP_MAPPING_MAX_ATTRS]; /* attribute indices (build ids) */
};

struct op_function {
	uint32_t name; /* string indices */
	uint32_t system_name;
	uint32_t filename;
	int64_t start_line;
};

struct op_line {
	uint32_t function;
	int64_t line;
	int64_t column;
};

struct op_location {
	uint64_t address;
	uint32_t mapping;
	uint32_t type;	     /* enum op_frame_type */
	uint32_t first_line; /* into op_profile.lines */
	uint32_t n_lines;
	uint32_t attr; /* profile.frame.type attribute */
};

struct op_stack {
	uint32_t first; /* into op_profile.stack_locs */
	uint32_t n;
};

/* A deduplicated list of attribute indices (a sample's labels, a process's resource). */
struct op_attrset {
	uint32_t first; /* into op_profile.set_attrs */
	uint32_t n;
};

/* A sample's link to a span. */
struct op_link {
	uint8_t trace_id[16];
	uint8_t span_id[8];
};

struct op_process {
	int32_t pid;
	uint32_t exe_name; /* string indices; 0 = unknown */
	uint32_t exe_path;
	uint32_t container_id;
	uint32_t resource;     /* attrset: more resource attributes, 0 = none */
	uint32_t first_sample; /* encoders: scratch */
	uint32_t n_samples;
	uint64_t events;
};

#define OP_SAMPLE_ATTRS 4

struct op_psample {
	uint32_t process; /* index into processes (1-based, 0 unused) */
	uint32_t stack;
	uint32_t thread_name; /* string index */
	int32_t tid;
	int32_t cpu;
	uint32_t count;
	uint32_t attrs[OP_SAMPLE_ATTRS]; /* thread.name, thread.id, cpu.logical_number, thread.state
					  */
	uint32_t kind;			 /* enum op_sample_kind */
	uint32_t thread_state;		 /* string index, 0 = none */
	int64_t value;			 /* OP_SAMPLE_OFF_CPU: sum of the events' values */
	uint32_t labels;		 /* attrset of label attributes, 0 = none */
	uint32_t link;			 /* links index, 0 = none */
};

/* Well-known strings, interned when the profile is created. */
enum op_wk {
	OP_WK_SAMPLES,
	OP_WK_COUNT,
	OP_WK_CPU,
	OP_WK_NANOSECONDS,
	OP_WK_PID,
	OP_WK_TID,
	OP_WK_THREAD_NAME,
	OP_WK_EXE_NAME,
	OP_WK_CPU_LABEL,
	OP_WK_THREAD_ID,
	OP_WK_CPU_LOGICAL,
	OP_WK_FRAME_TYPE,
	OP_WK_BUILD_ID_GNU,
	OP_WK_BUILD_ID_GO,
	OP_WK_BUILD_ID_HTLHASH,
	OP_WK_KERNEL_MAPPING,
	OP_WK_NATIVE,
	OP_WK_KERNEL,
	OP_WK_GO,
	OP_WK_ABORT,
	OP_WK_CPYTHON, /* OP_WK_NATIVE + enum op_frame_type: in that order */
	OP_WK_V8JS,
	OP_WK_HOTSPOT,
	OP_WK_ID,
	OP_WK_OFF_CPU,
	OP_WK_THREAD_STATE,
	OP_WK_ALLOC_OBJECTS, /* OP_WK_ALLOC_OBJECTS - 2 + enum op_sample_kind: in that order */
	OP_WK_ALLOC_SPACE,
	OP_WK_INUSE_OBJECTS,
	OP_WK_INUSE_SPACE,
	OP_WK_BYTES,
	OP_WK_EVENTS, /* probe hits: events/count, the upstream profiler's sample type */
	OP_WK_MAX,
};

struct op_arena_block;

struct op_profile {
	struct op_profile_opts opts;
	char *scope_name;
	char *scope_version;
	uint64_t end_ns;
	uint64_t min_ts, max_ts;
	uint64_t events;
	size_t bytes; /* memory held, for op_profile_memory() */

	struct op_arena_block *arena;

	struct op_str *strs;
	uint32_t n_strs, cap_strs;
	struct op_htab h_strs;

	struct op_mapping *mappings;
	uint32_t n_mappings, cap_mappings;
	struct op_htab h_mappings;
	uint32_t kernel_mapping; /* 0 until the first kernel frame without a mapping */

	struct op_function *functions;
	uint32_t n_functions, cap_functions;
	struct op_htab h_functions;

	struct op_location *locations;
	uint32_t n_locations, cap_locations;
	struct op_htab h_locations;
	struct op_line *lines;
	uint32_t n_lines, cap_lines;

	struct op_stack *stacks;
	uint32_t n_stacks, cap_stacks;
	struct op_htab h_stacks;
	uint32_t *stack_locs;
	uint32_t n_stack_locs, cap_stack_locs;

	struct op_attr *attrs;
	uint32_t n_attrs, cap_attrs;
	struct op_htab h_attrs;

	struct op_attrset *sets;
	uint32_t n_sets, cap_sets;
	struct op_htab h_sets;
	uint32_t *set_attrs;
	uint32_t n_set_attrs, cap_set_attrs;

	struct op_link *links;
	uint32_t n_links, cap_links;
	struct op_htab h_links;

	struct op_process *processes;
	uint32_t n_processes, cap_processes;
	struct op_htab h_processes;

	struct op_psample *samples;
	uint32_t n_samples, cap_samples;
	struct op_htab h_samples;

	/* One entry per added sample event: which merged sample, and when. */
	uint32_t *ev_sample;
	uint64_t *ev_ts;
	int64_t *ev_val; /* each event's value, once the first off-CPU event came; else NULL */
	uint32_t n_events, cap_events;

	uint32_t wk[OP_WK_MAX];
};

/* The sample type of a kind with values of its own (not CPU): its type and unit strings. */
static inline void op_kind_type(const struct op_profile *p, unsigned int kind, uint32_t *type,
				uint32_t *unit)
{
	if (kind == OP_SAMPLE_OFF_CPU) {
		*type = p->wk[OP_WK_OFF_CPU];
		*unit = p->wk[OP_WK_NANOSECONDS];
	} else if (kind == OP_SAMPLE_PROBE) {
		*type = p->wk[OP_WK_EVENTS];
		*unit = p->wk[OP_WK_COUNT];
	} else {
		*type = p->wk[OP_WK_ALLOC_OBJECTS - OP_SAMPLE_ALLOC_OBJECTS + kind];
		*unit = kind == OP_SAMPLE_ALLOC_SPACE || kind == OP_SAMPLE_INUSE_SPACE
				? p->wk[OP_WK_BYTES]
				: p->wk[OP_WK_COUNT];
	}
}

/* Lookup helpers for tests and encoders. */
static inline const char *op_profile_str(const struct op_profile *p, uint32_t idx)
{
	return idx < p->n_strs ? p->strs[idx].s : NULL;
}

uint32_t op_profile_attr_str(struct op_profile *p, uint32_t key, uint32_t value);
uint32_t op_profile_attr_int(struct op_profile *p, uint32_t key, int64_t value);
const char *op_frame_type_name(enum op_frame_type t);
/* Intern a list of @n attribute indices as a set (0 for n == 0); OP_PROFILE_ERR on error. */
uint32_t op_profile_attrset(struct op_profile *p, const uint32_t *attrs, size_t n);

/*
 * Encoder view: samples grouped per process, and per kind within it, and each sample's
 * timestamps made contiguous. order[]: sample indices, grouped by process then kind
 * (proc_first/proc_n and pk_first/pk_n index into it, in process order). ts_off[s]..ts_off[s+1]:
 * timestamps of sample s in ts[].
 */
struct op_grouped {
	uint32_t *order;
	uint32_t *ts_off;
	uint64_t *ts;
	int64_t *val;	      /* parallel to ts when the profile has event values, else NULL */
	uint32_t *proc_first; /* per process: first position in order[] */
	uint32_t *proc_n;
	/* per process and kind (index process * OP_SAMPLE_KINDS + kind), within the process's */
	uint32_t *pk_first;
	uint32_t *pk_n;
};
int op_profile_group(const struct op_profile *p, struct op_grouped *g);
void op_grouped_free(struct op_grouped *g);

/* First-use remapping of one table's indices into a compact output table. */
struct op_remap {
	uint32_t *map;	 /* builder index -> output index; 0 = not used (yet) */
	uint32_t *order; /* output index -> builder index; order[0] = 0 */
	uint32_t n;	 /* output entries, the zero entry included */
};

int op_remap_init(struct op_remap *r, uint32_t n_in);
void op_remap_free(struct op_remap *r);

static inline uint32_t op_remap_use(struct op_remap *r, uint32_t idx)
{
	if (!idx)
		return 0;
	if (!r->map[idx]) {
		r->map[idx] = r->n;
		r->order[r->n++] = idx;
	}
	return r->map[idx];
}

/* Duration in ns: end (or the last timestamp) minus start. */
uint64_t op_profile_duration(const struct op_profile *p);

#endif

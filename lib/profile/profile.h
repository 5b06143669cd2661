/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Profile builder: a deduplicated dictionary of strings, mappings, functions, locations,
 * stacks and attributes, plus samples grouped per process. Encoders (pprof.c, otlp.c) read
 * it; nothing else about the wire formats is known here.
 *
 * Indices: every table reserves index 0 for the zero entry, as OTLP requires, so a returned
 * index is never 0 except to mean "none". pprof ids are the same numbers (non-zero, unique).
 * Every add/intern function deduplicates by content and returns the existing index when an
 * equal entry exists. Not thread-safe: the caller serialises.
 */
#ifndef OTELPROF_PROFILE_H
#define OTELPROF_PROFILE_H

#include <stddef.h>
#include <stdint.h>

/* Values of profile.frame.type (OTel semantic conventions). */
enum op_frame_type {
	OP_FRAME_NATIVE = 0,
	OP_FRAME_KERNEL = 1,
	OP_FRAME_GO = 2,
	OP_FRAME_ABORT = 3, /* marker: stack truncated or walk failed; see the function name */
	OP_FRAME_CPYTHON = 4,
	OP_FRAME_V8JS = 5,
	OP_FRAME_HOTSPOT = 6,
	OP_FRAME_TYPE_MAX = 7,
};

struct op_profile;

/*
 * Returned by the index functions below on failure, with errno set: ENOMEM, or EINVAL for
 * an index argument that does not exist in its table.
 */
#define OP_PROFILE_ERR UINT32_MAX

struct op_profile_opts {
	uint64_t period_ns; /* sampling period: 1e9 / frequency */
	uint64_t start_ns;  /* wall-clock (unix) start of the profile */
	const char *scope_name;
	const char *scope_version;
};

struct op_profile *op_profile_new(const struct op_profile_opts *opts);
void op_profile_free(struct op_profile *p);

/* Intern a string; NULL and "" return 0. Returns -1 (as uint32 max) on ENOMEM. */
uint32_t op_profile_string(struct op_profile *p, const char *s);

struct op_mapping_desc {
	uint64_t memory_start;
	uint64_t memory_limit;
	uint64_t file_offset;
	const char *filename;	      /* path as the process sees it */
	const char *build_id_gnu;     /* hex, or NULL */
	const char *build_id_go;      /* Go build id string, or NULL */
	const char *build_id_htlhash; /* hex, or NULL */
	int has_functions;	      /* symbolized */
	int has_line_numbers;
	int has_inline_frames;
};
/*
 * Mappings are equal when all but the has_* flags are; adding an equal one ORs its flags into
 * the existing entry (the flags describe the whole mapping, frames are symbolized one by one).
 */
uint32_t op_profile_mapping(struct op_profile *p, const struct op_mapping_desc *m);

struct op_function_desc {
	const char *name;	 /* demangled, for display */
	const char *system_name; /* raw symbol */
	const char *filename;
	int64_t start_line;
};
uint32_t op_profile_function(struct op_profile *p, const struct op_function_desc *f);

struct op_line_desc {
	uint32_t function; /* index from op_profile_function() */
	int64_t line;
	int64_t column;
};

/*
 * @lines: innermost inlined function first, its callers after; n_lines may be 0.
 * A kernel frame (@type OP_FRAME_KERNEL) with @mapping 0 is put on a shared mapping named
 * "[kernel.kallsyms]". An abort marker (OP_FRAME_ABORT) normally has mapping 0 and one line
 * whose function names the reason (e.g. "[truncated]").
 */
uint32_t op_profile_location(struct op_profile *p, uint32_t mapping, uint64_t address,
			     const struct op_line_desc *lines, size_t n_lines,
			     enum op_frame_type type);

/* @locations: leaf first. */
uint32_t op_profile_stack(struct op_profile *p, const uint32_t *locations, size_t n);

/* A string attribute or label. */
struct op_kv {
	const char *key;
	const char *value;
};

/* Resource attributes of a process beyond its identity, at most. */
#define OP_PROCESS_MAX_RESOURCE 32

/* Per-process resource description; one per pid per profile. */
struct op_process_desc {
	int32_t pid;
	const char *executable_name; /* comm of the thread-group leader or basename of exe */
	const char *executable_path;
	const char *container_id; /* NULL outside containers */
	/* more resource attributes (service.name ...): OTLP resource, pprof sample labels */
	const struct op_kv *resource;
	size_t n_resource;
};

/* OTLP sample attribute key of a label (the upstream eBPF profiler's): prefix + label key. */
#define OP_LABEL_ATTR_PREFIX "process.context.label."

/*
 * What a sample measures. Each kind is its own profile in OTLP (one per process) and its own
 * sample type in pprof.
 */
enum op_sample_kind {
	OP_SAMPLE_CPU = 0,     /* a cpu-clock sample: samples/count, cpu/nanoseconds */
	OP_SAMPLE_OFF_CPU = 1, /* time off the CPU: off_cpu/nanoseconds (value) */
	/* allocations, Go's heap profile types (values: estimates of the whole) */
	OP_SAMPLE_ALLOC_OBJECTS = 2, /* alloc_objects/count */
	OP_SAMPLE_ALLOC_SPACE = 3,   /* alloc_space/bytes */
	OP_SAMPLE_INUSE_OBJECTS = 4, /* inuse_objects/count */
	OP_SAMPLE_INUSE_SPACE = 5,   /* inuse_space/bytes */
	OP_SAMPLE_PROBE = 6, /* a traced function was hit (probe_links): events/count (value 1) */
	OP_SAMPLE_KINDS = 7,
};

struct op_sample_desc {
	uint32_t stack; /* from op_profile_stack() */
	const struct op_process_desc *process;
	int32_t tid;
	const char *thread_name;
	int32_t cpu;
	uint64_t timestamp_ns; /* unix nanoseconds */
	/* labels the thread published: pprof labels, OTLP attributes OP_LABEL_ATTR_PREFIX+key */
	const struct op_kv *labels;
	size_t n_labels;
	enum op_sample_kind kind;
	int64_t value; /* off-CPU: nanoseconds; alloc kinds: objects or bytes; probe: events; not
			  CPU */
	const char *thread_state; /* off-CPU: the state it left the CPU in, or NULL */
	/* the span the sample ran in (an OTLP link), both or neither */
	const uint8_t *trace_id; /* 16 bytes */
	const uint8_t *span_id;	 /* 8 bytes */
};

/*
 * Add one sample. Samples with equal (kind, process, stack, tid, thread name, thread state,
 * cpu, labels, link) are merged, their values summed:
 * their count grows and the timestamp is appended. Returns 0 or -ENOMEM.
 */
int op_profile_add_sample(struct op_profile *p, const struct op_sample_desc *s);

/* Number of samples added (sum of counts). */
uint64_t op_profile_sample_count(const struct op_profile *p);

/* Set the end of the profile (unix ns); duration = end - start. */
void op_profile_set_end(struct op_profile *p, uint64_t end_ns);

/* Bytes of memory the profile holds (tables, indices, strings, events): for bounding it. */
size_t op_profile_memory(const struct op_profile *p);

/*
 * Encoders. On success *out is malloc()ed (free with free()) and *len its size.
 * Return 0, -ENOMEM or -OTELPROF_ERR_ENCODE.
 */
int op_encode_pprof(const struct op_profile *p, uint8_t **out, size_t *len); /* gzipped */
int op_encode_otlp(const struct op_profile *p, uint8_t **out, size_t *len);

#endif

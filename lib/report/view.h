/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A profile as people look at it: frames by name, a call tree (the flamegraph's nodes),
 * binaries, processes and threads, and the samples as (leaf node, thread, values). Built from
 * decoded profiles (profile/data.h): one for a report, two for a diff (base and new share one
 * tree, frames matched by name); the HTML report and diff read it.
 *
 * Frames: one per (displayed name, binary, kind). A frame's name is its function's name, else
 * its system name, else "[binary]" for an unnamed frame in a known binary ("[libc.so.6]",
 * as pprof shows them), else "[unknown]". Inlined functions are frames of their own, their
 * callers first. The call tree starts with one synthetic frame per executable name (kind
 * "process"), so the programs of a whole-system profile are apart at the first level.
 */
#ifndef OTELPROF_REPORT_VIEW_H
#define OTELPROF_REPORT_VIEW_H

#include <stdint.h>

#include "profile/data.h"

enum op_frame_kind {
	OP_KIND_NATIVE,
	OP_KIND_KERNEL,
	OP_KIND_GO,
	OP_KIND_MARKER, /* [truncated], [unwind error: ...] */
	OP_KIND_PROCESS,
	OP_KIND_OTHER, /* interpreted or JIT code: python, v8js, jvm ... */
	OP_KIND_MAX,
};

/* Strings (frame names, paths ...) are the view's own: op_view_s(). */
struct op_vframe {
	uint32_t name;
	uint32_t bin;  /* index into bins; 0 = none */
	uint32_t kind; /* enum op_frame_kind */
	uint32_t file; /* source file of the function, 0 = none */
};

struct op_vbin {
	uint32_t path;
	uint32_t build_id; /* gnu, else htlhash, else go */
};

struct op_vproc {
	int64_t pid; /* -1 = not known */
	uint32_t exe;
	uint32_t service;
	uint32_t pad;
};

struct op_vthread {
	uint32_t proc;
	uint32_t name;
	int64_t tid; /* -1 = not known */
};

struct op_vrec {
	uint32_t node;
	uint32_t thread;
	uint32_t
		profile; /* which of the profiles added (0 for a report; 0 base, 1 new in a diff) */
};

struct op_view {
	struct op_itab strs;   /* NUL-terminated */
	struct op_itab frames; /* struct op_vframe */
	struct op_itab bins;   /* struct op_vbin */
	/* per bin: distinct locations on the sampled stacks, and how many have a name */
	uint32_t *bin_locs, *bin_named;
	struct op_itab procs;	/* struct op_vproc */
	struct op_itab threads; /* struct op_vthread */
	/* the call tree in preorder, children by name; node 0 is the root */
	uint32_t *parent, *frame, *depth;
	uint32_t n_nodes;
	/* samples aggregated by (leaf node, thread, profile): values[rec * n_types + type] */
	struct op_vrec *recs;
	int64_t *values;
	uint32_t n_recs;
	uint32_t n_types;
	uint32_t type_names[16]; /* strings: "samples/count" ... */
	/* building */
	struct op_itab nodes, rec_index;
	uint32_t *b_parent, *b_frame;
	uint32_t cap_nodes;
	size_t cap_values;
	/* no synthetic process frame at the top (a diff: the two runs' processes differ) */
	bool no_process_frames;
};

/* A view whose records carry @n_types values (at most 16). NULL on ENOMEM. */
struct op_view *op_view_new(uint32_t n_types);
/*
 * Add the samples of @d as profile @profile; @types[i] is the type of @d whose values become
 * the view's value i. 0 or -ENOMEM.
 */
int op_view_add(struct op_view *v, const struct op_data *d, const uint32_t *types,
		uint32_t profile);
/* Lay the tree out in preorder (children by name); after the last op_view_add(). */
int op_view_finish(struct op_view *v);
void op_view_free(struct op_view *v);

static inline const char *op_view_s(const struct op_view *v, uint32_t i)
{
	return i < v->strs.n ? (const char *)op_itab_get(&v->strs, i, NULL) : "";
}

static inline const struct op_vframe *op_view_frame(const struct op_view *v, uint32_t i)
{
	return op_itab_get(&v->frames, i, NULL);
}

static inline const struct op_vbin *op_view_bin(const struct op_view *v, uint32_t i)
{
	return op_itab_get(&v->bins, i, NULL);
}

const char *op_frame_kind_name(enum op_frame_kind k);

/*
 * The frame names of a stack, root first (inlined callers before their callees), through
 * @emit; the synthetic process frame is not included. For folded output and diffs.
 */
void op_stack_frames(const struct op_data *d, uint32_t stack,
		     void (*emit)(void *ctx, const char *name), void *ctx);

#endif

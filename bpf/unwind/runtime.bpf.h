/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What a language runtime's unwinder (bpf/runtime/<name>.bpf.h) gets from the native walk, and
 * how it hands back. The native walk (unwind/native.bpf.h) tail-calls runtime k's program when
 * a frame's PC lies in a mapping user space marked with runtime k (op_unwind_mapping.runtime,
 * set by lib/runtime/<name>/ through lib/unwind/runtime.h). At that point the walk state
 * (struct unwind_scratch) holds the registers of that frame (pc, sp, bp; all general registers
 * only when it is the leaf), nothing of it has been recorded yet, and s->mapping is its mapping.
 *
 * A runtime program is written once as
 *
 *     static __always_inline int python_walk(void *ctx, void *progs, struct op_rt_walk *w)
 *
 * and declared for each chain with OP_RUNTIME_PROGRAM(python, cpu, OP_CHAIN_CPU, "perf_event"),
 * which gives the program unwind_python_cpu that user space puts in slot OP_RUNTIME_PYTHON of
 * cpu_progs. It records frames with op_rt_push() (two slots each, tagged with its kind; see
 * OP_FRAME_TAG in bpf/types.h), may keep state across its runs within one walk in
 * s->rt_state[] (zero at the start of every walk), and ends with one of:
 *   op_rt_step_native()  - the frame in s->r is an ordinary native frame that the runtime has
 *                          replaced by its own (an interpreter loop): unwind it with its CFI
 *                          row, without recording it and without coming back for it;
 *   op_rt_keep_native()  - the frame is not the runtime's to replace (a helper function in
 *                          the claimed range, or a layout it cannot read): record it as
 *                          native and go on;
 *   op_rt_resume_native() - the runtime unwound its frames itself and left s->r at the first
 *                          native frame above them (JIT code): the native walk goes on there;
 *   op_rt_finish()       - the stack ends here (or cannot go on: set the trace's unwind_error).
 * Every one of them also ends the walk cleanly (the record is submitted) when the tail-call
 * budget is spent (33 tail calls per event, the kernel's limit, less a margin).
 *
 * Interpreters (one native loop frame runs one or several interpreted frames, which the
 * runtime finds in its own frame chain) should not pay a tail call per loop frame: a 50-deep
 * Python 3.10 stack has 50 loop frames. op_rt_queue() queues the frames for the loop frames
 * still to come, in groups (one group per loop frame, in walk order), and the native walk hands
 * the next group to each frame of that runtime's code it meets, stepping it natively, with no
 * tail call; the runtime is called again only when the queue runs dry (it can refill it from
 * s->rt_state[]). A runtime must never record a frame it did not see: on a read that fails
 * or a layout it does not recognise, it steps natively (the frame keeps its native name) and
 * counts why in its own counters.
 */
#ifndef OTELPROF_RUNTIME_BPF_H
#define OTELPROF_RUNTIME_BPF_H

#include "unwind/native.bpf.h"

struct op_rt_walk {
	struct op_trace *t;
	struct unwind_scratch *s;
	struct op_unwind_proc *proc;
};

/* The walk state of @chain as the runtime program finds it. False: nothing to do (not reached). */
static __always_inline bool op_rt_begin(struct op_rt_walk *w, __u32 chain)
{
	w->t = bpf_map_lookup_elem(&scratch, &chain);
	w->s = bpf_map_lookup_elem(&unwind_scratch, &chain);
	if (!w->t || !w->s)
		return false;
	w->proc = bpf_map_lookup_elem(&unwind_procs, &w->s->pid);
	return true;
}

/*
 * Record one runtime frame (@payload: at most 56 bits, e.g. an object's address; @data: the
 * runtime's own second word). False when the trace is full (it is then marked truncated).
 */
static __always_inline bool op_rt_push(struct op_rt_walk *w, __u32 kind, __u64 payload, __u64 data)
{
	struct op_trace *t = w->t;
	__u32 idx;

	if (w->s->n + 2 > OP_MAX_USER_FRAMES) {
		t->flags |= OP_TRACE_USER_TRUNCATED;
		return false;
	}
	idx = t->n_kernel + w->s->n;
	asm volatile("" : "+r"(idx));
	if (idx >= OP_MAX_KERNEL_FRAMES + OP_MAX_USER_FRAMES - 1)
		return false;
	t->frames[idx] = OP_FRAME_TAG(kind) | OP_FRAME_PAYLOAD(payload);
	t->frames[idx + 1] = data;
	w->s->n += 2;
	return true;
}

/* End the walk here and send the record. */
static __always_inline int op_rt_finish(struct op_rt_walk *w)
{
	w->t->n_user = w->s->n;
	return submit_trace(w->t, w->s->refresh);
}

/* The frame in s->r is not the runtime's to replace: record it as native and go on. */
static __always_inline int op_rt_keep_native(void *ctx, void *progs, struct op_rt_walk *w)
{
	w->s->step_only = OP_STEP_ONLY_RECORD;
	unwind_tail_call(ctx, progs, w->s, OP_CHAIN_NATIVE);
	w->t->unwind_error = OTELPROF_UNWIND_VERIFIER_LIMIT;
	return op_rt_finish(w);
}

/*
 * Queue one frame for a loop frame to come; @end_group: the last of that loop frame's frames.
 * False when the queue is full (the walk calls the runtime again when it runs dry).
 */
static __always_inline bool op_rt_queue(struct op_rt_walk *w, __u32 kind, __u64 payload, __u64 data,
					bool end_group)
{
	struct unwind_scratch *s = w->s;
	__u32 tl = s->pend_tail;

	if (s->pend_runtime != kind) {
		s->pend_runtime = kind;
		s->pend_head = s->pend_tail = tl = 0;
		s->pend_ends = 0;
	}
	if (tl + 2 > OP_RT_PENDING_SLOTS)
		return false;
	asm volatile("" : "+r"(tl)); /* keep the mask below for the verifier */
	tl &= OP_RT_PENDING_SLOTS - 2;
	s->pend[tl] = OP_FRAME_TAG(kind) | OP_FRAME_PAYLOAD(payload);
	s->pend[tl + 1] = data;
	if (end_group)
		s->pend_ends |= 1ull << (tl / 2);
	else
		s->pend_ends &= ~(1ull << (tl / 2));
	s->pend_tail = tl + 2;
	return true;
}

/* Whether frames are queued (op_rt_queue) and not handed out yet. */
static __always_inline bool op_rt_queued(const struct op_rt_walk *w)
{
	return w->s->pend_head < w->s->pend_tail;
}

/*
 * Hand out the first queued group to the frame in s->r and step it natively: what the runtime
 * program does after filling the queue at the loop frame that called it.
 */
static __always_inline int op_rt_step_queued(void *ctx, void *progs, struct op_rt_walk *w)
{
	/* the walk hands out the group: it meets this loop frame first */
	if (!op_rt_queued(w))
		return op_rt_keep_native(ctx, progs, w);
	w->s->step_only = OP_STEP_ONLY_PENDING;
	unwind_tail_call(ctx, progs, w->s, OP_CHAIN_INTERP);
	w->t->unwind_error = OTELPROF_UNWIND_VERIFIER_LIMIT;
	return op_rt_finish(w);
}

/* Hand the frame in s->r back to the native walk: unwound by its CFI row, not recorded. */
static __always_inline int op_rt_step_native(void *ctx, void *progs, struct op_rt_walk *w)
{
	w->s->step_only = OP_STEP_ONLY_STEP;
	unwind_tail_call(ctx, progs, w->s, OP_CHAIN_NATIVE);
	w->t->unwind_error = OTELPROF_UNWIND_VERIFIER_LIMIT;
	return op_rt_finish(w);
}

/*
 * Go on with the native walk from s->r, which the runtime set to the first native frame
 * above its own (pc a return address: exact_pc 0, leaf 0; bp_valid as it knows).
 */
static __always_inline int op_rt_resume_native(void *ctx, void *progs, struct op_rt_walk *w)
{
	w->s->step_only = OP_STEP_ONLY_NONE;
	unwind_tail_call(ctx, progs, w->s, OP_CHAIN_NATIVE);
	w->t->unwind_error = OTELPROF_UNWIND_VERIFIER_LIMIT;
	return op_rt_finish(w);
}

/*
 * Declare runtime @rt's program for chain @chain (program type @sec): unwind_<rt>_<chain>,
 * calling @rt##_walk(ctx, <chain>_progs, walk). lib/unwind/unwind.c finds it by that name.
 */
#define OP_RUNTIME_PROGRAM(rt, chain, chain_id, sec)                  \
	SEC(sec)                                                      \
	int unwind_##rt##_##chain(void *ctx)                          \
	{                                                             \
		struct op_rt_walk w;                                  \
                                                                      \
		if (!op_rt_begin(&w, chain_id))                       \
			return 0;                                     \
		if (!w.proc) {                                        \
			w.t->unwind_error = OTELPROF_UNWIND_NO_TABLE; \
			w.s->refresh = 1;                             \
			return op_rt_finish(&w);                      \
		}                                                     \
		return rt##_walk(ctx, &chain##_progs, &w);            \
	}

#endif

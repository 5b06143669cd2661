/* SPDX-License-Identifier: GPL-2.0 */
/*
 * CPython 3.8-3.13: the native walk hands this program a frame of the evaluation loop
 * (_PyEval_EvalFrameDefault, the range lib/runtime/python claims). The first time in a walk,
 * it finds the sampled thread's thread state (by its pthread id, which is the thread pointer on
 * x86-64 glibc: PyThreadState.thread_id, in the interpreter's list of thread states, so a
 * thread that does not hold the GIL is found too; remembered per thread in python_threads and
 * checked on every use) and starts at its current frame. Each eval-loop call runs one group of
 * Python frames: up to 3.10 exactly one PyFrameObject; from 3.11 the _PyInterpreterFrames
 * down to and including the one marked is_entry (3.11), or up to the C stack's shim frame
 * (owner 3, 3.12 and 3.13). The program records the group of the loop frame it was called
 * for, queues the groups of the loop frames still to come (op_rt_queue: the native walk gives
 * each its group with no tail call), and steps the loop frame without recording it. A frame is
 * the code object's address and (first line << 32 | the instruction's byte offset): user
 * space checks the first line to know the object at that address is still that code.
 *
 * A read that fails, or a chain that runs out before the loop frames do (it changed under the
 * walk), leaves the remaining loop frames native, counted in python_counters by reason.
 */
#ifndef OTELPROF_PYTHON_BPF_H
#define OTELPROF_PYTHON_BPF_H

#include "unwind/runtime.bpf.h"
#include "sample/labels.bpf.h"

#define PY_MAX_THREADS	  256 /* thread states looked at to find the sampled thread's */
#define PY_MAX_GROUP	  64  /* frames recorded for one loop frame */
#define PY_CHAIN_DONE	  1   /* rt_state[0]: the chain ended (rt_state[1]: why) */
#define PY_FRAME_SHIM	  3   /* 3.12+: _PyInterpreterFrame.owner FRAME_OWNED_BY_CSTACK */
#define PY_MAX_SHIM_SKIPS 4

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct op_py_proc);
} python_procs SEC(".maps");

/* pid_tgid -> the thread's PyThreadState (checked against its thread_id on every use) */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, __u64);
} python_threads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, OP_PY_REASON_MAX);
	__type(key, __u32);
	__type(value, __u64);
} python_counters SEC(".maps");

static __always_inline void py_count(__u32 reason)
{
	__u64 *v = bpf_map_lookup_elem(&python_counters, &reason);

	if (v)
		*v += 1;
}

static __always_inline __u64 py_read_ptr(__u64 addr)
{
	__u64 v = 0;

	if (bpf_probe_read_user(&v, sizeof(v), (const void *)addr))
		return 0;
	return v;
}

struct py_find {
	const struct op_py_proc *pp;
	__u64 ts, fsbase, found;
};

static long py_find_one(__u64 i, void *arg)
{
	struct py_find *f = arg;
	__u64 id;

	if (!f->ts)
		return 1;
	id = py_read_ptr(f->ts + f->pp->ts_thread_id);
	if (id == f->fsbase) {
		f->found = f->ts;
		return 1;
	}
	f->ts = py_read_ptr(f->ts + f->pp->ts_next);
	return 0;
}

/* The thread state of the sampled thread, or 0. */
static __always_inline __u64 py_tstate(const struct op_py_proc *pp, struct op_trace *t)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 key = ((__u64)t->hdr.pid << 32) | t->tid, *cached;
	struct py_find f = { .pp = pp };
	__u64 interp;

	f.fsbase = thread_pointer(task);
	if (!f.fsbase)
		return 0;
	cached = bpf_map_lookup_elem(&python_threads, &key);
	if (cached && *cached && py_read_ptr(*cached + pp->ts_thread_id) == f.fsbase)
		return *cached;
	interp = py_read_ptr(pp->runtime + pp->interp_head);
	if (!interp)
		return 0;
	f.ts = py_read_ptr(interp + pp->interp_ts);
	bpf_loop(PY_MAX_THREADS, py_find_one, &f, 0);
	if (f.found)
		bpf_map_update_elem(&python_threads, &key, &f.found, BPF_ANY);
	return f.found;
}

/* One Python frame as read from the chain. */
struct py_frame {
	__u64 code, data, next;
	bool end;  /* the last frame of its eval-loop call's group */
	bool shim; /* not a Python frame: the boundary between two groups (3.12+) */
};

/* Read the frame at @f. False when a read fails. */
static __always_inline bool py_read_frame(const struct op_py_proc *pp, __u64 f,
					  struct py_frame *out)
{
	__u64 instr = 0;
	__s32 lasti = 0, first = 0;
	__u8 b = 0;

	out->shim = false;
	out->end = false;
	if (bpf_probe_read_user(&out->next, 8, (const void *)(f + pp->f_back)))
		return false;
	if (pp->f_owner != PY_OFF_NONE) {
		if (bpf_probe_read_user(&b, 1, (const void *)(f + pp->f_owner)))
			return false;
		if (b == PY_FRAME_SHIM) {
			out->shim = true;
			return true;
		}
	}
	if (bpf_probe_read_user(&out->code, 8, (const void *)(f + pp->f_code)) || !out->code)
		return false;
	if (bpf_probe_read_user(&first, 4, (const void *)(out->code + pp->co_firstlineno)))
		return false;
	if (pp->frame_objs) {
		if (bpf_probe_read_user(&lasti, 4, (const void *)(f + pp->f_instr)))
			return false;
		if (pp->lasti_units)
			lasti *= 2;
		out->end = true;
	} else {
		if (bpf_probe_read_user(&instr, 8, (const void *)(f + pp->f_instr)))
			return false;
		lasti = (__s32)(instr - (out->code + pp->co_code));
		if (pp->f_entry != PY_OFF_NONE) {
			if (bpf_probe_read_user(&b, 1, (const void *)(f + pp->f_entry)))
				return false;
			out->end = b != 0;
		}
	}
	out->data = ((__u64)(__u32)first << 32) | (__u32)lasti;
	return true;
}

struct py_walk {
	struct op_rt_walk *w;
	const struct op_py_proc *pp;
	__u64 frame;	 /* next frame to read; 0: the chain ended */
	__u32 pushed;	 /* frames of the loop frame's own group recorded */
	__u32 reason;	 /* why the walk stopped early (enum op_py_reason), 0: it did not */
	__u32 end_tail;	 /* pend_tail after the last complete queued group */
	__u64 end_frame; /* the frame after that group */
	bool group_open; /* frames queued since the last group end */
	bool own_done;	 /* the loop frame's own group is complete */
	bool full;	 /* the queue is full */
};

/* bpf_loop: record the loop frame's own group, one frame per call. */
static long py_push_one(__u64 i, void *arg)
{
	struct py_walk *pw = arg;
	struct py_frame fr;

	if (!pw->frame)
		return 1;
	if (!py_read_frame(pw->pp, pw->frame, &fr)) {
		pw->reason = OP_PY_READ_FAILED;
		pw->frame = 0;
		return 1;
	}
	if (fr.shim) {
		pw->frame = fr.next;
		if (pw->pushed) {
			pw->own_done = true;
			return 1;
		}
		return 0; /* a shim before any frame: the loop frame's own entry, skipped */
	}
	if (!op_rt_push(pw->w, OP_RUNTIME_PYTHON, fr.code, fr.data)) {
		pw->frame = 0; /* the trace is full */
		return 1;
	}
	pw->pushed++;
	pw->frame = fr.next;
	if (fr.end) {
		pw->own_done = true;
		return 1;
	}
	return 0;
}

/* bpf_loop: queue the groups of the loop frames to come, one frame per call. */
static long py_queue_one(__u64 i, void *arg)
{
	struct py_walk *pw = arg;
	struct unwind_scratch *s = pw->w->s;
	struct py_frame fr;
	__u32 tl;

	if (!pw->frame)
		return 1;
	if (!py_read_frame(pw->pp, pw->frame, &fr)) {
		pw->reason = OP_PY_READ_FAILED;
		pw->frame = 0;
		return 1;
	}
	if (fr.shim) {
		tl = s->pend_tail;
		if (pw->group_open && tl >= 2) {
			s->pend_ends |= 1ull << (((tl - 2) / 2) & 63);
			pw->group_open = false;
			pw->end_tail = tl;
			pw->end_frame = fr.next;
		}
		pw->frame = fr.next;
		return 0;
	}
	if (!op_rt_queue(pw->w, OP_RUNTIME_PYTHON, fr.code, fr.data, fr.end)) {
		pw->full = true;
		return 1;
	}
	pw->frame = fr.next;
	pw->group_open = !fr.end;
	if (fr.end) {
		pw->end_tail = s->pend_tail;
		pw->end_frame = fr.next;
	}
	return 0;
}

/* rt_state[1] once the chain is done: the reason, and PY_MARKED once its marker is recorded */
#define PY_REASON_MASK 0xffull
#define PY_MARKED      0x100ull

/*
 * The chain is done and the loop frame in s->r stays native: before the first such frame of
 * a chain that changed under the walk or could not be read, a marker frame says so (once).
 */
static __always_inline void py_mark(struct op_rt_walk *w)
{
	struct unwind_scratch *s = w->s;
	__u64 reason = s->rt_state[1];

	if (reason != OP_PY_READ_FAILED && reason != OP_PY_CHAIN_ENDED)
		return; /* already marked, or a reason that is not about the chain */
	s->rt_state[1] = reason | PY_MARKED;
	op_rt_push(w, OP_RUNTIME_PYTHON, OP_PY_MARKER_PAYLOAD, reason);
}

static __always_inline int python_walk(void *ctx, void *progs, struct op_rt_walk *w)
{
	struct unwind_scratch *s = w->s;
	struct py_walk pw = { .w = w };
	const struct op_py_proc *pp;
	__u64 ts;

	if (op_rt_queued(w))
		return op_rt_step_queued(ctx, progs, w);
	if (s->rt_state[0] == PY_CHAIN_DONE) {
		py_count((__u32)s->rt_state[1] & PY_REASON_MASK);
		py_mark(w);
		return op_rt_keep_native(ctx, progs, w);
	}
	pp = bpf_map_lookup_elem(&python_procs, &s->pid);
	if (!pp) {
		py_count(OP_PY_NO_PROC);
		return op_rt_keep_native(ctx, progs, w);
	}
	pw.pp = pp;
	if (s->rt_state[0]) {
		pw.frame = s->rt_state[0];
	} else {
		ts = py_tstate(pp, w->t);
		if (!ts) {
			s->rt_state[0] = PY_CHAIN_DONE;
			s->rt_state[1] = OP_PY_NO_TSTATE;
			py_count(OP_PY_NO_TSTATE);
			return op_rt_keep_native(ctx, progs, w);
		}
		pw.frame = py_read_ptr(ts + pp->ts_frame);
		if (pw.frame && pp->cf_current != PY_OFF_NONE)
			pw.frame = py_read_ptr(pw.frame + pp->cf_current);
	}
	bpf_loop(PY_MAX_GROUP, py_push_one, &pw, 0);
	if (!pw.pushed) {
		s->rt_state[0] = PY_CHAIN_DONE;
		s->rt_state[1] = pw.reason ? pw.reason : OP_PY_CHAIN_ENDED;
		py_count((__u32)s->rt_state[1]);
		py_mark(w);
		return op_rt_keep_native(ctx, progs, w);
	}
	py_count(OP_PY_FRAMES);
	if (pw.frame) {
		/* the groups of the loop frames to come, whole groups only when it fills */
		s->pend_runtime = OP_RUNTIME_PYTHON;
		s->pend_head = s->pend_tail = 0;
		s->pend_ends = 0;
		pw.end_frame = pw.frame;
		bpf_loop(OP_RT_PENDING_SLOTS / 2, py_queue_one, &pw, 0);
		if (pw.frame && (pw.full || pw.group_open) && pw.end_tail) {
			/* a group cut by the queue's end: from its first frame at the next call */
			s->pend_tail = (__u8)pw.end_tail;
			pw.frame = pw.end_frame;
		} else if (!pw.frame && pw.group_open && s->pend_tail >= 2) {
			/* the chain ended inside a group: it is the last loop frame's */
			s->pend_ends |= 1ull << (((s->pend_tail - 2) / 2) & 63);
		}
	}
	if (pw.frame) {
		s->rt_state[0] = pw.frame;
	} else {
		s->rt_state[0] = PY_CHAIN_DONE;
		s->rt_state[1] = pw.reason ? pw.reason : OP_PY_CHAIN_ENDED;
	}
	/* step this loop frame unrecorded, then the walk that hands out the queued groups */
	s->step_only = OP_STEP_ONLY_STEP;
	unwind_tail_call(ctx, progs, s, OP_CHAIN_INTERP);
	w->t->unwind_error = OTELPROF_UNWIND_VERIFIER_LIMIT;
	return op_rt_finish(w);
}

#endif

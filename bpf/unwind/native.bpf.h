/* SPDX-License-Identifier: GPL-2.0 */
/*
 * CFI user-stack walk, part of the sampler object (bpf/sampler.bpf.c). An event program
 * whose process has unwind tables (lib/unwind/unwind.c fills unwind_procs) starts a walk with
 * unwind_begin(), sets the leaf registers and calls walk_and_submit(): it walks the first
 * OP_UNWIND_FRAMES_PER_PROG frames in the event's own run (most stacks end there, and a tail
 * call would only repeat its map lookups), then continues in its chain's unwind_native_<chain>
 * (OP_UNWIND_CHAIN), which tail-calls itself through unwind_tail_call(), the one counting
 * wrapper, OP_UNWIND_FRAMES_PER_PROG frames a run, until the stack ends, an error stops it, or
 * OP_MAX_USER_FRAMES frame slots are recorded (then OP_TRACE_USER_TRUNCATED is set). A frame
 * in a mapping that a language runtime claimed (op_unwind_mapping.runtime) goes to that
 * runtime's program instead (bpf/unwind/runtime.bpf.h), which hands back when it is done. The
 * last run submits the record (sample/record.bpf.h). The per-frame step is unwind/step.h,
 * shared with the unit tests.
 */
#ifndef OTELPROF_NATIVE_BPF_H
#define OTELPROF_NATIVE_BPF_H

#include "sample/record.bpf.h"
#include "unwind/step.h"

#define OP_UNWIND_FRAMES_PER_PROG 16
/* Kernel limit is 33 tail calls per chain; stop well before it with a clean record. */
#define OP_UNWIND_MAX_TAIL_CALLS 24
#define OP_UNWIND_MAX_ROWS	 (2u << 20)
#define OP_UNWIND_MAX_RULES	 65536
#define OP_UNWIND_MAX_TABLES	 4096
#define OP_UNWIND_MAX_PROCS	 16384
/* Interpreter frames queued ahead of the native walk (two slots each), a power of two. */
#define OP_RT_PENDING_SLOTS 64
/* Loop frames the interp walk hands queued frames to in one program run (its steps bound). */
#define OP_RT_PENDING_ROUNDS 8

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, OP_UNWIND_MAX_ROWS);
	__uint(map_flags, BPF_F_MMAPABLE); /* lib/unwind/unwind.c writes rows through mmap */
	__type(key, __u32);
	__type(value, struct op_unwind_row);
} unwind_rows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, OP_UNWIND_MAX_RULES);
	__type(key, __u32);
	__type(value, struct op_unwind_rule);
} unwind_rules SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, OP_UNWIND_MAX_TABLES);
	__type(key, __u32);
	__type(value, struct op_unwind_table);
} unwind_tables SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, OP_UNWIND_MAX_PROCS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct op_unwind_proc);
} unwind_procs SEC(".maps");

/*
 * Walk state, one per CPU and chain. Invariant: set up by unwind_begin() for the event being
 * handled on this CPU and used only by the tail-call chain that follows it; nothing else on
 * the CPU uses this chain's entry in between (programs of one type do not nest on a CPU).
 */
struct unwind_scratch {
	struct op_unwind_regs r;
	__u32 pid;
	__u32 n;	    /* user frame slots recorded */
	__u32 tail_calls;   /* tail calls taken so far in this chain */
	__u32 refresh;	    /* the walk met something user space should re-read /proc for */
	__u32 chain;	    /* enum op_unwind_chain: index of this state and of the trace */
	__s32 last_mapping; /* mapping of the frame before, -1 if none (a hint: walk_one) */
	/* runtime dispatch (bpf/unwind/runtime.bpf.h) */
	__u8 runtime;	/* enum op_runtime_kind of the mapping the walk stopped in, or 0 */
	__u8 step_only; /* the next native frame: OP_STEP_ONLY_* */
	__u8 taking;	/* walk_pending_one: handing out a queued group */
	__u8 pad;
	__u32 mapping;	   /* index in the process's mappings of that frame */
	__u64 rt_state[4]; /* the runtime's own, zero at the start of each walk */
	/*
	 * Frames an interpreter queued for the native frames of its loop still to come: slots
	 * [pend_head, pend_tail) of pend, in groups; bit i of pend_ends marks the end of a group
	 * at frame (slot pair) i. The native walk gives the next group to each frame of
	 * pend_runtime's code it meets, without a tail call (runtime.bpf.h).
	 */
	__u8 pend_runtime;
	__u8 pend_head, pend_tail;
	__u8 pad2[5];
	__u64 pend_ends;
	__u64 pend[OP_RT_PENDING_SLOTS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, OP_CHAIN_MAX);
	__type(key, __u32);
	__type(value, struct unwind_scratch);
} unwind_scratch SEC(".maps");

/* unwind_scratch.step_only */
#define OP_STEP_ONLY_NONE    0
#define OP_STEP_ONLY_STEP    1 /* handled by a runtime: unwind it, do not record it */
#define OP_STEP_ONLY_RECORD  2 /* a runtime declined it: record it as native, do not dispatch */
#define OP_STEP_ONLY_PENDING 3 /* an interpreter loop frame with queued frames still to take */

/* The one place that tail-calls: counts, and refuses before the kernel's limit would. */
static __always_inline void unwind_tail_call(void *ctx, void *progs, struct unwind_scratch *s,
					     __u32 slot)
{
	if (s->tail_calls >= OP_UNWIND_MAX_TAIL_CALLS)
		return;
	s->tail_calls++;
	bpf_tail_call(ctx, progs, slot);
}

/* Copy the leaf frame's general registers (DWARF order) for rules based on them. */
#define LEAF_REGS(dst, src)             \
	do {                            \
		(dst)[0] = (src)->ax;   \
		(dst)[1] = (src)->dx;   \
		(dst)[2] = (src)->cx;   \
		(dst)[3] = (src)->bx;   \
		(dst)[4] = (src)->si;   \
		(dst)[5] = (src)->di;   \
		(dst)[6] = (src)->bp;   \
		(dst)[7] = (src)->sp;   \
		(dst)[8] = (src)->r8;   \
		(dst)[9] = (src)->r9;   \
		(dst)[10] = (src)->r10; \
		(dst)[11] = (src)->r11; \
		(dst)[12] = (src)->r12; \
		(dst)[13] = (src)->r13; \
		(dst)[14] = (src)->r14; \
		(dst)[15] = (src)->r15; \
		(dst)[16] = (src)->ip;  \
	} while (0)

/* Index of the mapping containing @pc in @p, or -1. */
static __always_inline int find_mapping(const struct op_unwind_proc *p, __u64 pc)
{
	__u32 lo = 0, hi = p->n;

	if (hi > OP_UNWIND_MAX_MAPPINGS)
		hi = OP_UNWIND_MAX_MAPPINGS;
	/* invariant: the mapping, if any, is in [lo, hi) */
	for (int i = 0; i < 9 && lo < hi; i++) {
		__u32 mid = (lo + hi) / 2;

		mid &= OP_UNWIND_MAX_MAPPINGS - 1;
		if (pc < p->m[mid].start)
			hi = mid;
		else if (pc >= p->m[mid].end)
			lo = mid + 1;
		else
			return mid;
	}
	return -1;
}

/* Entry @k of @tb's bucket index, or -1 when unreadable. */
static __always_inline __s64 bucket_entry(const struct op_unwind_table *tb, __u32 k)
{
	__u32 slot = tb->index_row + k / 2;
	struct op_unwind_row *e = bpf_map_lookup_elem(&unwind_rows, &slot);

	if (!e)
		return -1;
	return k & 1 ? e->rule : e->pc;
}

/* Rule of the last row with row.pc <= @rel in table @tb, or NULL. */
static __always_inline const struct op_unwind_rule *find_rule(const struct op_unwind_table *tb,
							      __u64 rel)
{
	__u32 lo = 0, hi = tb->n_rows, key;
	struct op_unwind_row *row;

	if (rel > 0xffffffffull)
		return NULL;
	if (tb->n_buckets) {
		/* past the last bucket: the last row covers it, and it is in the last bucket */
		__u32 b = rel >> (tb->bucket_shift & 31);
		__s64 first, last;

		if (b >= tb->n_buckets)
			b = tb->n_buckets - 1;
		first = bucket_entry(tb, b);
		last = bucket_entry(tb, b + 1);
		/* a damaged index only costs the narrowing, never a wrong row */
		if (first >= 0 && last >= first && last < hi) {
			lo = first;
			hi = last + 1;
		}
	}
	/* invariant: rows[lo].pc <= rel < rows[hi].pc, checked for lo after the loop */
	for (int i = 0; i < OP_UNWIND_SEARCH_STEPS + 1 && hi - lo > 1; i++) {
		__u32 mid = lo + (hi - lo) / 2;

		key = tb->first_row + mid;
		row = bpf_map_lookup_elem(&unwind_rows, &key);
		if (!row)
			return NULL;
		if (row->pc <= rel)
			lo = mid;
		else
			hi = mid;
	}
	key = tb->first_row + lo;
	row = bpf_map_lookup_elem(&unwind_rows, &key);
	if (!row || row->pc > rel)
		return NULL;
	key = row->rule;
	return bpf_map_lookup_elem(&unwind_rules, &key);
}

struct walk_ctx {
	struct op_trace *t;
	struct unwind_scratch *s;
	struct op_unwind_proc *proc;
	int done; /* 1: the walk is over; WALK_DISPATCH: a runtime takes the frame in s->r */
};

#define WALK_DISPATCH 2

/*
 * Move the next queued interpreter frame into the trace. True when that ended its group (or
 * the queue or the trace ran out): the loop frame is then stepped; false: call again for the
 * same loop frame (one frame per walk iteration keeps the verifier's work linear).
 */
static __always_inline bool take_pending(struct op_trace *t, struct unwind_scratch *s)
{
	__u32 h = s->pend_head, idx = t->n_kernel + s->n;
	bool end;

	if (h + 1 >= OP_RT_PENDING_SLOTS || h + 1 >= s->pend_tail)
		return true;
	if (s->n + 2 > OP_MAX_USER_FRAMES) {
		t->flags |= OP_TRACE_USER_TRUNCATED;
		s->pend_head = s->pend_tail;
		return true;
	}
	/* keep clang from dropping the masks the verifier needs to bound the indices */
	asm volatile("" : "+r"(h), "+r"(idx));
	h &= OP_RT_PENDING_SLOTS - 2;
	if (idx >= OP_MAX_KERNEL_FRAMES + OP_MAX_USER_FRAMES - 1)
		return true;
	end = (s->pend_ends >> (h / 2)) & 1;
	t->frames[idx] = s->pend[h];
	t->frames[idx + 1] = s->pend[h + 1];
	s->n += 2;
	s->pend_head = h + 2;
	return end || s->pend_head >= s->pend_tail;
}

/* bpf_loop callback: one queued frame per call until its group ends. */
static long take_pending_cb(__u64 index, void *arg)
{
	struct walk_ctx *w = arg;

	return take_pending(w->t, w->s) ? 1 : 0;
}

/*
 * One frame of the walk. A frame in a runtime's code goes to that runtime's program
 * (WALK_DISPATCH); the walk that hands out queued interpreter frames (walk_pending_one) takes
 * such frames itself when it has frames queued for them.
 */
static long walk_one(__u64 index, void *arg)
{
	struct walk_ctx *w = arg;
	struct op_trace *t = w->t;
	struct unwind_scratch *s = w->s;
	const struct op_unwind_table *tb;
	const struct op_unwind_rule *rule;
	struct op_unwind_mapping *m;
	__u64 look;
	__u32 idx, slot;
	int mi, ret;
	__u8 step_only = s->step_only;

	s->step_only = OP_STEP_ONLY_NONE;
	if (step_only != OP_STEP_ONLY_STEP) {
		if (s->n >= OP_MAX_USER_FRAMES) {
			t->flags |=
				OP_TRACE_USER_TRUNCATED; /* the walk had another frame to give */
			w->done = 1;
			return 1;
		}
		idx = t->n_kernel + s->n;
		asm volatile("" : "+r"(idx));
		if (idx >= OP_MAX_KERNEL_FRAMES + OP_MAX_USER_FRAMES) {
			w->done = 1;
			return 1;
		}
		t->frames[idx] = s->r.pc;
		s->n++;
	}

	look = s->r.exact_pc ? s->r.pc : s->r.pc - 1;
	/*
	 * Callers are often in the frame before's mapping. The hint lives in the map value, not
	 * in the loop's stack context: the verifier tracks stack values exactly, and a value
	 * that changes every iteration multiplies the states it must check (7x here).
	 */
	mi = s->last_mapping;
	if (mi < 0 || look < w->proc->m[mi & (OP_UNWIND_MAX_MAPPINGS - 1)].start ||
	    look >= w->proc->m[mi & (OP_UNWIND_MAX_MAPPINGS - 1)].end)
		mi = find_mapping(w->proc, look);
	s->last_mapping = mi;
	if (mi < 0) {
		t->unwind_error = OTELPROF_UNWIND_UNKNOWN_MAPPING;
		s->refresh = 1; /* mapped after user space last read /proc/PID/maps */
		w->done = 1;
		return 1;
	}
	m = &w->proc->m[mi & (OP_UNWIND_MAX_MAPPINGS - 1)];
	if (m->runtime && step_only == OP_STEP_ONLY_NONE) {
		/* a runtime's code: its unwinder names this frame (and maybe more), not this walk
		 */
		s->n--;
		s->runtime = m->runtime;
		s->mapping = mi;
		w->done = WALK_DISPATCH;
		return 1;
	}
	slot = m->table;
	/*
	 * Anonymous executable memory is JIT code (V8, Python's perf trampolines, HotSpot with
	 * PreserveFramePointer, LuaJIT...): no CFI, so walk on by its frame pointers. A stack
	 * never starts in JIT code: a walk that ends there (no frame pointer, a zero return
	 * address: a JIT that keeps none) is marked, not taken for complete.
	 */
	if (slot == OP_UNWIND_TABLE_ANON) {
		ret = op_unwind_step_fp(&s->r);
		if (ret == OP_STEP_END)
			ret = -OTELPROF_UNWIND_UNKNOWN_MAPPING;
	} else if (slot == OP_UNWIND_TABLE_FP) {
		ret = op_unwind_step_fp(&s->r);
	} else {
		tb = bpf_map_lookup_elem(&unwind_tables, &slot);
		if (!tb || !tb->n_rows) {
			t->unwind_error = OTELPROF_UNWIND_NO_TABLE;
			s->refresh = 1; /* evicted: user space loads it again on refresh */
			w->done = 1;
			return 1;
		}
		rule = find_rule(tb, look - m->bias);
		if (!rule) {
			t->unwind_error = OTELPROF_UNWIND_PC_NOT_COVERED;
			w->done = 1;
			return 1;
		}
		ret = op_unwind_step(&s->r, rule);
	}
	if (ret == OP_STEP_NEXT)
		return 0;
	if (ret < 0)
		t->unwind_error = -ret;
	w->done = 1;
	return 1;
}

/*
 * One step of the walk that hands out queued interpreter frames: a native frame (walk_one)
 * until a runtime's frame; if that is a loop frame of the interpreter that queued frames,
 * its group, one frame per step (take_pending), then the frame is stepped (no tail call) and
 * the walk goes on. One loop, not a loop of walks and takes: the verifier explores a loop's
 * body until its states converge, and nested loops multiplied that (380 ms of the start's
 * verification for this chain, against 135 ms for the plain walk).
 */
static long walk_pending_one(__u64 index, void *arg)
{
	struct walk_ctx *w = arg;
	struct unwind_scratch *s = w->s;

	if (s->taking) {
		if (take_pending(w->t, s)) {
			s->taking = 0;
			s->step_only = OP_STEP_ONLY_STEP;
		}
		return 0;
	}
	if (!walk_one(index, arg))
		return 0;
	if (w->done != WALK_DISPATCH || s->runtime != s->pend_runtime ||
	    s->pend_head >= s->pend_tail)
		return 1;
	s->taking = 1;
	w->done = 0;
	return 0;
}

/*
 * Walk up to OP_UNWIND_FRAMES_PER_PROG frames; go on in a tail call (the walk again, or the
 * runtime whose code the walk met), or submit the record. @pending: see walk_frame().
 */
static __always_inline int walk_and_submit_(void *ctx, void *progs, struct walk_ctx *w,
					    const bool pending)
{
	if (pending)
		bpf_loop(OP_RT_PENDING_ROUNDS *
				 (OP_UNWIND_FRAMES_PER_PROG + OP_RT_PENDING_SLOTS / 2),
			 walk_pending_one, w, 0);
	else
		bpf_loop(OP_UNWIND_FRAMES_PER_PROG, walk_one, w, 0);
	if (w->done == WALK_DISPATCH) {
		unwind_tail_call(ctx, progs, w->s, w->s->runtime & (OP_RUNTIME_MAX - 1));
		w->t->unwind_error = OTELPROF_UNWIND_VERIFIER_LIMIT;
	} else if (!w->done) {
		unwind_tail_call(ctx, progs, w->s,
				 w->s->pend_head < w->s->pend_tail ? OP_CHAIN_INTERP
								   : OP_CHAIN_NATIVE);
		/* only reached when no further tail call is allowed or possible */
		w->t->unwind_error = OTELPROF_UNWIND_VERIFIER_LIMIT;
	}
	w->t->n_user = w->s->n;
	return submit_trace(w->t, w->s->refresh);
}

static __always_inline int walk_and_submit(void *ctx, void *progs, struct walk_ctx *w)
{
	return walk_and_submit_(ctx, progs, w, false);
}

/*
 * Start a walk of @t's process @proc on @chain: the chain's walk state, reset. The caller
 * then sets the leaf registers (unwind_leaf_regs_*) and calls walk_and_submit().
 */
static __always_inline struct unwind_scratch *unwind_begin(struct op_trace *t, __u32 chain)
{
	struct unwind_scratch *s = bpf_map_lookup_elem(&unwind_scratch, &chain);

	if (!s)
		return NULL; /* not reached: a per-CPU array's elements always exist */
	/* whose tables (and runtime state) the walk reads: between fork and exec, the parent's */
	s->pid = t->fork_parent && !bpf_map_lookup_elem(&unwind_procs, &t->hdr.pid) ? t->fork_parent
										    : t->hdr.pid;
	s->n = 0;
	s->tail_calls = 0;
	s->refresh = 0;
	s->chain = chain;
	s->last_mapping = -1;
	s->runtime = 0;
	s->step_only = 0;
	s->taking = 0;
	s->mapping = 0;
	s->rt_state[0] = s->rt_state[1] = s->rt_state[2] = s->rt_state[3] = 0;
	s->pend_runtime = 0;
	s->pend_head = s->pend_tail = 0;
	s->pend_ends = 0;
	s->r.leaf = 1;
	s->r.exact_pc = 1;
	s->r.bp_valid = 1;
	return s;
}

/* Leaf registers from a copy of the task's user pt_regs (any program type). */
static __always_inline void unwind_leaf_regs_pt(struct unwind_scratch *s, const struct pt_regs *k)
{
	LEAF_REGS(s->r.regs, k);
	s->r.pc = k->ip;
	s->r.sp = k->sp;
	s->r.bp = k->bp;
}

/*
 * Leaf registers of a cpu-clock sample: from the sample itself when it hit user mode (ctx
 * fields are read directly, the verifier rewrites those loads), else @ur and the task's
 * saved pt_regs.
 */
static __always_inline void unwind_leaf_regs_perf(struct bpf_perf_event_data *ctx,
						  struct unwind_scratch *s,
						  struct task_struct *task,
						  const struct user_regs *ur)
{
	s->r.pc = ur->ip;
	s->r.sp = ur->sp;
	s->r.bp = ur->bp;
	if (sampled_user_mode(ctx)) {
		bpf_user_pt_regs_t *u = &ctx->regs;

		s->r.regs[0] = *(volatile __u64 *)&u->ax;
		s->r.regs[1] = *(volatile __u64 *)&u->dx;
		s->r.regs[2] = *(volatile __u64 *)&u->cx;
		s->r.regs[3] = *(volatile __u64 *)&u->bx;
		s->r.regs[4] = *(volatile __u64 *)&u->si;
		s->r.regs[5] = *(volatile __u64 *)&u->di;
		s->r.regs[8] = *(volatile __u64 *)&u->r8;
		s->r.regs[9] = *(volatile __u64 *)&u->r9;
		s->r.regs[10] = *(volatile __u64 *)&u->r10;
		s->r.regs[11] = *(volatile __u64 *)&u->r11;
		s->r.regs[12] = *(volatile __u64 *)&u->r12;
		s->r.regs[13] = *(volatile __u64 *)&u->r13;
		s->r.regs[14] = *(volatile __u64 *)&u->r14;
		s->r.regs[15] = *(volatile __u64 *)&u->r15;
	} else {
		struct pt_regs *k = (struct pt_regs *)bpf_task_pt_regs(task);
		struct pt_regs copy;

		if (!k || bpf_probe_read_kernel(&copy, sizeof(copy), k))
			__builtin_memset(&copy, 0, sizeof(copy));
		LEAF_REGS(s->r.regs, &copy);
	}
	s->r.regs[6] = ur->bp;
	s->r.regs[7] = ur->sp;
	s->r.regs[16] = ur->ip;
}

/*
 * The continuation of a walk in a tail call (the native walk's own, and where a runtime's
 * unwinder hands back): @chain's trace and walk state, and the process's mappings.
 */
static __always_inline int unwind_continue(void *ctx, void *progs, __u32 chain, const bool pending)
{
	struct walk_ctx w = {};

	w.t = bpf_map_lookup_elem(&scratch, &chain);
	w.s = bpf_map_lookup_elem(&unwind_scratch, &chain);
	if (!w.t || !w.s)
		return 0;
	w.proc = bpf_map_lookup_elem(&unwind_procs, &w.s->pid);
	if (!w.proc) {
		/* exited or refreshed between the sample and now */
		w.t->unwind_error = OTELPROF_UNWIND_NO_TABLE;
		w.s->refresh = 1;
		w.t->n_user = w.s->n;
		return submit_trace(w.t, true);
	}
	return walk_and_submit_(ctx, progs, &w, pending);
}

/*
 * Declares a chain: its tail-call array (bpf/unwind/tables.h; slot OP_CHAIN_NATIVE the native
 * continuation, program unwind_native_<name>, OP_CHAIN_INTERP unwind_interp_<name>, both put there
 * by lib/sample/sampler.c once loaded; slot k runtime k's program unwind_<runtime>_<name>, put
 * there by lib/unwind/unwind.c when that runtime is enabled) and its continuations, of program
 * type @sec. Programs of the chain reach the array as <name>_progs. The array is filled from
 * user space, not statically, because a chain that is off is not loaded at all.
 */
#define OP_UNWIND_CHAIN(name, sec, chain_id)                                 \
	struct {                                                             \
		__uint(type, BPF_MAP_TYPE_PROG_ARRAY);                       \
		__uint(max_entries, OP_CHAIN_INTERP + 1);                    \
		__uint(key_size, sizeof(__u32));                             \
		__uint(value_size, sizeof(__u32));                           \
	} name##_progs SEC(".maps");                                         \
	SEC(sec)                                                             \
	int unwind_native_##name(void *ctx)                                  \
	{                                                                    \
		return unwind_continue(ctx, &name##_progs, chain_id, false); \
	}                                                                    \
	SEC(sec)                                                             \
	int unwind_interp_##name(void *ctx)                                  \
	{                                                                    \
		return unwind_continue(ctx, &name##_progs, chain_id, true);  \
	}

#endif

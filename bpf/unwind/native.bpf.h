/* SPDX-License-Identifier: GPL-2.0 */
/*
 * CFI user-stack walk, part of the sampler object (bpf/sampler.bpf.c). The sampler calls
 * unwind_user_stack() when the process has unwind tables (lib/unwind/unwind.c fills
 * unwind_procs); it walks the first
 * OP_UNWIND_FRAMES_PER_PROG frames in the sampler's own run (most stacks end there, and a
 * tail call would only repeat its map lookups), then continues in unwind_user, which
 * tail-calls itself through unwind_next(), the one counting wrapper, OP_UNWIND_FRAMES_PER_PROG
 * frames a run, until the stack ends, an error stops it, or OP_MAX_USER_FRAMES frames are
 * recorded (then OP_TRACE_USER_TRUNCATED is set). The last run submits the record
 * (sample/record.bpf.h). The per-frame step is unwind/step.h, shared with the unit tests.
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
 * Walk state, one per CPU. Invariant: set up by unwind_user_stack() for the sample being
 * taken on this CPU and used only by the tail-call chain that follows it; nothing else runs
 * on the CPU in between (perf_event programs do not nest).
 */
struct unwind_scratch {
	struct op_unwind_regs r;
	__u32 pid;
	__u32 n;	  /* user frames recorded */
	__u32 tail_calls; /* tail calls taken so far in this chain */
	__u32 refresh;	  /* the walk met something user space should re-read /proc for */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct unwind_scratch);
} unwind_scratch SEC(".maps");

int unwind_user(struct bpf_perf_event_data *ctx);

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__uint(key_size, sizeof(__u32));
	__array(values, int(void *));
} unwind_progs SEC(".maps") = {
	.values = { [0] = (void *)&unwind_user },
};

/* The one place that tail-calls: counts, and refuses before the kernel's limit would. */
static __always_inline void unwind_next(void *ctx, struct unwind_scratch *s)
{
	if (s->tail_calls >= OP_UNWIND_MAX_TAIL_CALLS)
		return;
	s->tail_calls++;
	bpf_tail_call(ctx, &unwind_progs, 0);
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
	const struct op_unwind_table *tb; /* unwind_tables[slot], looked up for a frame before */
	__u32 slot;
	int last; /* mapping of the frame before, -1 if none: callers are often in the same one */
	int done;
};

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

	if (s->n >= OP_MAX_USER_FRAMES) {
		t->flags |= OP_TRACE_USER_TRUNCATED; /* the walk had another frame to give */
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

	look = s->r.exact_pc ? s->r.pc : s->r.pc - 1;
	mi = w->last;
	if (mi < 0 || look < w->proc->m[mi & (OP_UNWIND_MAX_MAPPINGS - 1)].start ||
	    look >= w->proc->m[mi & (OP_UNWIND_MAX_MAPPINGS - 1)].end)
		mi = find_mapping(w->proc, look);
	w->last = mi;
	if (mi < 0) {
		t->unwind_error = OTELPROF_UNWIND_UNKNOWN_MAPPING;
		s->refresh = 1; /* mapped after user space last read /proc/PID/maps */
		w->done = 1;
		return 1;
	}
	m = &w->proc->m[mi & (OP_UNWIND_MAX_MAPPINGS - 1)];
	slot = m->table;
	if (slot == OP_UNWIND_TABLE_ANON) {
		t->unwind_error = OTELPROF_UNWIND_UNKNOWN_MAPPING;
		w->done = 1;
		return 1;
	}
	if (slot == OP_UNWIND_TABLE_FP) {
		ret = op_unwind_step_fp(&s->r);
	} else {
		tb = w->tb && w->slot == slot ? w->tb : bpf_map_lookup_elem(&unwind_tables, &slot);
		w->tb = tb;
		w->slot = slot;
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

/* Walk up to OP_UNWIND_FRAMES_PER_PROG frames; go on in a tail call, or submit the record. */
static __always_inline int walk_and_submit(void *ctx, struct walk_ctx *w)
{
	bpf_loop(OP_UNWIND_FRAMES_PER_PROG, walk_one, w, 0);
	if (!w->done) {
		unwind_next(ctx, w->s);
		/* only reached when no further tail call is allowed or possible */
		w->t->unwind_error = OTELPROF_UNWIND_VERIFIER_LIMIT;
	}
	w->t->n_user = w->s->n;
	return submit_trace(w->t, w->s->refresh);
}

/*
 * Walk the user stack of @t's process @proc from @ur with its CFI tables, and submit @t
 * (in this run or the last tail call).
 */
static __always_inline int unwind_user_stack(struct bpf_perf_event_data *ctx, struct op_trace *t,
					     struct task_struct *task, struct op_unwind_proc *proc,
					     const struct user_regs *ur)
{
	struct walk_ctx w = { .t = t, .proc = proc, .last = -1 };
	struct unwind_scratch *s;
	__u32 zero = 0;

	s = bpf_map_lookup_elem(&unwind_scratch, &zero);
	if (!s)
		return 0; /* not reached: a per-CPU array's element 0 always exists */
	w.s = s;
	s->pid = t->hdr.pid;
	s->n = 0;
	s->tail_calls = 0;
	s->refresh = 0;
	s->r.pc = ur->ip;
	s->r.sp = ur->sp;
	s->r.bp = ur->bp;
	s->r.leaf = 1;
	s->r.exact_pc = 1;
	s->r.bp_valid = 1;
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
	return walk_and_submit(ctx, &w);
}

SEC("perf_event")
int unwind_user(struct bpf_perf_event_data *ctx)
{
	struct walk_ctx w = { .last = -1 };
	__u32 zero = 0;

	w.t = bpf_map_lookup_elem(&scratch, &zero);
	w.s = bpf_map_lookup_elem(&unwind_scratch, &zero);
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
	return walk_and_submit(ctx, &w);
}

#endif

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The sample record and how it leaves the kernel: the knobs user space sets, the `events`
 * ring buffer and when it wakes the reader, the target-pid filter, the per-CPU counters and
 * scratch record, the interrupted task's user registers, and submit_trace(), which every
 * walk ends in. Included by bpf/sampler.bpf.c before the unwinders (bpf/unwind/), which use it.
 */
#ifndef OTELPROF_RECORD_BPF_H
#define OTELPROF_RECORD_BPF_H

#include "types.h"
#include "otelprof.h"

/* Knobs set by lib/sample/sampler.c between open and load. */
const volatile bool kernel_stacks = true;
const volatile bool filter_pids = false;
const volatile __u64 wakeup_bytes = 1 << 20; /* see wakeup_flags() */

/* Set by lib/unwind/unwind.c once it maintains unwind_procs (not in frame-pointer mode). */
bool unwind_active = false;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20); /* resized by user space before load */
} events SEC(".maps");

/*
 * Execs, a second time (OP_EV_EXEC_EARLY): the reader reads this ring before every record of
 * events, so a new program's unwind tables do not wait for the samples ahead of its exec (a
 * busy host, an agent starting: tens of milliseconds of its first samples walked without
 * them). Its OP_EV_EXEC on events still orders the program's mappings among its samples.
 */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 << 10);
} exec_events SEC(".maps");

/* Target thread groups when filter_pids is set (value unused). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, OP_MAX_TARGET_PIDS);
	__type(key, __u32);
	__type(value, __u8);
} target_pids SEC(".maps");

/* enum op_counter: per-CPU so the hot path never contends; user space sums. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, OP_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/*
 * Each kind of event that takes stacks has its own scratch record and walk state, indexed by
 * its chain (programs of one type do not nest on a CPU, programs of different types might),
 * and its own tail-call chain (a tail call stays within one BPF program type): the
 * cpu-clock perf_event, and others as they come (scheduler tracepoints, uprobes).
 */
enum op_unwind_chain {
	OP_CHAIN_CPU = 0,   /* perf_event on cpu-clock (bpf/sampler.bpf.c on_cpu_sample) */
	OP_CHAIN_SCHED = 1, /* tp_btf/sched_switch, off-CPU (bpf/sampler.bpf.c on_sched_switch) */
	OP_CHAIN_ALLOC = 2, /* uretprobe of an allocator (bpf/sampler.bpf.c alloc_ret) */
	OP_CHAIN_PROBE = 3, /* uprobe of a traced function, probe_links (sampler.bpf.c on_probe) */
	OP_CHAIN_MAX = 4,
};

/*
 * Scratch record, one per CPU and chain. Invariant: only the program running on that CPU
 * touches its chain's entry, and it is fully rewritten (header and the frames it reports) on
 * every event, so stale frames beyond n_kernel + n_user are never sent.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, OP_CHAIN_MAX);
	__type(key, __u32);
	__type(value, struct op_trace);
} scratch SEC(".maps");

static __always_inline void count(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &idx);

	if (v)
		*v += 1;
}

/*
 * Waking the reader costs more than the rest of a sample: bpf_ringbuf_commit() queues an
 * irq_work, and its self-IPI traps to the hypervisor on a virtual machine (5.5 of the 8 us
 * a sample took, measured with per-phase bpf_ktime_get_ns() counters). So records are
 * committed without a wakeup, and the reader drains the ring on its poll timeout
 * (lib/otelprof.c) or when wakeup_bytes are pending. What user space must act on at once
 * still wakes it: exec (its snapshot and tables are read before the process can exit), and
 * samples that make it refresh a process's unwind view (a process it has no tables for yet,
 * a PC outside every mapping it read). Those wake it once per process per
 * OP_REFRESH_WAKEUP_NS on a CPU (the first such sample is what counts: the ones right after
 * it arrive while user space reads /proc and compiles tables anyway), and at most once per
 * OP_MIN_WAKEUP_NS, so a process it cannot help (its maps unreadable, the map full) costs no
 * more than before.
 */
#define OP_REFRESH_WAKEUP_NS 10000000ull
#define OP_MIN_WAKEUP_NS     1000000ull

/* Per CPU: the last wakeup for a refresh. */
struct wakeup_state {
	__u64 ktime_ns;
	__u32 pid;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct wakeup_state);
} last_wakeup SEC(".maps");

static __always_inline __u64 wakeup_flags(bool urgent)
{
	if (urgent || bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes)
		return BPF_RB_FORCE_WAKEUP;
	return BPF_RB_NO_WAKEUP;
}

/* Whether a trace that asks user space to refresh @t's process may wake it now. */
static __always_inline bool refresh_wakeup(const struct op_trace *t)
{
	struct wakeup_state *w;
	__u32 zero = 0;
	__u64 since;

	if (!unwind_active)
		return false;
	w = bpf_map_lookup_elem(&last_wakeup, &zero);
	if (!w)
		return false;
	since = t->ktime_ns - w->ktime_ns;
	if (since < OP_MIN_WAKEUP_NS || (w->pid == t->hdr.pid && since < OP_REFRESH_WAKEUP_NS))
		return false;
	w->ktime_ns = t->ktime_ns;
	w->pid = t->hdr.pid;
	return true;
}

/* ctx fields must be read 8 bytes at a time; clang would narrow a plain `cs & 3` load. */
static __always_inline bool sampled_user_mode(struct bpf_perf_event_data *ctx)
{
	return (*(volatile __u64 *)&ctx->regs.cs & 3) == 3;
}

/* The user registers a stack walk starts from. */
struct user_regs {
	__u64 ip, sp, bp;
};

/*
 * Inside execve() (bprm_execve() sets in_execve): the saved user registers are the old
 * program's, and past the point of no return its memory is gone, replaced by the new
 * program's; a vfork child's old memory is its parent's. No user walk can be named right
 * there, so none is recorded (OTELPROF_UNWIND_IN_EXEC): the kernel frames say "execve".
 */
static __always_inline bool in_execve(struct task_struct *task)
{
	if (!bpf_core_field_exists(task->in_execve))
		return false;
	return BPF_CORE_READ_BITFIELD_PROBED(task, in_execve);
}

/*
 * @task's parent's thread-group id when @task has not exec'd since its fork (its exec count
 * is still the one its parent had at the fork), its process is younger than OP_FORKED_AGE_NS
 * and the parent has not exec'd since either: the child's address space is then a copy of
 * the parent's. 0 otherwise, and for kernel threads. The age bound keeps long-lived workers
 * (and daemons whose parent died, now children of a reaper) to their own mappings.
 */
static __always_inline __u32 forked_parent(struct task_struct *task, __u64 now)
{
	struct task_struct *parent;
	__u64 exec_id = BPF_CORE_READ(task, parent_exec_id);

	if (!BPF_CORE_READ(task, mm) || BPF_CORE_READ(task, self_exec_id) != exec_id ||
	    now - BPF_CORE_READ(task, group_leader, start_time) > OP_FORKED_AGE_NS)
		return 0;
	parent = BPF_CORE_READ(task, group_leader, real_parent);
	if (!parent || BPF_CORE_READ(parent, self_exec_id) != exec_id || !BPF_CORE_READ(parent, mm))
		return 0;
	return BPF_CORE_READ(parent, tgid);
}

/*
 * The interrupted task's user context: from the sample itself when it hit user mode (ctx
 * fields are read directly: the verifier rewrites those loads), else from the task's saved
 * pt_regs. False for kernel threads, which have no user context.
 */
static __always_inline bool get_user_regs(struct bpf_perf_event_data *ctx, struct task_struct *task,
					  struct user_regs *r)
{
	struct pt_regs *regs;

	if (!BPF_CORE_READ(task, mm))
		return false;
	if (sampled_user_mode(ctx)) {
		r->ip = *(volatile __u64 *)&ctx->regs.ip;
		r->sp = *(volatile __u64 *)&ctx->regs.sp;
		r->bp = *(volatile __u64 *)&ctx->regs.bp;
		return true;
	}
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	if (!regs)
		return false;
	r->ip = BPF_CORE_READ(regs, ip);
	r->sp = BPF_CORE_READ(regs, sp);
	r->bp = BPF_CORE_READ(regs, bp);
	return true;
}

/*
 * Count the walk's outcome and send the record (also the end of the CFI walk's tail calls).
 * @refresh: the record tells user space something about the process's mappings it lacks.
 */
static __always_inline int submit_trace(struct op_trace *t, bool refresh)
{
	__u32 size;

	if (t->unwind_error != OTELPROF_UNWIND_OK)
		count(OP_CNT_UNWIND_BASE + (t->unwind_error & (OTELPROF_UNWIND_ERROR_MAX - 1)));
	if (t->flags & OP_TRACE_USER_TRUNCATED)
		count(OP_CNT_UNWIND_BASE + OTELPROF_UNWIND_DEPTH_LIMIT);

	size = OP_TRACE_HDR_SIZE + (t->n_kernel + t->n_user) * sizeof(__u64);
	if (t->ctx_len) {
		/* the labels go right after the last frame (bpf/types.h) */
		__u32 n = t->n_kernel + t->n_user, len = t->ctx_len;

		asm volatile("" : "+r"(n), "+r"(len));
		if (n <= OP_MAX_KERNEL_FRAMES + OP_MAX_USER_FRAMES && len <= sizeof(t->labels) &&
		    !bpf_probe_read_kernel(&t->frames[n], len, &t->labels))
			size += len;
		else
			t->ctx_len = 0;
	}
	if (size > OP_TRACE_HDR_SIZE + sizeof(t->frames))
		size = OP_TRACE_HDR_SIZE + sizeof(t->frames);
	if (bpf_ringbuf_output(&events, t, size, wakeup_flags(refresh && refresh_wakeup(t)))) {
		count(OP_CNT_LOST);
		return 0;
	}
	count(OP_CNT_SAMPLES);
	return 0;
}

#endif

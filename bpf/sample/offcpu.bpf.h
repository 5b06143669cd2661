/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Off-CPU sampling on the sched_switch tracepoint (no kprobes): when a thread leaves the CPU
 * the program draws whether to sample this interval (off_cpu_threshold, the upstream
 * receiver's meaning: the probability that an off-CPU event is recorded); a sampled thread's
 * stack is taken there and then - where it blocked, its user stack as it entered the kernel,
 * its kernel stack down to __schedule - and sent as a pending trace, and the time is noted in
 * offcpu_start. When the thread is switched in again, the interval's length goes out in an
 * op_offcpu_end, which user space pairs with the trace by tid. The stack cannot wait for the
 * switch-in: the next thread's memory is not the current address space there.
 *
 * Cost of an interval not sampled: the pid filter, one random number, one map lookup for the
 * thread coming in.
 */
#ifndef OTELPROF_OFFCPU_BPF_H
#define OTELPROF_OFFCPU_BPF_H

#include "sample/record.bpf.h"

/* P(an off-CPU interval is sampled) * 2^32 - 1; 0 = off-CPU off (the program is not loaded). */
const volatile __u32 offcpu_threshold = 0;

/* Waiting threads that were sampled: tid -> when they left the CPU. LRU: bounded; a thread
 * whose entry is evicted before it runs again loses that interval (user space counts the
 * traces left without an end). Resized by user space. */
struct offcpu_start_val {
	__u64 ktime_ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct offcpu_start_val);
} offcpu_start SEC(".maps");

/* The state a thread leaves the CPU in (kernel TASK_* bits of prev_state). */
static __always_inline __u8 offcpu_state(bool preempt, unsigned int prev_state)
{
	if (preempt || !(prev_state & 0xff))
		return OP_STATE_PREEMPTED; /* TASK_RUNNING: still runnable */
	if (prev_state & 0x1)
		return OP_STATE_SLEEPING; /* TASK_INTERRUPTIBLE */
	if (prev_state & 0x2)
		return OP_STATE_UNINTERRUPTIBLE;
	if (prev_state & (0x4 | 0x8))
		return OP_STATE_STOPPED; /* __TASK_STOPPED, __TASK_TRACED */
	return OP_STATE_OTHER;
}

/* @next comes back on the CPU: send the end of its sampled interval, if it has one. */
static __always_inline void offcpu_switch_in(struct task_struct *next)
{
	__u32 tid = BPF_CORE_READ(next, pid);
	struct offcpu_start_val *st;
	struct op_offcpu_end e;
	__u64 now;

	if (!tid)
		return;
	st = bpf_map_lookup_elem(&offcpu_start, &tid);
	if (!st)
		return;
	now = bpf_ktime_get_ns();
	e.hdr.type = OP_EV_OFFCPU_END;
	e.hdr.pid = BPF_CORE_READ(next, tgid);
	e.tid = tid;
	e.cpu = bpf_get_smp_processor_id();
	e.ktime_ns = now;
	e.ns = now - st->ktime_ns;
	bpf_map_delete_elem(&offcpu_start, &tid);
	if (bpf_ringbuf_output(&events, &e, sizeof(e), wakeup_flags(false)))
		count(OP_CNT_LOST);
	else
		count(OP_CNT_OFFCPU_IN);
}

/*
 * Whether @prev's interval off the CPU is sampled: not the idle task, a target process,
 * the draw. On yes, its time is noted (false when offcpu_start had no room: counted).
 */
static __always_inline bool offcpu_sample_out(struct task_struct *prev, __u64 now)
{
	__u32 pid = BPF_CORE_READ(prev, tgid), tid = BPF_CORE_READ(prev, pid);
	struct offcpu_start_val st = { now };

	if (!pid || !tid)
		return false;
	if (filter_pids && !bpf_map_lookup_elem(&target_pids, &pid))
		return false;
	if (bpf_get_prandom_u32() > offcpu_threshold)
		return false;
	if (bpf_map_update_elem(&offcpu_start, &tid, &st, BPF_ANY)) {
		count(OP_CNT_OFFCPU_FULL);
		return false;
	}
	count(OP_CNT_OFFCPU_OUT);
	return true;
}

#endif

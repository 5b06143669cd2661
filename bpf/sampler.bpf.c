// SPDX-License-Identifier: GPL-2.0
/*
 * Kernel half of the sampler: a perf_event program on the cpu-clock software event (one per
 * online CPU) that records pid, tid, thread name, cpu, time, the kernel stack and the user
 * stack of the interrupted task, and sends one variable-length struct op_trace per sample
 * through the `events` ring buffer. exec and exit of thread groups are sent too, so user
 * space refreshes or retires its view of a process at the right time.
 *
 * The programs are here; their parts are headers by stage: sample/record.bpf.h (the record,
 * ring buffer, counters, target pids, user registers), unwind/fp.bpf.h (frame-pointer walk),
 * unwind/native.bpf.h (CFI walk). Loaded by lib/sample/sampler.c through the generated
 * skeleton.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "types.h"
#include "otelprof.h"
#include "sample/record.bpf.h"
#include "sample/offcpu.bpf.h"
#include "sample/alloc.bpf.h"
#include "unwind/fp.bpf.h"
#include "unwind/native.bpf.h"
#include "unwind/runtime.bpf.h"
#include "runtime/golabels.bpf.h"
#include "runtime/customlabels.bpf.h"
#include "runtime/python.bpf.h"
#include "runtime/v8.bpf.h"
#include "runtime/hotspot.bpf.h"

/* @t's process's unwind tables: its own, else (between fork and exec) its parent's. */
static __always_inline struct op_unwind_proc *unwind_proc_of(const struct op_trace *t)
{
	struct op_unwind_proc *proc = bpf_map_lookup_elem(&unwind_procs, &t->hdr.pid);

	if (!proc && t->fork_parent)
		proc = bpf_map_lookup_elem(&unwind_procs, &t->fork_parent);
	return proc;
}

char LICENSE[] SEC("license") = "GPL";

OP_UNWIND_CHAIN(cpu, "perf_event", OP_CHAIN_CPU)
OP_RUNTIME_PROGRAM(v8, cpu, OP_CHAIN_CPU, "perf_event")
OP_RUNTIME_PROGRAM(hotspot, cpu, OP_CHAIN_CPU, "perf_event")

/*
 * Drop-in for the upstream receiver (issue 22): record the idle task's samples (its kernel
 * stack) instead of counting them (send_idle_frames), and the switch probabilistic profiling
 * flips from user space at each interval (lib/sample/sampler.c, op_sampler_pause()).
 */
const volatile bool idle_frames = false;
/* Send a young process's mappings at its exit (send_exit_maps); user space sets it when it names.
 */
const volatile bool exit_maps = false;
volatile bool sampling_paused = false;

/* The labels the sampled thread publishes, into t->labels; t->ctx_len says how many bytes. */
static __always_inline void read_labels(struct op_trace *t, struct task_struct *task)
{
	struct op_label_proc *lp;
	struct op_labels *out = &t->labels;

	t->ctx_len = 0;
	if (!labels_enabled)
		return;
	lp = bpf_map_lookup_elem(&label_procs, &t->hdr.pid);
	if (!lp)
		return;
	out->n = 0;
	out->flags = 0;
	out->source = OP_LABELS_NONE;
	if (lp->source == OP_LABELS_GO)
		golabels_read(task, lp, out);
	else if (lp->source == OP_LABELS_CUSTOM)
		customlabels_read(task, lp, out);
	if (out->n || out->flags)
		t->ctx_len =
			OP_LABELS_HDR_SIZE + (out->n % (OP_MAX_LABELS + 1)) * sizeof(out->l[0]);
}

SEC("perf_event")
int on_cpu_sample(struct bpf_perf_event_data *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 pid = pid_tgid >> 32, chain = OP_CHAIN_CPU;
	struct task_struct *task;
	struct user_regs regs;
	struct op_trace *t;
	bool refresh = false;
	long n;

	if (sampling_paused)
		return 0;
	if (pid == 0 && !idle_frames) {
		count(OP_CNT_IDLE);
		return 0;
	}
	if (filter_pids && !bpf_map_lookup_elem(&target_pids, &pid)) {
		count(OP_CNT_FILTERED);
		return 0;
	}
	t = bpf_map_lookup_elem(&scratch, &chain);
	if (!t)
		return 0;

	t->hdr.type = OP_EV_TRACE;
	t->hdr.pid = pid;
	t->tid = (__u32)pid_tgid;
	t->cpu = bpf_get_smp_processor_id();
	t->ktime_ns = bpf_ktime_get_ns();
	t->flags = sampled_user_mode(ctx) ? 0 : OP_TRACE_KERNEL_MODE;
	t->unwind_error = OTELPROF_UNWIND_OK;
	t->origin = OP_ORIGIN_CPU;
	t->state = OP_STATE_NONE;
	t->value = 1;
	bpf_get_current_comm(t->comm, sizeof(t->comm));

	t->n_kernel = 0;
	if (kernel_stacks && (t->flags & OP_TRACE_KERNEL_MODE)) {
		n = bpf_get_stack(ctx, t->frames, OP_MAX_KERNEL_FRAMES * sizeof(__u64), 0);
		if (n > 0)
			t->n_kernel = n / sizeof(__u64);
	}

	t->n_user = 0;
	task = bpf_get_current_task_btf();
	t->fork_parent = forked_parent(task, t->ktime_ns);
	read_labels(t, task);
	if ((t->flags & OP_TRACE_KERNEL_MODE) && in_execve(task)) {
		t->unwind_error = OTELPROF_UNWIND_IN_EXEC;
	} else if (get_user_regs(ctx, task, &regs)) {
		struct op_unwind_proc *proc = unwind_proc_of(t);
		struct walk_ctx w = { .t = t, .proc = proc };

		if (proc && (w.s = unwind_begin(t, OP_CHAIN_CPU))) {
			unwind_leaf_regs_perf(ctx, w.s, task, &regs);
			return walk_and_submit(ctx, &cpu_progs, &w);
		}
		/* no CFI tables (yet): frame pointers, and tell user space */
		refresh = true;
		t->n_user = walk_frame_pointers(t, t->n_kernel, &regs);
	} else {
		t->unwind_error = OTELPROF_UNWIND_NO_USER_REGS;
	}
	return submit_trace(t, refresh);
}

OP_UNWIND_CHAIN(sched, "tp_btf/sched_switch", OP_CHAIN_SCHED)
OP_RUNTIME_PROGRAM(v8, sched, OP_CHAIN_SCHED, "tp_btf/sched_switch")

/* CPython frames (issue 15): one program per chain, reached by tail call (runtime.bpf.h) */
OP_RUNTIME_PROGRAM(python, cpu, OP_CHAIN_CPU, "perf_event")
OP_RUNTIME_PROGRAM(python, sched, OP_CHAIN_SCHED, "tp_btf/sched_switch")
OP_RUNTIME_PROGRAM(hotspot, sched, OP_CHAIN_SCHED, "tp_btf/sched_switch")

/*
 * Off-CPU (sample/offcpu.bpf.h): the thread coming in ends its sampled interval; the thread
 * going out (current) may start one, and then its stack is taken now, where it blocks.
 */
SEC("tp_btf/sched_switch")
int BPF_PROG(on_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	__u32 chain = OP_CHAIN_SCHED;
	__u64 now = bpf_ktime_get_ns();
	struct pt_regs *kregs, uregs;
	struct op_unwind_proc *proc;
	struct user_regs regs;
	struct op_trace *t;
	long n;

	offcpu_switch_in(next);
	if (!offcpu_sample_out(prev, now))
		return 0;
	t = bpf_map_lookup_elem(&scratch, &chain);
	if (!t)
		return 0;
	t->hdr.type = OP_EV_TRACE;
	t->hdr.pid = BPF_CORE_READ(prev, tgid);
	t->tid = BPF_CORE_READ(prev, pid);
	t->cpu = bpf_get_smp_processor_id();
	t->ktime_ns = now;
	t->flags = OP_TRACE_KERNEL_MODE | OP_TRACE_OFFCPU_PENDING;
	t->unwind_error = OTELPROF_UNWIND_OK;
	t->origin = OP_ORIGIN_OFF_CPU;
	t->state = offcpu_state(preempt, prev_state);
	t->value = 0;
	BPF_CORE_READ_STR_INTO(&t->comm, prev, comm);
	t->n_kernel = 0;
	if (kernel_stacks) {
		n = bpf_get_stack(ctx, t->frames, OP_MAX_KERNEL_FRAMES * sizeof(__u64), 0);
		if (n > 0)
			t->n_kernel = n / sizeof(__u64);
	}
	t->n_user = 0;
	t->fork_parent = forked_parent(prev, now);
	read_labels(t, prev);
	kregs = (struct pt_regs *)bpf_task_pt_regs(prev);
	if (!BPF_CORE_READ(prev, mm) || !kregs ||
	    bpf_probe_read_kernel(&uregs, sizeof(uregs), kregs)) {
		t->unwind_error = OTELPROF_UNWIND_NO_USER_REGS; /* a kernel thread */
		return submit_trace(t, false);
	}
	proc = unwind_proc_of(t);
	if (proc) {
		struct walk_ctx w = { .t = t, .proc = proc };

		w.s = unwind_begin(t, OP_CHAIN_SCHED);
		if (w.s) {
			unwind_leaf_regs_pt(w.s, &uregs);
			return walk_and_submit(ctx, &sched_progs, &w);
		}
	}
	regs.ip = uregs.ip;
	regs.sp = uregs.sp;
	regs.bp = uregs.bp;
	t->n_user = walk_frame_pointers(t, t->n_kernel, &regs);
	return submit_trace(t, true);
}

/*
 * A uprobe's event - a probe link hit, a sampled allocation - sent with the stack of the
 * registers @ctx, walked on chain @chain (its tail-call array @progs): @origin, @value,
 * @flags, @now, and for allocations their address @addr and the mean @mean they were drawn at.
 */
static __always_inline int uprobe_submit(struct pt_regs *ctx, __u32 chain, void *progs, __u8 origin,
					 __u64 value, __u32 flags, __u64 now, __u64 addr,
					 __u64 mean)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 pid = pid_tgid >> 32;
	struct op_unwind_proc *proc;
	struct user_regs regs;
	struct op_trace *t;

	t = bpf_map_lookup_elem(&scratch, &chain);
	if (!t)
		return 0;
	t->hdr.type = OP_EV_TRACE;
	t->hdr.pid = pid;
	t->tid = (__u32)pid_tgid;
	t->cpu = bpf_get_smp_processor_id();
	t->ktime_ns = now;
	t->flags = flags;
	t->unwind_error = OTELPROF_UNWIND_OK;
	t->origin = origin;
	t->state = OP_STATE_NONE;
	t->value = value;
	t->addr = addr;
	t->mean = mean;
	bpf_get_current_comm(t->comm, sizeof(t->comm));
	t->n_kernel = 0;
	t->n_user = 0;
	t->fork_parent = forked_parent(bpf_get_current_task_btf(), now);
	read_labels(t, bpf_get_current_task_btf());
	/* a uprobe: the leaf is the traced function; a uretprobe: the caller, at the call site */
	proc = unwind_proc_of(t);
	if (proc) {
		struct walk_ctx w = { .t = t, .proc = proc };

		w.s = unwind_begin(t, chain);
		if (w.s) {
			unwind_leaf_regs_pt(w.s, ctx);
			return walk_and_submit(ctx, progs, &w);
		}
	}
	regs.ip = PT_REGS_IP(ctx);
	regs.sp = PT_REGS_SP(ctx);
	regs.bp = ctx->bp;
	t->n_user = walk_frame_pointers(t, 0, &regs);
	return submit_trace(t, true);
}

/*
 * Probe links (issue 22, the upstream receiver's probe_links): a uprobe or uretprobe on a
 * traced function; each hit is a sample of the stack at that point (events/count). Attached
 * by lib/sample/sampler.c, loaded only when links are configured.
 */
OP_UNWIND_CHAIN(probe, "uprobe", OP_CHAIN_PROBE)
/* the language runtimes on this chain too: a traced function called from Python, JS, Java */
OP_RUNTIME_PROGRAM(python, probe, OP_CHAIN_PROBE, "uprobe")
OP_RUNTIME_PROGRAM(v8, probe, OP_CHAIN_PROBE, "uprobe")
OP_RUNTIME_PROGRAM(hotspot, probe, OP_CHAIN_PROBE, "uprobe")

SEC("uprobe")
int on_probe(struct pt_regs *ctx)
{
	__u32 pid = bpf_get_current_pid_tgid() >> 32;

	if (filter_pids && !bpf_map_lookup_elem(&target_pids, &pid)) {
		count(OP_CNT_FILTERED);
		return 0;
	}
	return uprobe_submit(ctx, OP_CHAIN_PROBE, &probe_progs, OP_ORIGIN_PROBE, 1, 0,
			     bpf_ktime_get_ns(), 0, 0);
}

/*
 * Allocations (sample/alloc.bpf.h): entry programs decide the sample by bytes, alloc_ret takes
 * the address and the caller's stack. lib/sample/alloc.c attaches them by symbol.
 */
SEC("uprobe")
int BPF_KPROBE(alloc_malloc, __u64 size)
{
	alloc_enter(size, 0);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(alloc_calloc, __u64 n, __u64 size)
{
	__u64 max = ~0ull;

	/* an overflowing calloc fails: nothing to record (the barrier keeps clang from turning
	 * the test into a 128-bit multiplication BPF does not have) */
	asm volatile("" : "+r"(max));
	if (!size || n <= max / size)
		alloc_enter(n * size, 0);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(alloc_realloc, __u64 ptr, __u64 size)
{
	alloc_release(ptr); /* moved or not, the old block ends; the new one is drawn afresh */
	alloc_enter(size, 0);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(alloc_aligned, __u64 align, __u64 size) /* aligned_alloc, memalign */
{
	alloc_enter(size, 0);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(alloc_posix_memalign, __u64 memptr, __u64 align, __u64 size)
{
	alloc_enter(size, memptr);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(alloc_free, __u64 ptr)
{
	alloc_release(ptr);
	return 0;
}

OP_UNWIND_CHAIN(alloc, "uretprobe", OP_CHAIN_ALLOC)
/* the language runtimes on this chain too: an allocation made from Python, JS, Java */
OP_RUNTIME_PROGRAM(python, alloc, OP_CHAIN_ALLOC, "uretprobe")
OP_RUNTIME_PROGRAM(v8, alloc, OP_CHAIN_ALLOC, "uretprobe")
OP_RUNTIME_PROGRAM(hotspot, alloc, OP_CHAIN_ALLOC, "uretprobe")

/* Send the sampled allocation @addr of @size bytes with the stack of the registers @ctx. */
static __always_inline int alloc_submit(struct pt_regs *ctx, __u64 addr, __u64 size, __u64 mean,
					__u32 flags, __u64 now)
{
	return uprobe_submit(ctx, OP_CHAIN_ALLOC, &alloc_progs, OP_ORIGIN_ALLOC, size, flags, now,
			     addr, mean);
}

SEC("uretprobe")
int alloc_ret(struct pt_regs *ctx)
{
	__u64 addr, size, now = bpf_ktime_get_ns();
	bool tracked;

	if (!alloc_returned(PT_REGS_RC(ctx), &addr, &size, &tracked))
		return 0;
	return alloc_submit(ctx, addr, size, 0, tracked ? 0 : OP_TRACE_ALLOC_NOTRACK, now);
}

/*
 * In-process sampling (preload/alloc.c): libotelprof_alloc.so calls otelprof_alloc_sampled()
 * for the allocations it sampled and otelprof_alloc_freed() for their frees; these are the
 * uprobes on them. Its process is noted so that the allocator probes leave it alone.
 */
SEC("uprobe")
int BPF_KPROBE(alloc_pre_sampled, __u64 addr, __u64 size, __u64 mean, int tracked)
{
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	__u64 now = bpf_ktime_get_ns();
	__u8 one = 1;

	if (!bpf_map_lookup_elem(&alloc_preload_pids, &pid))
		bpf_map_update_elem(&alloc_preload_pids, &pid, &one, BPF_ANY);
	if (!addr || !size || (filter_pids && !bpf_map_lookup_elem(&target_pids, &pid)))
		return 0;
	count(OP_CNT_ALLOCS);
	return alloc_submit(ctx, addr, size, mean ? mean : 1,
			    OP_TRACE_ALLOC_PRELOAD | (tracked ? 0 : OP_TRACE_ALLOC_NOTRACK), now);
}

SEC("uprobe")
int BPF_KPROBE(alloc_pre_freed, __u64 addr)
{
	__u32 pid = bpf_get_current_pid_tgid() >> 32;

	if (addr && (!filter_pids || bpf_map_lookup_elem(&target_pids, &pid)))
		alloc_send_free(addr);
	return 0;
}

static __always_inline void send_proc_event(__u32 type, struct task_struct *task)
{
	struct op_proc_event e = {};
	__u32 pid = BPF_CORE_READ(task, tgid);
	bool early = false;

	if (filter_pids && !bpf_map_lookup_elem(&target_pids, &pid))
		return;
	e.hdr.type = type;
	e.hdr.pid = pid;
	e.tid = BPF_CORE_READ(task, pid);
	e.ktime_ns = bpf_ktime_get_ns();
	BPF_CORE_READ_STR_INTO(&e.comm, task, comm);
	if (type == OP_EV_EXEC) {
		/* the early notice wakes the reader; the one in order only when it is alone */
		e.hdr.type = OP_EV_EXEC_EARLY;
		early = !bpf_ringbuf_output(&exec_events, &e, sizeof(e), BPF_RB_FORCE_WAKEUP);
		e.hdr.type = type;
		/* the previous program's mappings are no map for this one's walks */
		bpf_map_delete_elem(&unwind_procs, &pid);
	}
	if (bpf_ringbuf_output(&events, &e, sizeof(e), wakeup_flags(type == OP_EV_EXEC && !early)))
		count(OP_CNT_LOST);
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	send_proc_event(OP_EV_EXEC, p);
	return 0;
}

#ifndef OP_WALK_ONLY
extern int bpf_iter_task_vma_new(struct bpf_iter_task_vma *it, struct task_struct *task,
				 __u64 addr) __ksym __weak;
extern struct vm_area_struct *bpf_iter_task_vma_next(struct bpf_iter_task_vma *it) __ksym __weak;
extern void bpf_iter_task_vma_destroy(struct bpf_iter_task_vma *it) __ksym __weak;

#define VM_EXEC_FLAG 0x4 /* VM_EXEC */

/*
 * struct op_exit_maps (bpf/types.h) for @task, which exits young: its file-backed executable
 * mappings, while its memory is still there (the tracepoint fires before exit_mm()). A kernel
 * that has dropped the memory by then, or is too busy to lock it, gives none.
 */
static __always_inline void send_exit_maps(struct task_struct *task)
{
	struct bpf_iter_task_vma it;
	struct vm_area_struct *vma;
	struct op_exit_maps *e;
	__u64 vdso;
	__u32 n = 0;

	if (!exit_maps || !task->mm || bpf_ktime_get_ns() - task->start_time > OP_EXIT_MAPS_AGE_NS)
		return;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count(OP_CNT_LOST);
		return;
	}
	vdso = (__u64)BPF_CORE_READ(task, mm, context.vdso);
	/*
	 * The count lives in the record, not in a register: the verifier follows a register's
	 * exact value through every turn of the loop (a state per count, 190 ms of the start's
	 * verification), a value read back from the record is just bounded by the mask.
	 */
	e->n = 0;
	bpf_iter_task_vma_new(&it, task, 0);
	while ((vma = bpf_iter_task_vma_next(&it))) {
		struct op_exit_vma *v;
		struct file *f;

		n = e->n;
		if (n >= OP_EXIT_MAPS_MAX)
			break;
		f = vma->vm_file;
		if (!(vma->vm_flags & VM_EXEC_FLAG) || (!f && vma->vm_start != vdso))
			continue;
		v = &e->v[n & (OP_EXIT_MAPS_MAX - 1)];
		v->start = vma->vm_start;
		v->end = vma->vm_end;
		v->offset = (__u64)vma->vm_pgoff << 12;
		/* the vDSO: no file, inode 0 */
		v->ino = f ? BPF_CORE_READ(f, f_inode, i_ino) : 0;
		v->dev = f ? BPF_CORE_READ(f, f_inode, i_sb, s_dev) : 0;
		v->pad = 0;
		e->n = n + 1;
	}
	bpf_iter_task_vma_destroy(&it);
	n = e->n;
	if (!n) {
		bpf_ringbuf_discard(e, BPF_RB_NO_WAKEUP);
		return;
	}
	e->hdr.type = OP_EV_EXIT_MAPS;
	e->hdr.pid = task->tgid;
	e->pad = 0;
	bpf_ringbuf_submit(e, wakeup_flags(false));
}
#else
/*
 * The build for the instances that load only the walk continuations (lib/sample/sampler.c):
 * no kfunc externs, which make libbpf parse the kernel's BTF for every instance of the object
 * whatever it loads. Its on_exit is never loaded.
 */
static __always_inline void send_exit_maps(struct task_struct *task)
{
	(void)task;
}
#endif

SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *p)
{
	__u32 pid = BPF_CORE_READ(p, tgid);

	/* Threads exit one by one; only the group leader's exit retires the process. */
	if (BPF_CORE_READ(p, pid) != pid)
		return 0;
	if (!filter_pids || bpf_map_lookup_elem(&target_pids, &pid))
		send_exit_maps(p);
	send_proc_event(OP_EV_EXIT, p);
	return 0;
}

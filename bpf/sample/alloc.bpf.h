/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Allocation sampling by uprobes on the allocator of the target processes (no kprobes here:
 * the uprobe PMU). lib/sample/alloc.c attaches the entry programs (alloc_malloc, alloc_calloc,
 * ..., alloc_free) and alloc_ret, a uretprobe, to the allocator functions of each library file
 * (glibc, jemalloc, tcmalloc, mimalloc), found by symbol.
 *
 * Sampling by bytes, as Go and tcmalloc do: each thread counts down the bytes it allocates from
 * an exponentially distributed draw (mean alloc_mean); the allocation that crosses zero is
 * sampled and a new draw starts. An allocation of size s is then sampled with probability
 * 1 - exp(-s / mean), which user space divides by to estimate objects and bytes. The draw is
 * a table of exponential quantiles that user space fills (alloc_exp): BPF has no logarithm.
 *
 * A sampled call notes its size by thread in alloc_calls; its return (alloc_ret) takes the
 * address, puts it in the in-use map alloc_inuse and walks the caller's stack from the return
 * registers (the allocator's own frame is gone: the stack starts at the call site). free()
 * of an address in alloc_inuse sends an op_alloc_free. Every other free costs the trap and
 * one hash delete that finds nothing.
 */
#ifndef OTELPROF_ALLOC_BPF_H
#define OTELPROF_ALLOC_BPF_H

#include "sample/record.bpf.h"

/* Mean bytes between samples; 0 = allocation sampling off (the programs are not loaded). */
const volatile __u64 alloc_mean = 0;
/* The profiler itself: whole-system probes fire in it too, and its records allocate. */
const volatile __u32 alloc_self = 0;

/* Exponential quantiles times alloc_mean (OP_ALLOC_EXP_SLOTS), filled by user space. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, OP_ALLOC_EXP_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} alloc_exp SEC(".maps");

/* Bytes each thread allocates before its next sample. LRU: a thread gone leaves nothing. */
struct alloc_thread {
	__s64 left;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct alloc_thread);
} alloc_threads SEC(".maps");

/* Sampled calls waiting for their return, by tid. */
struct alloc_call {
	__u64 size;
	__u64 memptr; /* posix_memalign: where the address is written; 0: the return value */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct alloc_call);
} alloc_calls SEC(".maps");

/* Sampled allocations not freed yet. Bounded (resized by user space); a full map is counted. */
struct alloc_key {
	__u32 pid;
	__u32 pad;
	__u64 addr;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct alloc_key);
	__type(value, __u64);
} alloc_inuse SEC(".maps");

/*
 * Processes whose allocations libotelprof_alloc.so samples in-process (its markers' uprobes,
 * alloc_pre_*): the allocator probes skip them. Filled by user space and by alloc_pre_sampled.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, OP_MAX_TARGET_PIDS);
	__type(key, __u32);
	__type(value, __u8);
} alloc_preload_pids SEC(".maps");

/* Bytes to the next sample: an exponential draw of mean alloc_mean. */
static __always_inline __s64 alloc_draw(void)
{
	__u32 i = bpf_get_prandom_u32() % OP_ALLOC_EXP_SLOTS;
	__u64 *q = bpf_map_lookup_elem(&alloc_exp, &i);

	return q && *q ? (__s64)*q : (__s64)alloc_mean;
}

/*
 * An allocation of @size bytes starts (@memptr: posix_memalign's out pointer). Sampled: its
 * size is noted for alloc_ret.
 */
static __always_inline void alloc_enter(__u64 size, __u64 memptr)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 pid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	struct alloc_call call = { size, memptr };
	struct alloc_thread *th;

	if (!size || pid == alloc_self ||
	    (filter_pids && !bpf_map_lookup_elem(&target_pids, &pid)) ||
	    bpf_map_lookup_elem(&alloc_preload_pids, &pid))
		return;
	th = bpf_map_lookup_elem(&alloc_threads, &tid);
	if (!th) {
		struct alloc_thread fresh = { alloc_draw() };

		bpf_map_update_elem(&alloc_threads, &tid, &fresh, BPF_ANY);
		th = bpf_map_lookup_elem(&alloc_threads, &tid);
		if (!th)
			return;
	}
	if (th->left > 0 && size < (__u64)th->left) { /* unsigned: sizes from 2^63 are sampled */
		th->left -= (__s64)size;
		return;
	}
	th->left = alloc_draw();
	if (!bpf_map_update_elem(&alloc_calls, &tid, &call, BPF_ANY))
		count(OP_CNT_ALLOCS);
}

/* A sampled allocation, @addr of the current process, is freed: tell user space. */
static __always_inline void alloc_send_free(__u64 addr)
{
	struct op_alloc_free e;

	e.hdr.type = OP_EV_ALLOC_FREE;
	e.hdr.pid = bpf_get_current_pid_tgid() >> 32;
	e.tid = (__u32)bpf_get_current_pid_tgid();
	e.pad = 0;
	e.ktime_ns = bpf_ktime_get_ns();
	e.addr = addr;
	if (bpf_ringbuf_output(&events, &e, sizeof(e), wakeup_flags(false)))
		count(OP_CNT_LOST);
	else
		count(OP_CNT_FREES);
}

/* @addr is freed: if it was a sampled allocation, tell user space. */
static __always_inline void alloc_release(__u64 addr)
{
	struct alloc_key key = { .pid = bpf_get_current_pid_tgid() >> 32, .addr = addr };

	if (addr && !bpf_map_delete_elem(&alloc_inuse, &key))
		alloc_send_free(addr);
}

/*
 * A call returns with @ret: if it was sampled, its address and size, and whether the in-use
 * map took it (false: OP_TRACE_ALLOC_NOTRACK). False when there is nothing to record.
 */
static __always_inline bool alloc_returned(__u64 ret, __u64 *addr, __u64 *size, bool *tracked)
/* (the caller reads the time first: a free of the address can only come after it) */
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct alloc_call *c = bpf_map_lookup_elem(&alloc_calls, &tid);
	struct alloc_key key = { .pid = bpf_get_current_pid_tgid() >> 32 };
	__u64 a = ret, memptr;

	if (!c)
		return false;
	*size = c->size;
	memptr = c->memptr;
	bpf_map_delete_elem(&alloc_calls, &tid);
	if (memptr) {
		/* posix_memalign: 0 and the address in *memptr, or an error number */
		a = 0;
		if (ret || bpf_probe_read_user(&a, sizeof(a), (void *)memptr))
			a = 0;
	}
	if (!a) {
		count(OP_CNT_ALLOC_FAIL);
		return false;
	}
	*addr = key.addr = a;
	*tracked = !bpf_map_update_elem(&alloc_inuse, &key, size, BPF_ANY);
	if (!*tracked)
		count(OP_CNT_ALLOC_FULL);
	return true;
}

#endif

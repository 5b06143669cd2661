/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Labels a thread publishes (bpf/types.h struct op_labels): which processes have them and
 * how to find them (label_procs, filled by lib/runtime/golabels and lib/runtime/customlabels),
 * the bounded copy of one key/value pair, and the thread pointer. The readers of each source
 * are bpf/runtime/golabels.bpf.h and bpf/runtime/customlabels.bpf.h; bpf/sampler.bpf.c calls
 * them at sample time; submit_trace() sends what they gathered after the frames.
 */
#ifndef OTELPROF_LABELS_BPF_H
#define OTELPROF_LABELS_BPF_H

#include "sample/record.bpf.h"

/* Set by user space: labels are read at all (the receiver's/CLI's switch). */
const volatile bool labels_enabled = false;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct op_label_proc);
} label_procs SEC(".maps");

/* The thread pointer (fs base) of @task, the base of its static TLS. */
static __always_inline __u64 thread_pointer(struct task_struct *task)
{
	return BPF_CORE_READ(task, thread.fsbase);
}

/* Label @n of @out (n < OP_MAX_LABELS, checked by the caller), bounded for the verifier. */
static __always_inline struct op_label *label_slot(struct op_labels *out, __u32 n)
{
	asm volatile("" : "+r"(n));
	if (n >= OP_MAX_LABELS)
		n = OP_MAX_LABELS - 1;
	return &out->l[n];
}

/*
 * Copy one label: @klen bytes of key at @kptr, @vlen of value at @vptr (user memory), cut to
 * the fixed sizes and flagged when cut. False when the memory cannot be read.
 */
static __always_inline bool label_copy(struct op_label *l, __u64 kptr, __u64 klen, __u64 vptr,
				       __u64 vlen)
{
	__u32 k = klen < OP_LABEL_KEY_LEN ? klen : OP_LABEL_KEY_LEN;
	__u32 v = vlen < OP_LABEL_VAL_LEN ? vlen : OP_LABEL_VAL_LEN;

	l->flags = (klen > OP_LABEL_KEY_LEN ? OP_LABEL_KEY_CUT : 0) |
		   (vlen > OP_LABEL_VAL_LEN ? OP_LABEL_VAL_CUT : 0);
	l->klen = k;
	l->vlen = v;
	asm volatile("" : "+r"(k), "+r"(v));
	if (k > OP_LABEL_KEY_LEN || v > OP_LABEL_VAL_LEN)
		return false;
	if (k && bpf_probe_read_user(l->key, k, (const void *)kptr))
		return false;
	if (v && bpf_probe_read_user(l->val, v, (const void *)vptr))
		return false;
	return true;
}

#endif

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Labels published through the custom-labels ABI v1 (the `custom-labels` library for C, C++
 * and Rust): the thread-local custom_labels_current_set points to a label set
 * {storage, count, capacity}; storage holds count labels {key {len, buf}, value {len, buf}};
 * a label whose key.buf is NULL is a hole, and of equal keys the first wins (duplicates are
 * dropped in user space). lib/runtime/customlabels finds the variable's offset from the
 * thread pointer.
 */
#ifndef OTELPROF_CUSTOMLABELS_BPF_H
#define OTELPROF_CUSTOMLABELS_BPF_H

#include "sample/labels.bpf.h"

struct cl_string {
	__u64 len, buf;
};

struct cl_label {
	struct cl_string key, val;
};

struct cl_labelset {
	__u64 storage, count, capacity;
};

struct customlabels_walk {
	struct op_labels *out;
	__u64 storage, count;
};

/* Labels looked at per sample, holes included. */
#define CL_MAX_SLOTS 32

static long customlabels_one(__u64 i, void *arg)
{
	struct customlabels_walk *c = arg;
	struct op_labels *out = c->out;
	struct cl_label lab;
	__u32 n = out->n;

	if (i >= c->count)
		return 1;
	if (bpf_probe_read_user(&lab, sizeof(lab), (const void *)(c->storage + i * sizeof(lab))))
		return 1;
	if (!lab.key.buf)
		return 0; /* a hole */
	if (n >= OP_MAX_LABELS) {
		out->flags |= OP_LABELS_MORE;
		return 1;
	}
	if (!label_copy(label_slot(out, n), lab.key.buf, lab.key.len, lab.val.buf,
			lab.val.buf ? lab.val.len : 0))
		return 1;
	out->n = n + 1;
	return 0;
}

static __always_inline void customlabels_read(struct task_struct *task,
					      const struct op_label_proc *lp, struct op_labels *out)
{
	struct customlabels_walk c = { .out = out };
	struct cl_labelset set;
	__u64 setp = 0;

	if (bpf_probe_read_user(&setp, 8, (const void *)(thread_pointer(task) + lp->tls_off)) ||
	    !setp)
		return;
	if (bpf_probe_read_user(&set, sizeof(set), (const void *)setp) || !set.storage)
		return;
	out->source = OP_LABELS_CUSTOM;
	c.storage = set.storage;
	c.count = set.count;
	if (c.count > CL_MAX_SLOTS) {
		out->flags |= OP_LABELS_MORE;
		c.count = CL_MAX_SLOTS;
	}
	bpf_loop(CL_MAX_SLOTS, customlabels_one, &c, 0);
}

#endif

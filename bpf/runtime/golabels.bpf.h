/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Go pprof labels (runtime/pprof.Do, SetGoroutineLabels) of the goroutine a thread runs: the
 * thread's g from its TLS, g.m.curg (the user goroutine: g itself may be the scheduler's g0
 * or the signal g), then curg.labels. Go 1.24 and later keep them as a slice of
 * {key, value string} pairs (32 bytes each), sorted by key; Go 1.23 and earlier as a
 * map[string]string (g.labels points to the map variable, which points to the hmap), whose
 * buckets are read here (up to 2^GO_MAX_BUCKET_LOG2 buckets,
 * overflow buckets not followed: a label set that large is cut and flagged). The offsets come
 * from lib/runtime/golabels (the binary's DWARF, else its table per Go version).
 */
#ifndef OTELPROF_GOLABELS_BPF_H
#define OTELPROF_GOLABELS_BPF_H

#include "sample/labels.bpf.h"

struct go_string {
	__u64 ptr, len;
};

struct go_label {
	struct go_string key, val;
};

/* Go <= 1.23 runtime.hmap and the bucket of a map[string]string (internal/abi, runtime/map.go) */
#define GO_HMAP_COUNT	   0
#define GO_HMAP_B	   9
#define GO_HMAP_BUCKETS	   16
#define GO_BUCKET_SLOTS	   8
#define GO_MAX_BUCKET_LOG2 3

struct go_bucket {
	__u8 tophash[GO_BUCKET_SLOTS];
	struct go_string keys[GO_BUCKET_SLOTS];
	struct go_string vals[GO_BUCKET_SLOTS];
	__u64 overflow;
};

struct golabels_walk {
	struct op_labels *out;
	__u64 addr;  /* slice: the array; map: the bucket array */
	__u64 count; /* pairs (slice) or buckets (map) */
};

static long golabels_slice_one(__u64 i, void *arg)
{
	struct golabels_walk *g = arg;
	struct op_labels *out = g->out;
	struct go_label lab;
	__u32 n = out->n;

	if (i >= g->count)
		return 1;
	if (n >= OP_MAX_LABELS) {
		out->flags |= OP_LABELS_MORE;
		return 1;
	}
	if (bpf_probe_read_user(&lab, sizeof(lab), (const void *)(g->addr + i * sizeof(lab))))
		return 1;
	if (!label_copy(label_slot(out, n), lab.key.ptr, lab.key.len, lab.val.ptr, lab.val.len))
		return 1;
	out->n = n + 1;
	return 0;
}

/* Scratch for one bucket: too big for the 512-byte stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct go_bucket);
} golabels_bucket SEC(".maps");

static long golabels_bucket_one(__u64 b, void *arg)
{
	struct golabels_walk *g = arg;
	struct op_labels *out = g->out;
	struct go_bucket *bk;
	__u32 zero = 0;

	if (b >= g->count)
		return 1;
	bk = bpf_map_lookup_elem(&golabels_bucket, &zero);
	if (!bk || bpf_probe_read_user(bk, sizeof(*bk),
				       (const void *)(g->addr + b * sizeof(struct go_bucket))))
		return 1;
	for (int i = 0; i < GO_BUCKET_SLOTS; i++) {
		__u32 n = out->n;

		/* tophash 0-4 mark empty or evacuated cells (runtime/map.go minTopHash 5) */
		if (bk->tophash[i] < 5 || !bk->keys[i].ptr)
			continue;
		if (n >= OP_MAX_LABELS) {
			out->flags |= OP_LABELS_MORE;
			return 1;
		}
		if (!label_copy(label_slot(out, n), bk->keys[i].ptr, bk->keys[i].len,
				bk->vals[i].ptr, bk->vals[i].len))
			return 1;
		out->n = n + 1;
	}
	return 0;
}

/* Read the labels of the goroutine @task runs into @out. */
static __always_inline void golabels_read(struct task_struct *task, const struct op_label_proc *lp,
					  struct op_labels *out)
{
	struct golabels_walk g = { .out = out };
	__u64 gp = 0, mp = 0, curg = 0, labels = 0, hdr[2];
	__u8 log2b = 0;

	if (bpf_probe_read_user(&gp, 8, (const void *)(thread_pointer(task) + lp->tls_off)) || !gp)
		return;
	if (bpf_probe_read_user(&mp, 8, (const void *)(gp + lp->g_m)) || !mp)
		return;
	if (bpf_probe_read_user(&curg, 8, (const void *)(mp + lp->m_curg)) || !curg)
		return; /* no user goroutine: the scheduler or a signal handler */
	if (bpf_probe_read_user(&labels, 8, (const void *)(curg + lp->g_labels)) || !labels)
		return;
	out->source = OP_LABELS_GO;
	if (!lp->go_hmap) {
		/* labelMap: a slice {array, len, cap} */
		if (bpf_probe_read_user(hdr, sizeof(hdr), (const void *)labels))
			return;
		g.addr = hdr[0];
		g.count = hdr[1];
		if (g.count > OP_MAX_LABELS)
			out->flags |= OP_LABELS_MORE;
		bpf_loop(OP_MAX_LABELS, golabels_slice_one, &g, 0);
		return;
	}
	/* g.labels points to a labelMap, a map: one more pointer to the runtime.hmap */
	if (bpf_probe_read_user(&labels, 8, (const void *)labels) || !labels)
		return;
	if (bpf_probe_read_user(&log2b, 1, (const void *)(labels + GO_HMAP_B)) ||
	    bpf_probe_read_user(&g.addr, 8, (const void *)(labels + GO_HMAP_BUCKETS)) || !g.addr)
		return;
	if (log2b > GO_MAX_BUCKET_LOG2) {
		out->flags |= OP_LABELS_MORE;
		log2b = GO_MAX_BUCKET_LOG2;
	}
	g.count = 1u << log2b;
	bpf_loop(1u << GO_MAX_BUCKET_LOG2, golabels_bucket_one, &g, 0);
}

#endif

/* SPDX-License-Identifier: GPL-2.0 */
/* The frame-pointer walk: processes without unwind tables (yet), and frame-pointer mode. */
#ifndef OTELPROF_FP_BPF_H
#define OTELPROF_FP_BPF_H

#include "sample/record.bpf.h"

/*
 * Frame-pointer walk. Leaf first: the interrupted PC, then the return address saved beside
 * each frame's saved rbp. Ends at a zero or misaligned frame pointer, or a non-increasing
 * one (the stack grows down, so callers' frames are at higher addresses).
 */
static __always_inline __u32 walk_frame_pointers(struct op_trace *t, __u32 first,
						 const struct user_regs *r)
{
	__u64 bp = r->bp, next[2];
	__u32 n = 0;

	if (first >= OP_MAX_KERNEL_FRAMES + OP_MAX_USER_FRAMES)
		return 0;
	t->frames[first] = r->ip;
	n = 1;
	for (int i = 1; i < OP_MAX_USER_FRAMES; i++) {
		__u32 idx = first + i;

		if (!bp || (bp & 7))
			break;
		if (bpf_probe_read_user(next, sizeof(next), (void *)bp)) {
			t->unwind_error = OTELPROF_UNWIND_BAD_MEMORY;
			break;
		}
		if (!next[1])
			break;
		if (next[1] >> OP_FRAME_TAG_SHIFT)
			break; /* not a user address: it would read as a runtime frame's tag */
		/* keep clang from folding the bound into a pointer the verifier cannot check */
		asm volatile("" : "+r"(idx));
		if (idx >= OP_MAX_KERNEL_FRAMES + OP_MAX_USER_FRAMES)
			break;
		t->frames[idx] = next[1];
		n++;
		if (next[0] && next[0] <= bp)
			break;
		bp = next[0];
		if (i == OP_MAX_USER_FRAMES - 1 && bp)
			t->flags |= OP_TRACE_USER_TRUNCATED;
	}
	return n;
}

#endif

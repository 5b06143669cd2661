/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Records shared by bpf/sampler.bpf.c and lib/sample/sampler.c. Fixed-width types only: this file
 * is compiled both by clang -target bpf (with vmlinux.h) and by the host compiler.
 */
#ifndef OTELPROF_TYPES_H
#define OTELPROF_TYPES_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define OP_MAX_KERNEL_FRAMES 64
#define OP_MAX_USER_FRAMES   128
#define OP_COMM_LEN	     16
#define OP_MAX_TARGET_PIDS   4096

enum op_event_type {
	OP_EV_TRACE = 1,
	OP_EV_EXEC = 2,
	OP_EV_EXIT = 3,
};

/* op_trace.flags */
#define OP_TRACE_USER_TRUNCATED (1u << 0) /* more user frames than OP_MAX_USER_FRAMES */
#define OP_TRACE_KERNEL_MODE	(1u << 1) /* sample interrupted kernel code */

/* Indices of the per-CPU counters map (sampler.bpf.c `counters`). */
enum op_counter {
	OP_CNT_SAMPLES = 0,	 /* programme runs that produced a record */
	OP_CNT_LOST = 1,	 /* ring buffer full */
	OP_CNT_FILTERED = 2,	 /* not a target pid */
	OP_CNT_IDLE = 3,	 /* idle task (pid 0) skipped */
	OP_CNT_UNWIND_BASE = 16, /* + enum otelprof_unwind_error */
	OP_CNT_MAX = 32,
};

struct op_event_hdr {
	__u32 type; /* enum op_event_type */
	__u32 pid;  /* thread-group id */
};

/*
 * One sample. Variable length on the ring buffer: only frames[0 .. n_kernel + n_user) are
 * sent; kernel frames come first, then user frames, each leaf first. User frames are return
 * addresses except frames[n_kernel] (the interrupted PC).
 */
struct op_trace {
	struct op_event_hdr hdr;
	__u32 tid;
	__u32 cpu;
	__u64 ktime_ns; /* CLOCK_MONOTONIC (bpf_ktime_get_ns) */
	__u16 n_kernel;
	__u16 n_user;
	__u32 flags;	    /* OP_TRACE_* */
	__u32 unwind_error; /* enum otelprof_unwind_error */
	__u32 pad;
	__u8 comm[OP_COMM_LEN];
	__u64 frames[OP_MAX_KERNEL_FRAMES + OP_MAX_USER_FRAMES];
};

#define OP_TRACE_HDR_SIZE ((unsigned long)&((struct op_trace *)0)->frames)

/* exec and exit of a thread group. */
struct op_proc_event {
	struct op_event_hdr hdr;
	__u32 tid;
	__u32 pad;
	__u64 ktime_ns;
	__u8 comm[OP_COMM_LEN];
};

#endif

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

/*
 * Language runtimes whose frames the BPF side emits (bpf/runtime/<name>.bpf.h). The value is
 * also the runtime's slot in the `runtime_progs` tail-call array, the tag of its frames in a
 * trace (below), and the bit (1 << value) in otelprof_opts.runtimes... masks. 0 is native code.
 */
enum op_runtime_kind {
	OP_RUNTIME_NONE = 0,
	OP_RUNTIME_PYTHON = 1,
	OP_RUNTIME_V8 = 2,
	OP_RUNTIME_HOTSPOT = 3,
	/* no frames of their own: they find what a process publishes at sample time */
	OP_RUNTIME_GOLABELS = 4,     /* Go pprof labels */
	OP_RUNTIME_CUSTOMLABELS = 5, /* the custom-labels TLS ABI */
	OP_RUNTIME_MAX = 8,
};

/*
 * Trace frames are 64-bit slots. A native (or kernel) frame is its address, one slot. A
 * runtime's frame takes two slots: the first is tagged with the runtime in its top byte
 * (OP_FRAME_TAG(kind) | payload of at most 56 bits, e.g. a code object's address), the second
 * is the runtime's own (an instruction offset, a bytecode index...). No user address has a
 * non-zero top byte, so the tag is unambiguous; the unwinders never record a native PC with
 * one (they stop there).
 */
#define OP_FRAME_TAG_SHIFT     56
#define OP_FRAME_TAG(kind)     ((__u64)(kind) << OP_FRAME_TAG_SHIFT)
#define OP_FRAME_KIND(slot)    ((__u32)((slot) >> OP_FRAME_TAG_SHIFT))
#define OP_FRAME_PAYLOAD(slot) ((slot) & ((1ull << OP_FRAME_TAG_SHIFT) - 1))

/*
 * What a trace is a sample of (op_trace.origin) and what its value counts. CPU samples count
 * 1 each; the others carry their weight in op_trace.value.
 */
enum op_trace_origin {
	OP_ORIGIN_CPU = 0,     /* cpu-clock sample; value 1 */
	OP_ORIGIN_OFF_CPU = 1, /* a thread switched back in; value = nanoseconds off the CPU */
	OP_ORIGIN_ALLOC = 2,   /* a sampled allocation; value = bytes */
	OP_ORIGIN_PROBE = 3,   /* a traced function was hit (uprobe); value 1 */
	OP_ORIGIN_MAX = 8,
};

enum op_event_type {
	OP_EV_TRACE = 1,
	OP_EV_EXEC = 2,
	OP_EV_EXIT = 3,
	OP_EV_OFFCPU_END = 4, /* struct op_offcpu_end: a thread that left the CPU is back */
	OP_EV_ALLOC_FREE = 5, /* struct op_alloc_free: a sampled allocation was freed */
	OP_EV_EXIT_MAPS = 6,  /* struct op_exit_maps: a short-lived process's code, at its exit */
	/*
	 * struct op_proc_event, on the exec_events ring: the same exec, told ahead of the samples
	 * queued before it, so that its unwind tables load first (record.bpf.h)
	 */
	OP_EV_EXEC_EARLY = 7,
};

/*
 * Off-CPU: the state a thread left the CPU in (op_trace.state), from sched_switch's
 * prev_state and preempt.
 */
enum op_thread_state {
	OP_STATE_NONE = 0,
	OP_STATE_SLEEPING = 1,	      /* TASK_INTERRUPTIBLE: a sleep, a wait for I/O or a lock */
	OP_STATE_UNINTERRUPTIBLE = 2, /* TASK_UNINTERRUPTIBLE (D): disk I/O, page faults, ... */
	OP_STATE_PREEMPTED = 3,	      /* still runnable: the scheduler gave its CPU away */
	OP_STATE_STOPPED = 4,	      /* stopped or traced */
	OP_STATE_OTHER = 5,
};

/*
 * Labels a thread publishes for the profiler (Go pprof labels, the custom-labels TLS ABI),
 * read at sample time and sent after a trace's frames (op_trace.ctx_len). Bounded: at most
 * OP_MAX_LABELS labels, keys and values cut at OP_LABEL_KEY_LEN / OP_LABEL_VAL_LEN bytes
 * (the cut is flagged, never silent).
 */
#define OP_MAX_LABELS	 10
#define OP_LABEL_KEY_LEN 32
#define OP_LABEL_VAL_LEN 64

/* op_label.flags */
#define OP_LABEL_KEY_CUT (1u << 0)
#define OP_LABEL_VAL_CUT (1u << 1)

struct op_label {
	__u8 klen, vlen; /* bytes of key and val used (after any cut) */
	__u8 flags;	 /* OP_LABEL_* */
	__u8 pad[5];
	char key[OP_LABEL_KEY_LEN];
	char val[OP_LABEL_VAL_LEN];
};

/* Where a trace's labels came from (op_labels.source). */
enum op_label_source {
	OP_LABELS_NONE = 0,
	OP_LABELS_GO = 1,     /* the goroutine's pprof labels */
	OP_LABELS_CUSTOM = 2, /* custom-labels ABI v1 (custom_labels_current_set) */
};

/* op_labels.flags */
#define OP_LABELS_MORE (1u << 0) /* the thread had more labels than OP_MAX_LABELS */

/* The context blob: only the first n labels are sent. */
struct op_labels {
	__u8 n;
	__u8 source; /* enum op_label_source */
	__u8 flags;  /* OP_LABELS_* */
	__u8 pad[5];
	struct op_label l[OP_MAX_LABELS];
};

#define OP_LABELS_HDR_SIZE ((unsigned long)&((struct op_labels *)0)->l)
/* Trace slots the largest context blob takes after the frames. */
#define OP_CTX_SLOTS ((sizeof(struct op_labels) + 7) / 8)

/*
 * How to find a process's labels (the label_procs map, filled by lib/runtime/golabels and
 * lib/runtime/customlabels). Offsets are bytes; tls_off is relative to the thread pointer
 * (fs base on x86-64).
 */
struct op_label_proc {
	__u8 source;  /* enum op_label_source */
	__u8 go_hmap; /* Go <= 1.23: labels are a map[string]string, else a slice */
	__u8 pad[6];
	__s64 tls_off;	/* Go: where g is; custom labels: custom_labels_current_set */
	__u32 g_m;	/* Go: runtime.g.m */
	__u32 m_curg;	/* Go: runtime.m.curg */
	__u32 g_labels; /* Go: runtime.g.labels */
	__u32 pad2;
};

/* op_trace.flags */
#define OP_TRACE_USER_TRUNCATED (1u << 0) /* more user frames than OP_MAX_USER_FRAMES */
#define OP_TRACE_KERNEL_MODE	(1u << 1) /* sample interrupted kernel code */
#define OP_TRACE_OFFCPU_PENDING (1u << 2) /* off-CPU: its duration comes in an op_offcpu_end */
#define OP_TRACE_ALLOC_NOTRACK	(1u << 3) /* alloc: no room in the in-use map, its free unseen */
#define OP_TRACE_ALLOC_PRELOAD	(1u << 4) /* alloc: sampled in-process (libotelprof_alloc.so) */

/* Indices of the per-CPU counters map (sampler.bpf.c `counters`). */
enum op_counter {
	OP_CNT_SAMPLES = 0,	 /* programme runs that produced a record */
	OP_CNT_LOST = 1,	 /* ring buffer full */
	OP_CNT_FILTERED = 2,	 /* not a target pid */
	OP_CNT_IDLE = 3,	 /* idle task (pid 0) skipped */
	OP_CNT_OFFCPU_OUT = 4,	 /* off-CPU: switch-outs sampled (stack taken) */
	OP_CNT_OFFCPU_IN = 5,	 /* off-CPU: sampled threads switched in again (interval sent) */
	OP_CNT_OFFCPU_FULL = 6,	 /* off-CPU: a sampled switch-out found no room to note its time */
	OP_CNT_ALLOCS = 8,	 /* alloc: allocator calls sampled (their return awaited) */
	OP_CNT_ALLOC_FAIL = 9,	 /* alloc: sampled calls that returned no memory */
	OP_CNT_ALLOC_FULL = 10,	 /* alloc: sampled allocations the in-use map had no room for */
	OP_CNT_FREES = 11,	 /* alloc: frees of sampled allocations (sent to user space) */
	OP_CNT_UNWIND_BASE = 16, /* + enum otelprof_unwind_error */
	OP_CNT_MAX = 32,
};

struct op_event_hdr {
	__u32 type; /* enum op_event_type */
	__u32 pid;  /* thread-group id */
};

/*
 * An off-CPU interval ends: the thread @tid of @hdr.pid is switched in again, @ns after it
 * left the CPU. Its stack was sent when it left, in a trace with origin OP_ORIGIN_OFF_CPU and
 * OP_TRACE_OFFCPU_PENDING; user space pairs the two by tid.
 */
struct op_offcpu_end {
	struct op_event_hdr hdr;
	__u32 tid;
	__u32 cpu;
	__u64 ktime_ns; /* when it was switched in */
	__u64 ns;	/* how long it was off the CPU */
};

/*
 * Allocations: a sampled allocation (a trace with origin OP_ORIGIN_ALLOC, value = its size,
 * addr = the address returned) is freed: @hdr.pid's @addr. Sent only for addresses in the
 * in-use map, so only for allocations user space was told about.
 */
#define OP_ALLOC_EXP_SLOTS 4096 /* the exponential draw's table (alloc_exp) */

struct op_alloc_free {
	struct op_event_hdr hdr;
	__u32 tid;
	__u32 pad;
	__u64 ktime_ns;
	__u64 addr;
};

/*
 * One sample. Variable length on the ring buffer: only frames[0 .. n_kernel + n_user) are
 * sent; kernel frames come first, then user frame slots (see OP_FRAME_TAG), each leaf first.
 * Native user frames are return addresses except frames[n_kernel] (the interrupted PC).
 * ctx_len bytes of struct op_labels follow the last frame when the thread had labels.
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
	__u8 origin;	    /* enum op_trace_origin */
	__u8 state;	    /* off-CPU: enum op_thread_state */
	__u16 ctx_len;	    /* bytes of struct op_labels sent right after the frames, 0: none */
	__u64 value;	    /* see enum op_trace_origin */
	__u64 addr;	    /* alloc: the address the allocator returned */
	__u64 mean;	    /* alloc: the mean it was sampled at; 0: the agent's own */
	/*
	 * A young process that has not exec'd since its fork (its first OP_FORKED_AGE_NS): the
	 * thread-group id of its parent, whose mappings it still runs in; 0 otherwise. Its
	 * stack is walked with the parent's unwind tables, and user space names its frames
	 * from the parent's mappings (a child between fork and exec is often gone, or running
	 * another program, by the time its own /proc/PID/maps could be read).
	 */
	__u32 fork_parent;
	__u32 pad2;
	__u8 comm[OP_COMM_LEN];
	/* frames, then room for the context blob once it is moved after the last frame */
	__u64 frames[OP_MAX_KERNEL_FRAMES + OP_MAX_USER_FRAMES + OP_CTX_SLOTS];
	struct op_labels labels; /* BPF scratch: gathered here, sent after the frames */
};

#define OP_TRACE_HDR_SIZE ((unsigned long)&((struct op_trace *)0)->frames)
#define OP_FORKED_AGE_NS  (2ull * 1000000000ull)

/* exec and exit of a thread group. */
struct op_proc_event {
	struct op_event_hdr hdr;
	__u32 tid;
	__u32 pad;
	__u64 ktime_ns;
	__u8 comm[OP_COMM_LEN];
};

/*
 * The file-backed executable mappings of a process that exits within OP_EXIT_MAPS_AGE_NS of
 * its start, read by BPF at sched_process_exit (before its memory goes), sent ahead of the
 * exit event: a process of a few milliseconds is often gone before user space reads
 * /proc/PID/maps, and libc is mapped by ld.so after the exec event. Files are named by
 * device (the kernel's encoding: major << 20 | minor) and inode; user space finds them among
 * the files other processes map.
 */
#define OP_EXIT_MAPS_MAX    32
#define OP_EXIT_MAPS_AGE_NS (2ull * 1000000000ull)

struct op_exit_vma {
	__u64 start, end;
	__u64 offset; /* in the file, bytes */
	__u64 ino;    /* 0: the vDSO */
	__u32 dev;
	__u32 pad;
};

struct op_exit_maps {
	struct op_event_hdr hdr;
	__u32 n;
	__u32 pad;
	struct op_exit_vma v[OP_EXIT_MAPS_MAX];
};

/*
 * CPython (issue 15): where a process's interpreter keeps its thread states and frames, for
 * bpf/runtime/python.bpf.h (the python_procs map, filled by lib/runtime/python from its
 * per-version tables). Offsets in bytes; PY_OFF_NONE: the version has no such field.
 */
#define PY_OFF_NONE 0xffff

struct op_py_proc {
	__u64 runtime;	  /* address of _PyRuntime */
	__u8 minor;	  /* 3.<minor> */
	__u8 frame_objs;  /* <= 3.10: PyFrameObject chain, one per eval-loop call */
	__u8 lasti_units; /* <= 3.10: f_lasti counts 2-byte units (3.10) rather than bytes */
	__u8 pad;
	__u16 interp_head; /* _PyRuntime.interpreters.head */
	__u16 interp_ts;   /* PyInterpreterState: first thread state */
	__u16 ts_next, ts_thread_id;
	__u16 ts_frame;		       /* PyThreadState.frame / .cframe / .current_frame */
	__u16 cf_current;	       /* _PyCFrame.current_frame (3.11, 3.12), else PY_OFF_NONE */
	__u16 f_back, f_code, f_instr; /* f_back/previous, f_code/f_executable, lasti/instr */
	__u16 f_entry;		       /* 3.11 is_entry, else PY_OFF_NONE */
	__u16 f_owner;		       /* 3.12+: owner (3 = the C stack's shim frame) */
	__u16 co_firstlineno, co_code; /* co_code_adaptive (3.11+) */
	__u16 pad2;
};

/* Why eval-loop frames of a CPython process stayed native (python_counters map). */
enum op_py_reason {
	OP_PY_FRAMES = 0,      /* Python frames recorded (not a fallback) */
	OP_PY_NO_PROC = 1,     /* the process's layout was not (yet) known */
	OP_PY_NO_TSTATE = 2,   /* no thread state for the sampled thread */
	OP_PY_READ_FAILED = 3, /* a read of the thread state or frame chain failed */
	OP_PY_CHAIN_ENDED = 4, /* more eval-loop frames than Python frames (chain changed) */
	OP_PY_REASON_MAX = 8,
};

/*
 * A Python-tagged frame with this payload (no code object lives at 0) is a marker, recorded
 * before the first eval-loop frame the chain could not replace; its second word is the
 * reason (OP_PY_READ_FAILED or OP_PY_CHAIN_ENDED). User space names it (op_py_marker_name).
 */
#define OP_PY_MARKER_PAYLOAD 0

/*
 * V8 (Node.js): how bpf/runtime/v8.bpf.h reads a process's JavaScript frames (the v8_procs map,
 * filled by lib/runtime/v8 from the binary's v8dbg_* post-mortem constants). Frame offsets
 * are from the frame pointer; object offsets from an object's untagged address.
 */
struct op_v8_proc {
	__s16 fp_marker;	 /* context, or a frame type marker (an untagged small int) */
	__s16 fp_function;	 /* the JSFunction of a JavaScript frame */
	__s16 fp_bytecode_array; /* interpreted frames: the BytecodeArray */
	__s16 fp_bytecode_offset;
	__u16 map; /* HeapObject's map */
	__u16 map_instance_type;
	__u16 jsfunc_shared;	 /* JSFunction's SharedFunctionInfo */
	__u16 type_jsfunc_first; /* instance types of JSFunction and its subclasses */
	__u16 type_jsfunc_last;
	__u16 type_sfi;
	__u16 type_bytecode_array;
	__u16 sfi_name; /* SharedFunctionInfo's name_or_scope_info: its identity (below) */
	__u8 fp_only;	/* a V8 whose layout we do not know: its frames walked, recorded native */
	__u8 pad[7];
	/* the embedded builtins (the interpreter's code), in this process: [start, end) twice */
	__u64 builtins[2][2];
};

/*
 * A V8 frame's first word: the SharedFunctionInfo's address (47 bits) and, above it, a 9-bit
 * check of its name_or_scope_info word at sample time (OP_V8_CHECK): user space names the
 * frame only if the object there still has it (the GC may have moved another one there).
 */
#define OP_V8_ADDR_BITS	  47
#define OP_V8_CHECK(word) ((((word) >> 3) ^ ((word) >> 12) ^ ((word) >> 21)) & 0x1ff)
/* Second word of a V8 frame: what the first (the SharedFunctionInfo's address) ran. */
#define OP_V8_DATA_KIND_SHIFT 60
#define OP_V8_DATA_BYTECODE   1ull /* interpreted: low bits the bytecode offset */
#define OP_V8_DATA_CODE	      2ull /* compiled (Sparkplug, Maglev, Turbofan): low bits the pc */

/* Why V8 frames were not recorded (v8_counters, per CPU). */
enum op_v8_counter {
	OP_V8_CNT_FRAMES = 0,	  /* JavaScript frames recorded */
	OP_V8_CNT_NO_PROC = 1,	  /* code claimed but no layout for the process */
	OP_V8_CNT_BAD_FP = 2,	  /* a frame pointer that cannot be read or goes down */
	OP_V8_CNT_NOT_JSFUNC = 3, /* a frame with a context whose function slot is no JSFunction */
	OP_V8_CNT_BAD_SFI = 4,	  /* a JSFunction without a SharedFunctionInfo */
	OP_V8_CNT_MAX = 8,
};

#endif

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * V8 (Node.js) JavaScript frames. lib/runtime/v8 claims V8's code (the JIT's anonymous
 * executable memory, the embedded builtins in the node binary and their remapped copy) and
 * stores the layout from the binary's v8dbg_* constants in v8_procs. All V8 generated code
 * keeps frame pointers: [fp] the caller's fp, [fp + 8] the return address, and below fp
 * either a frame type marker (an untagged small int: entry, exit, stub frames) or, for a
 * JavaScript frame, its context (a tagged pointer) and its JSFunction. This program walks
 * those frames while the pc stays in V8's code, records each JavaScript frame as (its
 * SharedFunctionInfo's address, OP_V8_DATA_* | bytecode offset or pc), and hands the first
 * native frame (C++ called into JS through the entry frame, or a runtime function's caller)
 * back to the native walk. Nothing is guessed: a frame whose function slot does not hold a
 * JSFunction with a SharedFunctionInfo is not recorded, and counted (v8_counters). For a V8
 * whose layout user space does not know (fp_only), the frames are walked the same way and
 * recorded as native frames: stacks stay whole, and a perf map, if any, names them.
 */
#ifndef OTELPROF_V8_BPF_H
#define OTELPROF_V8_BPF_H

#include "unwind/runtime.bpf.h"

#define OP_V8_MAX_PROCS	      4096
#define OP_V8_FRAMES_PER_PROG 16
/* The words read below a frame's fp (fp - 8 * OP_V8_FP_WORDS .. fp + 16). */
#define OP_V8_FP_WORDS 6
/* The words of an object read at once: its map, and the fields the walk needs (user space
 * refuses a layout whose fields lie beyond). */
#define OP_V8_OBJ_WORDS 8

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, OP_V8_MAX_PROCS);
	__type(key, __u32);
	__type(value, struct op_v8_proc);
} v8_procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, OP_V8_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} v8_counters SEC(".maps");

static __always_inline void v8_count(__u32 what)
{
	__u64 *c = bpf_map_lookup_elem(&v8_counters, &what);

	if (c)
		(*c)++;
}

/* The instance type of the map @map (a tagged pointer), 0 when it is none. */
static __always_inline __u16 v8_map_type(const struct op_v8_proc *vp, __u64 map)
{
	__u16 type;

	if ((map & 3) != 1 ||
	    bpf_probe_read_user(&type, sizeof(type), (void *)(map - 1 + vp->map_instance_type)))
		return 0;
	return type;
}

/*
 * The first OP_V8_OBJ_WORDS words of the object at tagged pointer @tagged into @w, and its
 * instance type (0 when it is none): one read for the object's fields, one for its map's type.
 */
static __always_inline __u16 v8_object(const struct op_v8_proc *vp, __u64 tagged, __u64 *w)
{
	if ((tagged & 3) != 1 || bpf_probe_read_user(w, 8 * OP_V8_OBJ_WORDS, (void *)(tagged - 1)))
		return 0;
	return v8_map_type(vp, w[(vp->map >> 3) & (OP_V8_OBJ_WORDS - 1)]);
}

/* A frame slot @off bytes from fp, from the words read in @w (fp - 48 .. fp + 16). */
static __always_inline __u64 v8_slot(const __u64 *w, __s16 off)
{
	__u32 i;

	if (off & 7 || off < -8 * OP_V8_FP_WORDS || off >= 0)
		return 0;
	i = (__u32)(off + 8 * OP_V8_FP_WORDS) >> 3;
	return w[i & 7];
}

/* Whether @pc (a return address unless the leaf's) is in the embedded builtins. */
static __always_inline bool v8_in_builtins(const struct op_v8_proc *vp, __u64 pc)
{
	return (pc > vp->builtins[0][0] && pc <= vp->builtins[0][1]) ||
	       (pc > vp->builtins[1][0] && pc <= vp->builtins[1][1]);
}

/* Record @pc as a native frame (fp_only). False when the trace is full. */
static __always_inline bool v8_push_native(struct op_rt_walk *w, __u64 pc)
{
	__u32 idx = w->t->n_kernel + w->s->n;

	if (w->s->n + 1 > OP_MAX_USER_FRAMES) {
		w->t->flags |= OP_TRACE_USER_TRUNCATED;
		return false;
	}
	asm volatile("" : "+r"(idx));
	if (idx >= OP_MAX_KERNEL_FRAMES + OP_MAX_USER_FRAMES || pc >> OP_FRAME_TAG_SHIFT)
		return false;
	w->t->frames[idx] = pc;
	w->s->n++;
	return true;
}

struct v8_loop {
	struct op_rt_walk *w;
	const struct op_v8_proc *vp;
	int done; /* 1: left V8's code (resume native), 2: the walk ends */
};

/*
 * One V8 frame at s->r (pc in V8's code, bp its frame pointer). Reads: the frame (one), the
 * JSFunction and its map's type (two), the SharedFunctionInfo and its map's type (two), and
 * for a frame that may be interpreted the BytecodeArray's map and type (two).
 */
static long v8_frame(__u64 index, void *arg)
{
	struct v8_loop *l = arg;
	struct op_rt_walk *w = l->w;
	struct unwind_scratch *s = w->s;
	const struct op_v8_proc *vp = l->vp;
	__u64 words[OP_V8_FP_WORDS + 2], obj[OP_V8_OBJ_WORDS], fp = s->r.bp, marker, fn, sfi, ba,
							       off, data, nosi, map;
	int mi;

	if (!s->r.bp_valid || !fp || (fp & 7) ||
	    bpf_probe_read_user(words, sizeof(words), (void *)(fp - 8 * OP_V8_FP_WORDS))) {
		v8_count(OP_V8_CNT_BAD_FP);
		w->t->unwind_error = OTELPROF_UNWIND_BAD_MEMORY;
		l->done = 2;
		return 1;
	}
	marker = v8_slot(words, vp->fp_marker);
	/*
	 * Native frames of V8's own code: every frame of a layout we do not know (a perf map may
	 * name them), a typed frame (entry, exit, stub: a builtin such as JSEntry or CEntry, or
	 * stub code), and a leaf pc in the builtins (a builtin without a frame of its own, called
	 * by the JavaScript frame at fp, which follows).
	 */
	if (vp->fp_only || (marker & 1) == 0 || (s->r.leaf && v8_in_builtins(vp, s->r.pc))) {
		if (!v8_push_native(w, s->r.pc)) {
			l->done = 2;
			return 1;
		}
	}
	if (!vp->fp_only && (marker & 1) == 1) {
		/* a context: a JavaScript frame */
		__u16 t;

		fn = v8_slot(words, vp->fp_function);
		t = v8_object(vp, fn, obj);
		sfi = obj[(vp->jsfunc_shared >> 3) & (OP_V8_OBJ_WORDS - 1)];
		if (t < vp->type_jsfunc_first || t > vp->type_jsfunc_last) {
			v8_count(OP_V8_CNT_NOT_JSFUNC);
		} else if (v8_object(vp, sfi, obj) != vp->type_sfi) {
			v8_count(OP_V8_CNT_BAD_SFI);
		} else {
			nosi = obj[(vp->sfi_name >> 3) & (OP_V8_OBJ_WORDS - 1)];
			ba = v8_slot(words, vp->fp_bytecode_array);
			off = v8_slot(words, vp->fp_bytecode_offset);
			/*
			 * interpreted: the pc in the builtins (the interpreter), a BytecodeArray
			 * and the offset as a Smi (upper 32 bits); code compiled by on-stack
			 * replacement runs in the same frame, from the JIT's code space
			 */
			data = OP_V8_DATA_CODE << OP_V8_DATA_KIND_SHIFT |
			       (s->r.pc & ((1ull << OP_V8_DATA_KIND_SHIFT) - 1));
			if ((off & 0xffffffffull) == 0 && v8_in_builtins(vp, s->r.pc) &&
			    (ba & 3) == 1 &&
			    !bpf_probe_read_user(&map, sizeof(map), (void *)(ba - 1 + vp->map)) &&
			    v8_map_type(vp, map) == vp->type_bytecode_array)
				data = OP_V8_DATA_BYTECODE << OP_V8_DATA_KIND_SHIFT | (off >> 32);
			if (!op_rt_push(w, OP_RUNTIME_V8,
					(sfi - 1) | OP_V8_CHECK(nosi) << OP_V8_ADDR_BITS, data)) {
				l->done = 2;
				return 1;
			}
			v8_count(OP_V8_CNT_FRAMES);
		}
	}
	/* step by the frame pointer */
	s->r.pc = words[OP_V8_FP_WORDS + 1];
	s->r.sp = fp + 16;
	s->r.bp = words[OP_V8_FP_WORDS];
	s->r.bp_valid = s->r.bp > fp;
	s->r.leaf = 0;
	s->r.exact_pc = 0;
	if (!s->r.pc) {
		l->done = 2; /* the outermost frame */
		return 1;
	}
	mi = find_mapping(w->proc, s->r.pc - 1);
	if (mi < 0 || w->proc->m[mi & (OP_UNWIND_MAX_MAPPINGS - 1)].runtime != OP_RUNTIME_V8) {
		l->done = 1;
		return 1;
	}
	return 0;
}

static __always_inline int v8_walk(void *ctx, void *progs, struct op_rt_walk *w)
{
	struct v8_loop l = { .w = w };

	l.vp = bpf_map_lookup_elem(&v8_procs, &w->s->pid);
	if (!l.vp) {
		v8_count(OP_V8_CNT_NO_PROC);
		return op_rt_keep_native(ctx, progs, w);
	}
	bpf_loop(OP_V8_FRAMES_PER_PROG, v8_frame, &l, 0);
	if (l.done == 2)
		return op_rt_finish(w);
	/* left V8's code, or more V8 frames to come: the native walk dispatches them again */
	return op_rt_resume_native(ctx, progs, w);
}

#endif

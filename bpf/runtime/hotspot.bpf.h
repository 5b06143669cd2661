/* SPDX-License-Identifier: GPL-2.0 */
/*
 * HotSpot (Java) frames. The native walk hands us a frame whose pc lies in a JVM's code cache
 * (lib/runtime/hotspot claims the committed parts of its code heaps). We find the code blob
 * holding the pc through the heap's segment map (one byte per segment: 0 the first segment of
 * a block, 0xff free, else how many segments to go back; HotSpot's heap.cpp), whose HeapBlock
 * header the blob follows, and tell the frame kind by the first four bytes of the blob's name:
 *
 *   "Interpreter"     the template interpreter: the frame is rbp based; the Method* and the
 *                     bytecode pointer are in fixed slots below rbp (the leaf frame's bcp is
 *                     still in r13), the caller's sp in the sender-sp slot (frame_x86.hpp);
 *   "nmethod"         compiled Java (C1/C2): the frame is CodeBlob::_frame_size words from sp,
 *   "native nmethod"  the return address in its last word, the saved rbp below it; a leaf in
 *                     its prologue or epilogue has less on the stack (checked by pc and by the
 *                     instruction bytes at pc), and a return address outside the code cache
 *                     means the frame is not what we think: a few more words are searched, as
 *                     the JVM's own stack walkers do;
 *   anything else     a stub: by _frame_size, or rbp based when it has none (the call stub).
 *
 * Interpreted frames are recorded as (Method*, bci | ConstMethod* check), compiled ones as
 * (nmethod, pc offset | compile id: user space expands the inlined methods from its debug
 * information), stubs as (blob, name). When the return address leaves the code cache (the call stub
 * returns into libjvm's JavaCalls::call_helper) the native walk goes on from there, rbp valid.
 */
#ifndef OTELPROF_HOTSPOT_BPF_H
#define OTELPROF_HOTSPOT_BPF_H

#include "unwind/runtime.bpf.h"
#include "runtime/hotspot.h"

#define HS_FRAMES_PER_PROG 16
#define HS_SEGMAP_STEPS	   16
#define HS_RA_SEARCH	   6
#define HS_INTERP_MAX_FP   0x10000 /* an interpreter frame's rbp is this close above its sp */

/* the first four bytes of CodeBlob::_name, little endian */
#define HS_NAME_NMETHOD 0x74656d6e /* "nmet"hod */
#define HS_NAME_NATIVE	0x6974616e /* "nati"ve nmethod */
#define HS_NAME_INTERP	0x65746e49 /* "Inte"rpreter */
#define HS_NAME_VTABLE	0x62617476 /* "vtab"le chunks */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct op_hs_proc);
} hotspot_procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, OP_HS_ERR_MAX);
	__type(key, __u32);
	__type(value, __u64);
} hotspot_errors SEC(".maps");

/* A code blob's first bytes, read at once (a map value: the stack allows no unaligned reads) */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u8[OP_HS_BLOB_HDR]);
} hotspot_blob SEC(".maps");

static __always_inline void hs_count(__u32 reason)
{
	__u64 *c = bpf_map_lookup_elem(&hotspot_errors, &reason);

	if (c)
		(*c)++;
}

#define HS_GO	 0 /* the next frame is in the code cache */
#define HS_LEAVE 1 /* the next frame is native: resume the native walk */
#define HS_END	 2 /* the stack ends (or the trace is full) */
#define HS_ERR	 3 /* a frame we cannot step: stop with unwind_error set */
#define HS_ENTRY 4 /* the first frame is not ours to name: record it as native */

struct hs_walk {
	struct op_rt_walk *w;
	const struct op_hs_proc *hp;
	__u64 pc, sp, fp;
	__u64 r13; /* the leaf's r13: the interpreter's bcp */
	__u8 leaf;
	__u8 first;
	int state;
};

static __always_inline bool hs_in_cache(const struct op_hs_proc *hp, __u64 pc)
{
	for (int i = 0; i < OP_HS_MAX_HEAPS; i++)
		if (i < hp->n_heaps && pc >= hp->heaps[i].start && pc < hp->heaps[i].end)
			return true;
	return false;
}

static __always_inline int hs_read(void *dst, __u32 sz, __u64 addr)
{
	return bpf_probe_read_user(dst, sz, (const void *)addr);
}

/* The CodeBlob holding @pc, or 0. */
static __always_inline __u64 hs_find_blob(const struct op_hs_proc *hp, __u64 pc)
{
	const struct op_hs_heap *h = NULL;
	__u64 seg;
	__u8 tag = 0xff;

	for (int i = 0; i < OP_HS_MAX_HEAPS; i++)
		if (i < hp->n_heaps && pc >= hp->heaps[i].start && pc < hp->heaps[i].end)
			h = &hp->heaps[i];
	if (!h) {
		hs_count(OP_HS_ERR_NO_HEAP);
		return 0;
	}
	seg = (pc - h->start) >> (h->log2_seg & 63);
	for (int i = 0; i < HS_SEGMAP_STEPS; i++) {
		if (hs_read(&tag, 1, h->segmap + seg))
			return 0;
		if (tag == 0 || tag == 0xff)
			break;
		seg -= tag;
	}
	if (tag != 0) {
		hs_count(OP_HS_ERR_NO_BLOB);
		return 0;
	}
	return h->start + (seg << (h->log2_seg & 63)) + hp->heapblock_size;
}

/* Step an interpreter frame; records it. */
static __always_inline int hs_interp(struct hs_walk *k)
{
	const struct op_hs_proc *hp = k->hp;
	__u64 fr[2], method = 0, bcp = 0, sender_sp = 0, cm = 0, bci = 0xffff;

	if (k->fp < k->sp || k->fp > k->sp + HS_INTERP_MAX_FP) {
		hs_count(OP_HS_ERR_INTERP_FP);
		return HS_ERR;
	}
	if (hs_read(fr, sizeof(fr), k->fp) ||
	    hs_read(&method, 8, k->fp + (__s64)hp->frame_method * 8) ||
	    hs_read(&sender_sp, 8, k->fp + (__s64)hp->frame_sender_sp * 8) ||
	    hs_read(&cm, 8, method + hp->method_const)) {
		hs_count(OP_HS_ERR_READ);
		return HS_ERR;
	}
	if (k->leaf)
		bcp = k->r13;
	else if (hs_read(&bcp, 8, k->fp + (__s64)hp->frame_bcp * 8))
		bcp = 0;
	if (bcp >= cm + hp->constmethod_size && bcp < cm + hp->constmethod_size + 0xffff)
		bci = bcp - (cm + hp->constmethod_size);
	if (!op_rt_push(k->w, OP_RUNTIME_HOTSPOT, method,
			OP_HS_DATA(OP_HS_FRAME_INTERP, bci, cm >> 3)))
		return HS_END;
	k->pc = fr[1];
	k->fp = fr[0];
	k->sp = sender_sp;
	return HS_GO;
}

/*
 * A leaf compiled frame in its epilogue (x86_64, as the JVM emits it): at `ret` only the return
 * address is left; at `pop rbp` the saved rbp too; after `pop rbp` (the return poll `cmp rsp,
 * [r15+off]; ja`, then `ret`) the return address only. 1: ra only; 2: rbp and ra; 0: not seen.
 */
static __always_inline int hs_epilogue(__u64 pc)
{
	__u8 c[16];

	if (hs_read(c, sizeof(c), pc - 1))
		return 0;
	if (c[1] == 0xc3)
		return 1;
	if (c[1] == 0x5d) {
		for (int i = 2; i < 16; i++)
			if (c[i] == 0xc3)
				return 2;
		return 0;
	}
	/* after pop rbp: the poll's cmp (REX.W 3b /r, [r15+disp32]) then ja rel32, ret */
	if (c[0] == 0x5d && c[1] == 0x49 && c[2] == 0x3b)
		return 1;
	if (c[1] == 0x0f && c[2] == 0x87 && c[7] == 0xc3)
		return 1;
	return 0;
}

/* Step a compiled frame (or a stub that has a frame size) from its blob. */
static __always_inline int hs_compiled(struct hs_walk *k, __u64 blob, __u32 fsize, __u64 code,
				       __u32 complete, bool java)
{
	const struct op_hs_proc *hp = k->hp;
	__u64 nsp, ra = 0, nfp = k->fp;
	__u32 compile_id = 0;
	int epi = 0;

	if (java && hs_read(&compile_id, 4, blob + hp->nmethod_compile_id)) {
		hs_count(OP_HS_ERR_READ);
		return HS_ERR;
	}
	if (k->leaf && code && k->pc < code + complete) {
		/* prologue: `push rbp` done in its last instruction(s) only */
		epi = k->pc + 4 >= code + complete ? 2 : 1;
	} else if (k->leaf) {
		epi = hs_epilogue(k->pc);
	}
	if (epi) {
		nsp = k->sp + (epi == 2 ? 16 : 8);
		if (hs_read(&ra, 8, nsp - 8))
			goto bad;
		if (epi == 2 && hs_read(&nfp, 8, k->sp))
			goto bad;
		if (java && !hs_in_cache(hp, ra)) {
			/* Java code is called from the code cache only (stubs, adapters) */
			hs_count(OP_HS_ERR_BAD_RA);
			return HS_ERR;
		}
	} else {
		__u64 st[HS_RA_SEARCH];
		int i;

		nsp = k->sp + fsize;
		if (hs_read(st, sizeof(st), nsp - 8))
			goto bad;
		for (i = 0; i < HS_RA_SEARCH; i++) {
			if (hs_in_cache(hp, st[i])) {
				ra = st[i];
				break;
			}
		}
		if (i == HS_RA_SEARCH) {
			/* a leaf whose frame is not set up as we thought: the return address alone
			 */
			if (!k->leaf || hs_read(&ra, 8, k->sp) || !hs_in_cache(hp, ra)) {
				hs_count(OP_HS_ERR_BAD_RA);
				return HS_ERR;
			}
			nsp = k->sp + 8;
		} else {
			nsp += i * 8;
			if (hs_read(&nfp, 8, nsp - 16))
				goto bad;
		}
	}
	if (java) {
		if (!op_rt_push(k->w, OP_RUNTIME_HOTSPOT, blob,
				OP_HS_DATA(OP_HS_FRAME_COMPILED, k->pc - code, compile_id)))
			return HS_END;
	}
	k->pc = ra;
	k->sp = nsp;
	k->fp = nfp;
	return HS_GO;
bad:
	hs_count(OP_HS_ERR_READ);
	return HS_ERR;
}

/* Step a stub without a frame size: rbp based (the call stub). */
static __always_inline int hs_fp_frame(struct hs_walk *k)
{
	__u64 fr[2];

	if (k->fp < k->sp || k->fp > k->sp + HS_INTERP_MAX_FP) {
		hs_count(OP_HS_ERR_INTERP_FP);
		return HS_ERR;
	}
	if (hs_read(fr, sizeof(fr), k->fp)) {
		hs_count(OP_HS_ERR_READ);
		return HS_ERR;
	}
	k->sp = k->fp + 16;
	k->fp = fr[0];
	k->pc = fr[1];
	return HS_GO;
}

static long hs_frame(__u64 index, void *arg)
{
	struct hs_walk *k = arg;
	const struct op_hs_proc *hp = k->hp;
	__u64 blob, name = 0, code = 0, look;
	__u32 tag = 0, fsize = 0;
	__u16 complete = 0; /* an int in 17, an int16 in 25: the low half either way */
	__u32 o, zero = 0;
	__u8 *hdr = bpf_map_lookup_elem(&hotspot_blob, &zero);
	int r;

	look = k->leaf ? k->pc : k->pc - 1;
	blob = hs_find_blob(hp, look);
	/* the CodeBlob fields we need lie in its first OP_HS_BLOB_HDR bytes (lib/runtime/hotspot)
	 */
	if (!hdr)
		return 1;
	if (!blob || hs_read(hdr, OP_HS_BLOB_HDR, blob)) {
		if (blob)
			hs_count(OP_HS_ERR_READ);
		k->state = k->first ? HS_ENTRY : HS_ERR;
		return 1;
	}
	o = hp->blob_name;
	if (o > OP_HS_BLOB_HDR - 8)
		goto bad;
	name = *(__u64 *)(hdr + o);
	o = hp->blob_frame_size;
	if (o > OP_HS_BLOB_HDR - 4)
		goto bad;
	fsize = *(__u32 *)(hdr + o);
	o = hp->blob_frame_complete;
	if (o > OP_HS_BLOB_HDR - 2)
		goto bad;
	complete = *(__u16 *)(hdr + o);
	o = hp->blob_code;
	if (o > OP_HS_BLOB_HDR - 8)
		goto bad;
	if (hp->code_is_offset) {
		__u32 off = *(__u32 *)(hdr + o);

		code = off ? blob + off : 0;
	} else {
		code = *(__u64 *)(hdr + o);
	}
	if (hs_read(&tag, 4, name)) {
		hs_count(OP_HS_ERR_READ);
		k->state = k->first ? HS_ENTRY : HS_ERR;
		return 1;
	}
	fsize = fsize * 8;
	if (fsize > 0x100000)
		fsize = 0;
	if (tag == HS_NAME_INTERP) {
		r = hs_interp(k);
	} else if (tag == HS_NAME_NMETHOD || tag == HS_NAME_NATIVE) {
		r = hs_compiled(k, blob, fsize, code, complete, true);
	} else {
		if (!op_rt_push(k->w, OP_RUNTIME_HOTSPOT, blob,
				OP_HS_DATA(OP_HS_FRAME_STUB, k->pc - blob, name))) {
			k->state = HS_END;
			return 1;
		}
		if (tag == HS_NAME_VTABLE)
			r = hs_compiled(k, blob, 0, 0, 0, false); /* the return address only */
		else if (!fsize)
			r = hs_fp_frame(k);
		else
			r = hs_compiled(k, blob, fsize, code, complete, false);
	}
	k->first = 0;
	k->leaf = 0;
	if (r != HS_GO) {
		k->state = r;
		return 1;
	}
	if (!k->pc) {
		k->state = HS_END;
		return 1;
	}
	if (!hs_in_cache(hp, k->pc)) {
		k->state = HS_LEAVE;
		return 1;
	}
	return 0;
bad:
	k->state = k->first ? HS_ENTRY : HS_ERR;
	return 1;
}

static __always_inline int hotspot_walk(void *ctx, void *progs, struct op_rt_walk *w)
{
	struct unwind_scratch *s = w->s;
	struct hs_walk k = {
		.w = w,
		.pc = s->r.pc,
		.sp = s->r.sp,
		.fp = s->r.bp,
		.r13 = s->r.regs[13],
		.leaf = s->r.leaf,
		.first = !s->rt_state[0],
		.state = HS_GO,
	};

	k.hp = bpf_map_lookup_elem(&hotspot_procs, &s->pid);
	if (!k.hp) {
		hs_count(OP_HS_ERR_NO_PROC);
		return op_rt_keep_native(ctx, progs, w);
	}
	s->rt_state[0] = 1;
	bpf_loop(HS_FRAMES_PER_PROG, hs_frame, &k, 0);
	switch (k.state) {
	case HS_GO:
		/* more Java frames than one run takes: go on in another run of this program */
		s->r.pc = k.pc;
		s->r.sp = k.sp;
		s->r.bp = k.fp;
		s->r.bp_valid = 1;
		s->r.leaf = 0;
		s->r.exact_pc = 0;
		unwind_tail_call(ctx, progs, s, OP_RUNTIME_HOTSPOT);
		hs_count(OP_HS_ERR_DEPTH);
		w->t->unwind_error = OTELPROF_UNWIND_DEPTH_LIMIT;
		return op_rt_finish(w);
	case HS_LEAVE:
		s->r.pc = k.pc;
		s->r.sp = k.sp;
		s->r.bp = k.fp;
		s->r.bp_valid = 1;
		s->r.leaf = 0;
		s->r.exact_pc = 0;
		s->rt_state[0] = 0;
		return op_rt_resume_native(ctx, progs, w);
	case HS_ENTRY:
		s->rt_state[0] = 0;
		return op_rt_keep_native(ctx, progs, w);
	case HS_END:
		return op_rt_finish(w);
	default:
		w->t->unwind_error = OTELPROF_UNWIND_BAD_MEMORY;
		return op_rt_finish(w);
	}
}

#endif

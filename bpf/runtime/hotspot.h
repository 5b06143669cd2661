/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What lib/runtime/hotspot tells bpf/runtime/hotspot.bpf.h about one JVM (hotspot_procs, by
 * pid): the code heaps with their segment maps, and the layout offsets the walk needs, read
 * from the JVM's own VMStructs tables. Shared by both sides; plain C.
 */
#ifndef OTELPROF_HOTSPOT_H
#define OTELPROF_HOTSPOT_H

#define OP_HS_MAX_HEAPS 4
/* the CodeBlob fields the walk reads lie within its first bytes: read at once */
#define OP_HS_BLOB_HDR 128

struct op_hs_heap {
	__u64 start, end; /* the heap's reserved range (VirtualSpace low/high boundary) */
	__u64 segmap;	  /* its segment map: one byte per segment */
	__u32 log2_seg;	  /* log2 of the segment size */
	__u32 pad;
};

struct op_hs_proc {
	struct op_hs_heap heaps[OP_HS_MAX_HEAPS];
	__u32 n_heaps;
	__u16 blob_name, blob_frame_complete, blob_frame_size;
	__u16 blob_code;      /* CodeBlob::_code_begin (pointer), or _code_offset (int) */
	__u16 nmethod_method; /* nmethod (CompiledMethod in 17) ::_method */
	__u16 nmethod_compile_id;
	__u16 method_const;   /* Method::_constMethod */
	__u16 heapblock_size; /* sizeof(HeapBlock): the blob follows its block header */
	__u16 constmethod_size;
	__u8 code_is_offset;
	__s8 frame_method, frame_bcp, frame_sender_sp; /* interpreter frame slots (words from fp) */
	__u8 pad[2];
};

/* Frame subtypes, bits 56-63 of a HotSpot frame's data word. */
enum op_hs_frame {
	OP_HS_FRAME_INTERP = 1,	  /* payload Method*, data: bci (bits 32-47), check */
	OP_HS_FRAME_COMPILED = 2, /* payload the nmethod, data: pc offset in its code, compile id */
	OP_HS_FRAME_NATIVE = 3,	  /* a native method's wrapper (JNI): as COMPILED */
	OP_HS_FRAME_STUB = 4,	  /* payload the CodeBlob: a stub, named by its blob name */
};
/* The data word: subtype << 56 | (value & 0xffff) << 32 | check, check = (u32)(ConstMethod* >> 3)
 * for methods (an identity check at naming time), the blob's name pointer's low 32 bits for stubs
 */
#define OP_HS_DATA(sub, val, check) \
	(((__u64)(sub) << 56) | (((__u64)(val)&0xffff) << 32) | (__u64)(__u32)(check))

/* Fallback and error reasons of the HotSpot walk, counted per reason (hotspot_errors). */
enum op_hs_err {
	OP_HS_ERR_NO_PROC = 0, /* no layout for the pid (the JVM not read yet) */
	OP_HS_ERR_NO_HEAP,     /* a claimed pc outside every code heap */
	OP_HS_ERR_NO_BLOB,     /* the segment map gave no code blob (freed under the walk) */
	OP_HS_ERR_READ,	       /* a read of the JVM's memory failed */
	OP_HS_ERR_INTERP_FP,   /* an interpreter frame whose frame pointer is not sane */
	OP_HS_ERR_BAD_RA,      /* a compiled frame with no return address where expected */
	OP_HS_ERR_DEPTH,       /* more Java frames than the walk takes */
	OP_HS_ERR_MAX,
};

#endif

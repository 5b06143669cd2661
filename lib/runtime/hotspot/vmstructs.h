/* SPDX-License-Identifier: Apache-2.0 */
/*
 * HotSpot's own description of its structures: the gHotSpotVMStructs / gHotSpotVMTypes /
 * gHotSpotVMIntConstants tables that libjvm.so exports (the serviceability agent's source),
 * read from a live JVM's memory. vmstructs.c keeps only what the unwinder and the naming need
 * (struct op_hs_vm); it reads through a callback, so the parser runs on a process (/proc/PID/mem)
 * or on a memory image (the fuzzer, the unit test).
 */
#ifndef OTELPROF_HOTSPOT_VMSTRUCTS_H
#define OTELPROF_HOTSPOT_VMSTRUCTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Read @len bytes at @addr of the target; 0 or a negative errno. */
typedef int (*op_hs_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

/* The addresses (already relocated) of the exported symbols describing the tables. */
enum op_hs_sym {
	OP_HS_STRUCTS, /* gHotSpotVMStructs: pointer to the array */
	OP_HS_STRUCT_TYPE_NAME,
	OP_HS_STRUCT_FIELD_NAME,
	OP_HS_STRUCT_IS_STATIC,
	OP_HS_STRUCT_OFFSET,
	OP_HS_STRUCT_ADDRESS,
	OP_HS_STRUCT_STRIDE,
	OP_HS_TYPES,
	OP_HS_TYPE_TYPE_NAME,
	OP_HS_TYPE_SIZE,
	OP_HS_TYPE_STRIDE,
	OP_HS_INTS,
	OP_HS_INT_NAME,
	OP_HS_INT_VALUE,
	OP_HS_INT_STRIDE,
	OP_HS_NSYMS,
};

/* The dynamic symbol names of enum op_hs_sym, in its order. */
extern const char *const op_hs_sym_names[OP_HS_NSYMS];

#define OP_HS_UNSET UINT64_MAX

/* What the tables say; a field the tables lack stays OP_HS_UNSET. */
struct op_hs_vm {
	/* static addresses */
	uint64_t codecache_heaps;		/* CodeCache::_heaps: GrowableArray<CodeHeap*>* */
	uint64_t codecache_low, codecache_high; /* CodeCache::_low_bound, _high_bound (addresses) */
	uint64_t vm_major; /* Abstract_VM_Version::_vm_major_version (address of an int) */
	/* field offsets */
	uint64_t growable_len, growable_data;
	uint64_t codeheap_memory, codeheap_segmap, codeheap_log2_seg;
	uint64_t vspace_low, vspace_high;
	uint64_t blob_name, blob_frame_complete, blob_frame_size;
	uint64_t blob_code_begin;  /* a pointer (JDK <= 22) ... */
	uint64_t blob_code_offset; /* ... or an int offset from the blob (JDK 23+) */
	uint64_t nmethod_method, nmethod_compile_id;
	/* the debug information of compiled code (PC descriptors, scopes, metadata), optional */
	uint64_t nm_metadata_off, nm_scopes_data_begin, nm_scopes_pcs_off, nm_deps_off; /* <= 22 */
	uint64_t nm_immutable, nm_immutable_size, nm_scopes_data_off;			/* 23+ */
	uint64_t blob_mutable, blob_mutable_size, blob_reloc_size;			/* 25+ */
	uint64_t pcdesc_pc, pcdesc_scope, size_pcdesc;
	uint64_t method_const, constmethod_constants, constmethod_code_size;
	uint64_t constmethod_flags, constmethod_name_index, constmethod_sig_index;
	uint64_t cpool_holder, cpool_source_file, iklass_source_file;
	uint64_t klass_name, symbol_length, symbol_body;
	/* sizes */
	uint64_t size_heapblock, size_constmethod, size_cpool;
	/* int constants (frame slots relative to the frame pointer, in words) */
	int64_t frame_method, frame_bcp, frame_sender_sp;
	bool have_frame_method, have_frame_bcp, have_frame_sender_sp;
	uint32_t n_structs, n_types, n_ints; /* entries read */
};

/*
 * Read the tables through @rd. -EAGAIN: the tables are not filled yet (the JVM is starting: the
 * strides are 0); -EINVAL: a table that makes no sense (stride or size out of range, no end
 * within bounds); -ENOTSUP: a field the unwinder cannot do without is missing (an unknown
 * layout); or the reader's error.
 */
int op_hs_vm_read(op_hs_read_fn rd, void *ctx, const uint64_t syms[OP_HS_NSYMS],
		  struct op_hs_vm *vm);

/* The name of the first field op_hs_vm_read() needs and @vm lacks, or NULL. */
const char *op_hs_vm_missing(const struct op_hs_vm *vm);

#endif

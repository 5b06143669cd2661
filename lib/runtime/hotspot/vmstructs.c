// SPDX-License-Identifier: Apache-2.0
/*
 * The VMStructs tables of a HotSpot JVM (vmstructs.h). Facts (HotSpot's vmStructs.hpp/.cpp and
 * what a live JVM on this machine holds, /work/shared/reference/runtimes.md): each table is an
 * array of entries whose layout the JVM also exports (gHotSpotVM*Offset, *ArrayStride: .bss
 * variables set when the JVM starts, 0 before); a struct entry names a type, a field, whether
 * it is static, its offset (fields) or address (statics); a type entry a type and its size; an
 * int constant a name and a 32-bit value. Each table ends with an entry whose name is NULL.
 * Names of fields changed between releases (CompiledMethod::_method in 17, nmethod::_method in
 * 25; CodeBlob::_code_begin pointer in 17, _code_offset int in 25), so each wanted field lists
 * its spellings.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "runtime/hotspot/vmstructs.h"

const char *const op_hs_sym_names[OP_HS_NSYMS] = {
	[OP_HS_STRUCTS] = "gHotSpotVMStructs",
	[OP_HS_STRUCT_TYPE_NAME] = "gHotSpotVMStructEntryTypeNameOffset",
	[OP_HS_STRUCT_FIELD_NAME] = "gHotSpotVMStructEntryFieldNameOffset",
	[OP_HS_STRUCT_IS_STATIC] = "gHotSpotVMStructEntryIsStaticOffset",
	[OP_HS_STRUCT_OFFSET] = "gHotSpotVMStructEntryOffsetOffset",
	[OP_HS_STRUCT_ADDRESS] = "gHotSpotVMStructEntryAddressOffset",
	[OP_HS_STRUCT_STRIDE] = "gHotSpotVMStructEntryArrayStride",
	[OP_HS_TYPES] = "gHotSpotVMTypes",
	[OP_HS_TYPE_TYPE_NAME] = "gHotSpotVMTypeEntryTypeNameOffset",
	[OP_HS_TYPE_SIZE] = "gHotSpotVMTypeEntrySizeOffset",
	[OP_HS_TYPE_STRIDE] = "gHotSpotVMTypeEntryArrayStride",
	[OP_HS_INTS] = "gHotSpotVMIntConstants",
	[OP_HS_INT_NAME] = "gHotSpotVMIntConstantEntryNameOffset",
	[OP_HS_INT_VALUE] = "gHotSpotVMIntConstantEntryValueOffset",
	[OP_HS_INT_STRIDE] = "gHotSpotVMIntConstantEntryArrayStride",
};

/* Bounds: real entries are 16-48 bytes, real tables a few thousand entries. */
#define HS_MAX_STRIDE  256
#define HS_MAX_ENTRIES (1u << 16)
#define HS_NAME_MAX    96

struct want {
	const char *type, *field; /* field NULL: the type's size */
	size_t off;		  /* offsetof(struct op_hs_vm, ...) */
	bool is_static;		  /* the field's address, not its offset */
};

#define F(t, f, m)                                        \
	{                                                 \
		t, f, offsetof(struct op_hs_vm, m), false \
	}
#define S(t, f, m)                                       \
	{                                                \
		t, f, offsetof(struct op_hs_vm, m), true \
	}
#define SZ(t, m)                                             \
	{                                                    \
		t, NULL, offsetof(struct op_hs_vm, m), false \
	}

static const struct want wants[] = {
	S("CodeCache", "_heaps", codecache_heaps),
	S("CodeCache", "_low_bound", codecache_low),
	S("CodeCache", "_high_bound", codecache_high),
	S("Abstract_VM_Version", "_vm_major_version", vm_major),
	F("GrowableArrayBase", "_len", growable_len),
	F("GenericGrowableArray", "_len", growable_len),
	F("GrowableArray<int>", "_data", growable_data),
	F("CodeHeap", "_memory", codeheap_memory),
	F("CodeHeap", "_segmap", codeheap_segmap),
	F("CodeHeap", "_log2_segment_size", codeheap_log2_seg),
	F("VirtualSpace", "_low_boundary", vspace_low),
	F("VirtualSpace", "_high_boundary", vspace_high),
	F("CodeBlob", "_name", blob_name),
	F("CodeBlob", "_frame_complete_offset", blob_frame_complete),
	F("CodeBlob", "_frame_size", blob_frame_size),
	F("CodeBlob", "_code_begin", blob_code_begin),
	F("CodeBlob", "_code_offset", blob_code_offset),
	F("CompiledMethod", "_method", nmethod_method),
	F("nmethod", "_method", nmethod_method),
	F("nmethod", "_compile_id", nmethod_compile_id),
	F("nmethod", "_metadata_offset", nm_metadata_off),
	F("CompiledMethod", "_scopes_data_begin", nm_scopes_data_begin),
	F("nmethod", "_scopes_pcs_offset", nm_scopes_pcs_off),
	F("nmethod", "_dependencies_offset", nm_deps_off),
	F("nmethod", "_immutable_data", nm_immutable),
	F("nmethod", "_immutable_data_size", nm_immutable_size),
	F("nmethod", "_scopes_data_offset", nm_scopes_data_off),
	F("CodeBlob", "_mutable_data", blob_mutable),
	F("CodeBlob", "_mutable_data_size", blob_mutable_size),
	F("CodeBlob", "_relocation_size", blob_reloc_size),
	F("PcDesc", "_pc_offset", pcdesc_pc),
	F("PcDesc", "_scope_decode_offset", pcdesc_scope),
	SZ("PcDesc", size_pcdesc),
	F("Method", "_constMethod", method_const),
	F("ConstMethod", "_constants", constmethod_constants),
	F("ConstMethod", "_code_size", constmethod_code_size),
	F("ConstMethod", "_flags", constmethod_flags),
	F("ConstMethod", "_flags._flags", constmethod_flags),
	F("ConstMethod", "_name_index", constmethod_name_index),
	F("ConstMethod", "_signature_index", constmethod_sig_index),
	F("ConstantPool", "_pool_holder", cpool_holder),
	F("ConstantPool", "_source_file_name_index", cpool_source_file),
	F("InstanceKlass", "_source_file_name_index", iklass_source_file),
	F("Klass", "_name", klass_name),
	F("Symbol", "_length", symbol_length),
	F("Symbol", "_body", symbol_body),
	SZ("HeapBlock", size_heapblock),
	SZ("ConstMethod", size_constmethod),
	SZ("ConstantPool", size_cpool),
};

static uint64_t *slot(struct op_hs_vm *vm, size_t off)
{
	return (uint64_t *)((char *)vm + off);
}

/* A NUL-terminated name at @addr into @buf (cut at HS_NAME_MAX - 1); false when unreadable. */
static bool read_name(op_hs_read_fn rd, void *ctx, uint64_t addr, char *buf)
{
	size_t got = 0;

	/* read in small pieces: a name may end just before an unmapped page */
	while (got < HS_NAME_MAX - 1) {
		size_t n = 16 - ((addr + got) & 15);

		if (n > HS_NAME_MAX - 1 - got)
			n = HS_NAME_MAX - 1 - got;
		if (rd(ctx, addr + got, buf + got, n))
			return false;
		if (memchr(buf + got, 0, n))
			return true;
		got += n;
	}
	buf[HS_NAME_MAX - 1] = 0;
	return true;
}

static int read_u64(op_hs_read_fn rd, void *ctx, uint64_t addr, uint64_t *v)
{
	return rd(ctx, addr, v, sizeof(*v));
}

static uint64_t field_u64(const unsigned char *e, uint64_t off, uint64_t stride)
{
	uint64_t v;

	if (off > stride || stride - off < 8)
		return 0;
	memcpy(&v, e + off, 8);
	return v;
}

static void take(struct op_hs_vm *vm, const char *type, const char *field, uint64_t value,
		 bool is_static_entry)
{
	for (size_t i = 0; i < sizeof(wants) / sizeof(wants[0]); i++) {
		const struct want *w = &wants[i];

		if (strcmp(w->type, type))
			continue;
		if (!field != !w->field || (field && strcmp(w->field, field)))
			continue;
		if (field && w->is_static != is_static_entry)
			continue;
		*slot(vm, w->off) = value;
	}
}

/* Read the table layout: stride and the given member offsets, each within the stride. */
static int layout(op_hs_read_fn rd, void *ctx, const uint64_t syms[OP_HS_NSYMS], int stride_sym,
		  const int *off_syms, size_t n, uint64_t *stride, uint64_t *offs)
{
	int err = read_u64(rd, ctx, syms[stride_sym], stride);

	if (err)
		return err;
	if (!*stride)
		return -EAGAIN;
	if (*stride > HS_MAX_STRIDE)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		err = read_u64(rd, ctx, syms[off_syms[i]], &offs[i]);
		if (err)
			return err;
		if (offs[i] > *stride || *stride - offs[i] < 8) /* no wrap-around */
			return -EINVAL;
	}
	return 0;
}

static int read_structs(op_hs_read_fn rd, void *ctx, const uint64_t syms[OP_HS_NSYMS],
			struct op_hs_vm *vm)
{
	static const int offsyms[] = { OP_HS_STRUCT_TYPE_NAME, OP_HS_STRUCT_FIELD_NAME,
				       OP_HS_STRUCT_IS_STATIC, OP_HS_STRUCT_OFFSET,
				       OP_HS_STRUCT_ADDRESS };
	unsigned char e[HS_MAX_STRIDE];
	char type[HS_NAME_MAX], field[HS_NAME_MAX];
	uint64_t stride, offs[5], base;
	int err = layout(rd, ctx, syms, OP_HS_STRUCT_STRIDE, offsyms, 5, &stride, offs);

	if (err)
		return err;
	if ((err = read_u64(rd, ctx, syms[OP_HS_STRUCTS], &base)))
		return err;
	if (!base)
		return -EAGAIN;
	for (uint32_t i = 0; i < HS_MAX_ENTRIES; i++) {
		uint64_t tn, fn, is_static;

		if ((err = rd(ctx, base + (uint64_t)i * stride, e, stride)))
			return err;
		tn = field_u64(e, offs[0], stride);
		if (!tn) {
			vm->n_structs = i;
			return 0;
		}
		fn = field_u64(e, offs[1], stride);
		if (!fn || !read_name(rd, ctx, tn, type) || !read_name(rd, ctx, fn, field))
			continue;
		/* isStatic is an int32 */
		is_static = (uint32_t)field_u64(e, offs[2], stride);
		take(vm, type, field,
		     is_static ? field_u64(e, offs[4], stride) : field_u64(e, offs[3], stride),
		     is_static != 0);
	}
	return -EINVAL; /* no end marker within bounds */
}

static int read_types(op_hs_read_fn rd, void *ctx, const uint64_t syms[OP_HS_NSYMS],
		      struct op_hs_vm *vm)
{
	static const int offsyms[] = { OP_HS_TYPE_TYPE_NAME, OP_HS_TYPE_SIZE };
	unsigned char e[HS_MAX_STRIDE];
	char type[HS_NAME_MAX];
	uint64_t stride, offs[2], base;
	int err = layout(rd, ctx, syms, OP_HS_TYPE_STRIDE, offsyms, 2, &stride, offs);

	if (err)
		return err;
	if ((err = read_u64(rd, ctx, syms[OP_HS_TYPES], &base)))
		return err;
	if (!base)
		return -EAGAIN;
	for (uint32_t i = 0; i < HS_MAX_ENTRIES; i++) {
		uint64_t tn;

		if ((err = rd(ctx, base + (uint64_t)i * stride, e, stride)))
			return err;
		tn = field_u64(e, offs[0], stride);
		if (!tn) {
			vm->n_types = i;
			return 0;
		}
		if (read_name(rd, ctx, tn, type))
			take(vm, type, NULL, field_u64(e, offs[1], stride), false);
	}
	return -EINVAL;
}

static int read_ints(op_hs_read_fn rd, void *ctx, const uint64_t syms[OP_HS_NSYMS],
		     struct op_hs_vm *vm)
{
	static const int offsyms[] = { OP_HS_INT_NAME };
	unsigned char e[HS_MAX_STRIDE];
	char name[HS_NAME_MAX];
	uint64_t stride, offs[1], voff, base;
	int err = layout(rd, ctx, syms, OP_HS_INT_STRIDE, offsyms, 1, &stride, offs);

	if (err)
		return err;
	/* the value is an int32: only 4 bytes need to fit in the stride */
	if ((err = read_u64(rd, ctx, syms[OP_HS_INT_VALUE], &voff)))
		return err;
	if (voff > stride || stride - voff < 4) /* no wrap-around */
		return -EINVAL;
	if ((err = read_u64(rd, ctx, syms[OP_HS_INTS], &base)))
		return err;
	if (!base)
		return -EAGAIN;
	for (uint32_t i = 0; i < HS_MAX_ENTRIES; i++) {
		uint64_t nm;
		int32_t v;

		if ((err = rd(ctx, base + (uint64_t)i * stride, e, stride)))
			return err;
		nm = field_u64(e, offs[0], stride);
		if (!nm) {
			vm->n_ints = i;
			return 0;
		}
		if (!read_name(rd, ctx, nm, name))
			continue;
		memcpy(&v, e + voff, 4);
		if (!strcmp(name, "frame::interpreter_frame_method_offset")) {
			vm->frame_method = v;
			vm->have_frame_method = true;
		} else if (!strcmp(name, "frame::interpreter_frame_bcp_offset")) {
			vm->frame_bcp = v;
			vm->have_frame_bcp = true;
		} else if (!strcmp(name, "frame::interpreter_frame_sender_sp_offset")) {
			vm->frame_sender_sp = v;
			vm->have_frame_sender_sp = true;
		}
	}
	return -EINVAL;
}

const char *op_hs_vm_missing(const struct op_hs_vm *vm)
{
	static const struct {
		const char *name;
		size_t off;
	} need[] = {
#define N(m) { #m, offsetof(struct op_hs_vm, m) }
		N(codecache_heaps),
		N(growable_len),
		N(growable_data),
		N(codeheap_memory),
		N(codeheap_segmap),
		N(codeheap_log2_seg),
		N(vspace_low),
		N(vspace_high),
		N(blob_name),
		N(blob_frame_complete),
		N(blob_frame_size),
		N(nmethod_method),
		N(nmethod_compile_id),
		N(method_const),
		N(constmethod_constants),
		N(constmethod_name_index),
		N(constmethod_sig_index),
		N(cpool_holder),
		N(klass_name),
		N(symbol_length),
		N(symbol_body),
		N(size_heapblock),
		N(size_constmethod),
		N(size_cpool),
#undef N
	};

	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++)
		if (*(const uint64_t *)((const char *)vm + need[i].off) == OP_HS_UNSET)
			return need[i].name;
	if (vm->blob_code_begin == OP_HS_UNSET && vm->blob_code_offset == OP_HS_UNSET)
		return "CodeBlob::_code_begin/_code_offset";
	return NULL;
}

int op_hs_vm_read(op_hs_read_fn rd, void *ctx, const uint64_t syms[OP_HS_NSYMS],
		  struct op_hs_vm *vm)
{
	int err;

	memset(vm, 0xff, sizeof(*vm)); /* every offset OP_HS_UNSET */
	vm->have_frame_method = vm->have_frame_bcp = vm->have_frame_sender_sp = false;
	vm->n_structs = vm->n_types = vm->n_ints = 0;
	if ((err = read_structs(rd, ctx, syms, vm)) || (err = read_types(rd, ctx, syms, vm)) ||
	    (err = read_ints(rd, ctx, syms, vm)))
		return err;
	/* x86_64 interpreter frame (frame_x86.hpp) when the JVM does not export the slots */
	if (!vm->have_frame_method)
		vm->frame_method = -3;
	if (!vm->have_frame_bcp)
		vm->frame_bcp = -8;
	if (!vm->have_frame_sender_sp)
		vm->frame_sender_sp = -1;
	if (vm->frame_method < -16 || vm->frame_method > -1 || vm->frame_bcp < -16 ||
	    vm->frame_bcp > -1 || vm->frame_sender_sp < -16 || vm->frame_sender_sp > -1)
		return -ENOTSUP;
	return op_hs_vm_missing(vm) ? -ENOTSUP : 0;
}

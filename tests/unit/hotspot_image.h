/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A synthetic memory image of a JVM's VMStructs tables (lib/runtime/hotspot/vmstructs.h), for
 * the unit test and the fuzzer. The image is mapped at HS_IMG_BASE; its first OP_HS_NSYMS
 * 8-byte words are the exported gHotSpotVM* variables (so symbol k is at HS_IMG_BASE + 8k),
 * then the three tables, laid out as OpenJDK 17 does on x86_64 (struct entries of 48 bytes:
 * type name, field name, type string, isStatic, offset, address; type entries of 40 bytes with
 * the size at 32; int constants of 16 bytes, the value at 8), then the strings.
 */
#ifndef OTELPROF_TEST_HOTSPOT_IMAGE_H
#define OTELPROF_TEST_HOTSPOT_IMAGE_H

#include <stdint.h>
#include <string.h>

#include "runtime/hotspot/vmstructs.h"

#define HS_IMG_BASE 0x10000ull
#define HS_IMG_SIZE 16384

struct hs_img {
	uint8_t b[HS_IMG_SIZE];
	size_t structs, types, ints, strings; /* where each part starts (offsets) */
	size_t ns, nt, ni, str_used;
};

static inline void hs_img_put64(struct hs_img *im, size_t off, uint64_t v)
{
	memcpy(im->b + off, &v, 8);
}

static inline uint64_t hs_img_str(struct hs_img *im, const char *s)
{
	size_t off = im->strings + im->str_used, n = strlen(s) + 1;

	memcpy(im->b + off, s, n);
	im->str_used += n;
	return HS_IMG_BASE + off;
}

static inline void hs_img_init(struct hs_img *im)
{
	memset(im, 0, sizeof(*im));
	im->structs = 0x100; /* up to 64 entries of 48 bytes */
	im->types = 0x1000;  /* up to 32 entries of 40 bytes */
	im->ints = 0x1600;   /* up to 16 entries of 16 bytes */
	im->strings = 0x1800;
	hs_img_put64(im, 8 * OP_HS_STRUCTS, HS_IMG_BASE + im->structs);
	hs_img_put64(im, 8 * OP_HS_STRUCT_TYPE_NAME, 0);
	hs_img_put64(im, 8 * OP_HS_STRUCT_FIELD_NAME, 8);
	hs_img_put64(im, 8 * OP_HS_STRUCT_IS_STATIC, 24);
	hs_img_put64(im, 8 * OP_HS_STRUCT_OFFSET, 32);
	hs_img_put64(im, 8 * OP_HS_STRUCT_ADDRESS, 40);
	hs_img_put64(im, 8 * OP_HS_STRUCT_STRIDE, 48);
	hs_img_put64(im, 8 * OP_HS_TYPES, HS_IMG_BASE + im->types);
	hs_img_put64(im, 8 * OP_HS_TYPE_TYPE_NAME, 0);
	hs_img_put64(im, 8 * OP_HS_TYPE_SIZE, 32);
	hs_img_put64(im, 8 * OP_HS_TYPE_STRIDE, 40);
	hs_img_put64(im, 8 * OP_HS_INTS, HS_IMG_BASE + im->ints);
	hs_img_put64(im, 8 * OP_HS_INT_NAME, 0);
	hs_img_put64(im, 8 * OP_HS_INT_VALUE, 8);
	hs_img_put64(im, 8 * OP_HS_INT_STRIDE, 16);
}

static inline void hs_img_field(struct hs_img *im, const char *type, const char *field,
				bool is_static, uint64_t value)
{
	size_t e = im->structs + 48 * im->ns++;
	uint32_t st = is_static;

	hs_img_put64(im, e, hs_img_str(im, type));
	hs_img_put64(im, e + 8, hs_img_str(im, field));
	memcpy(im->b + e + 24, &st, 4);
	hs_img_put64(im, e + (is_static ? 40 : 32), value);
}

static inline void hs_img_type(struct hs_img *im, const char *type, uint64_t size)
{
	size_t e = im->types + 40 * im->nt++;

	hs_img_put64(im, e, hs_img_str(im, type));
	hs_img_put64(im, e + 32, size);
}

static inline void hs_img_int(struct hs_img *im, const char *name, int32_t v)
{
	size_t e = im->ints + 16 * im->ni++;

	hs_img_put64(im, e, hs_img_str(im, name));
	memcpy(im->b + e + 8, &v, 4);
}

/* The fields of OpenJDK 17.0.15 as the live JVM on this machine has them. */
static inline void hs_img_jdk17(struct hs_img *im)
{
	hs_img_init(im);
	hs_img_field(im, "CodeCache", "_heaps", true, 0x7f0000001000);
	hs_img_field(im, "CodeCache", "_low_bound", true, 0x7f0000001008);
	hs_img_field(im, "CodeCache", "_high_bound", true, 0x7f0000001010);
	hs_img_field(im, "GrowableArrayBase", "_len", false, 0);
	hs_img_field(im, "GrowableArray<int>", "_data", false, 8);
	hs_img_field(im, "CodeHeap", "_memory", false, 8);
	hs_img_field(im, "CodeHeap", "_segmap", false, 88);
	hs_img_field(im, "CodeHeap", "_log2_segment_size", false, 176);
	hs_img_field(im, "VirtualSpace", "_low_boundary", false, 0);
	hs_img_field(im, "VirtualSpace", "_high_boundary", false, 8);
	hs_img_field(im, "CodeBlob", "_name", false, 96);
	hs_img_field(im, "CodeBlob", "_frame_complete_offset", false, 20);
	hs_img_field(im, "CodeBlob", "_frame_size", false, 28);
	hs_img_field(im, "CodeBlob", "_code_begin", false, 32);
	hs_img_field(im, "CompiledMethod", "_method", false, 112);
	hs_img_field(im, "nmethod", "_compile_id", false, 196);
	hs_img_field(im, "Method", "_constMethod", false, 8);
	hs_img_field(im, "ConstMethod", "_constants", false, 8);
	hs_img_field(im, "ConstMethod", "_code_size", false, 40);
	hs_img_field(im, "ConstMethod", "_flags", false, 46);
	hs_img_field(im, "ConstMethod", "_name_index", false, 42);
	hs_img_field(im, "ConstMethod", "_signature_index", false, 44);
	hs_img_field(im, "ConstantPool", "_pool_holder", false, 24);
	hs_img_field(im, "ConstantPool", "_source_file_name_index", false, 60);
	hs_img_field(im, "Klass", "_name", false, 24);
	hs_img_field(im, "Symbol", "_length", false, 4);
	hs_img_field(im, "Symbol", "_body", false, 6);
	hs_img_type(im, "HeapBlock", 16);
	hs_img_type(im, "ConstMethod", 56);
	hs_img_type(im, "ConstantPool", 72);
	hs_img_int(im, "frame::interpreter_frame_method_offset", -3);
	hs_img_int(im, "frame::interpreter_frame_bcp_offset", -8);
}

/* A reader over the image: bytes outside it do not exist. */
static inline int hs_img_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const uint8_t *b = ctx;
	size_t size = HS_IMG_SIZE;

	if (addr < HS_IMG_BASE || addr - HS_IMG_BASE > size || len > size - (addr - HS_IMG_BASE))
		return -14; /* -EFAULT */
	memcpy(buf, b + (addr - HS_IMG_BASE), len);
	return 0;
}

static inline void hs_img_syms(uint64_t syms[OP_HS_NSYMS])
{
	for (int k = 0; k < OP_HS_NSYMS; k++)
		syms[k] = HS_IMG_BASE + 8ull * k;
}

#endif

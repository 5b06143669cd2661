// SPDX-License-Identifier: Apache-2.0
/*
 * The VMStructs table reader (lib/runtime/hotspot/vmstructs.c) on synthetic JVM memory images
 * (hotspot_image.h): a JDK 17 layout read whole; JDK 25's spellings (nmethod::_method,
 * CodeBlob::_code_offset, _flags._flags); a JVM still starting (strides 0); a build that lacks
 * a field (an unknown layout: -ENOTSUP naming the field); broken tables (stride out of range,
 * no end marker, names that run off the image). `test_hotspot --seed FILE` writes the JDK 17
 * image as the fuzzer's seed.
 */
#include <errno.h>

#include "check.h"
#include "hotspot_image.h"

static struct hs_img im;

static int read_img(struct op_hs_vm *vm)
{
	uint64_t syms[OP_HS_NSYMS];

	hs_img_syms(syms);
	return op_hs_vm_read(hs_img_read, im.b, syms, vm);
}

static void test_jdk17(void)
{
	struct op_hs_vm vm;

	hs_img_jdk17(&im);
	CHECK_EQ(read_img(&vm), 0);
	CHECK_EQ(vm.n_structs, im.ns);
	CHECK_EQ(vm.n_types, im.nt);
	CHECK_EQ(vm.n_ints, im.ni);
	CHECK_EQ(vm.codecache_heaps, 0x7f0000001000);
	CHECK_EQ(vm.nmethod_method, 112);
	CHECK_EQ(vm.blob_code_begin, 32);
	CHECK(vm.blob_code_offset == OP_HS_UNSET);
	CHECK_EQ(vm.codeheap_segmap, 88);
	CHECK_EQ(vm.size_heapblock, 16);
	CHECK_EQ(vm.size_constmethod, 56);
	CHECK_EQ(vm.frame_method, -3);
	CHECK_EQ(vm.frame_bcp, -8);
	CHECK_EQ(vm.frame_sender_sp, -1); /* not in the table: frame_x86.hpp's value */
	CHECK(op_hs_vm_missing(&vm) == NULL);
}

static void test_jdk25_spellings(void)
{
	struct op_hs_vm vm;

	hs_img_jdk17(&im);
	/* rename CompiledMethod::_method and CodeBlob::_code_begin as JDK 25 has them */
	for (size_t i = 0; i < im.ns; i++) {
		uint64_t tn, fn;
		char *t, *f;

		memcpy(&tn, im.b + im.structs + 48 * i, 8);
		memcpy(&fn, im.b + im.structs + 48 * i + 8, 8);
		t = (char *)im.b + (tn - HS_IMG_BASE);
		f = (char *)im.b + (fn - HS_IMG_BASE);
		if (!strcmp(t, "CompiledMethod"))
			memcpy(t, "nmethod\0", 8);
		if (!strcmp(f, "_code_begin")) {
			/* a longer name: point the entry at a fresh string */
			hs_img_put64(&im, im.structs + 48 * i + 8, hs_img_str(&im, "_code_offset"));
			hs_img_put64(&im, im.structs + 48 * i + 32, 36);
		}
	}
	CHECK_EQ(read_img(&vm), 0);
	CHECK_EQ(vm.nmethod_method, 112);
	CHECK(vm.blob_code_begin == OP_HS_UNSET);
	CHECK_EQ(vm.blob_code_offset, 36);
}

static void test_starting(void)
{
	struct op_hs_vm vm;

	hs_img_jdk17(&im);
	hs_img_put64(&im, 8 * OP_HS_STRUCT_STRIDE, 0); /* .bss, before vmStructs_init */
	CHECK_EQ(read_img(&vm), -EAGAIN);
	hs_img_jdk17(&im);
	hs_img_put64(&im, 8 * OP_HS_TYPES, 0);
	CHECK_EQ(read_img(&vm), -EAGAIN);
}

static void test_unknown_layout(void)
{
	struct op_hs_vm vm;

	hs_img_jdk17(&im);
	/* a build without Klass::_name: the 24th entry renamed to a field no one wants */
	for (size_t i = 0; i < im.ns; i++) {
		uint64_t fn, tn;

		memcpy(&tn, im.b + im.structs + 48 * i, 8);
		memcpy(&fn, im.b + im.structs + 48 * i + 8, 8);
		if (!strcmp((char *)im.b + (tn - HS_IMG_BASE), "Klass"))
			hs_img_put64(&im, im.structs + 48 * i + 8, hs_img_str(&im, "_other"));
	}
	CHECK_EQ(read_img(&vm), -ENOTSUP);
	CHECK_STR(op_hs_vm_missing(&vm), "klass_name");
	/* an interpreter frame slot outside the frame */
	hs_img_jdk17(&im);
	hs_img_int(&im, "frame::interpreter_frame_bcp_offset", 3);
	CHECK_EQ(read_img(&vm), -ENOTSUP);
}

static void test_broken(void)
{
	struct op_hs_vm vm;

	hs_img_jdk17(&im);
	hs_img_put64(&im, 8 * OP_HS_STRUCT_STRIDE, 4096);
	CHECK_EQ(read_img(&vm), -EINVAL);
	hs_img_jdk17(&im);
	hs_img_put64(&im, 8 * OP_HS_STRUCT_ADDRESS, 48); /* the address outside the entry */
	CHECK_EQ(read_img(&vm), -EINVAL);
	/* member offsets that wrap around when the member's size is added (found by fuzzing) */
	hs_img_jdk17(&im);
	hs_img_put64(&im, 8 * OP_HS_INT_VALUE, UINT64_MAX - 1);
	CHECK_EQ(read_img(&vm), -EINVAL);
	hs_img_jdk17(&im);
	hs_img_put64(&im, 8 * OP_HS_STRUCT_OFFSET, UINT64_MAX - 3);
	CHECK_EQ(read_img(&vm), -EINVAL);
	hs_img_jdk17(&im);
	hs_img_put64(&im, 8 * OP_HS_STRUCTS, HS_IMG_BASE + HS_IMG_SIZE - 40); /* runs off */
	CHECK(read_img(&vm) < 0);
	hs_img_jdk17(&im);
	/* a name pointer to the last byte, unterminated */
	im.b[HS_IMG_SIZE - 1] = 'x';
	hs_img_put64(&im, im.structs, HS_IMG_BASE + HS_IMG_SIZE - 1);
	CHECK_EQ(read_img(&vm), -ENOTSUP); /* the entry is skipped: CodeCache::_heaps lost */
	CHECK_STR(op_hs_vm_missing(&vm), "codecache_heaps");
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--seed")) {
		FILE *f = fopen(argv[2], "wb");

		hs_img_jdk17(&im);
		if (!f || fwrite(im.b, 1, sizeof(im.b), f) != sizeof(im.b))
			return 1;
		return fclose(f) ? 1 : 0;
	}
	test_jdk17();
	test_jdk25_spellings();
	test_starting();
	test_unknown_layout();
	test_broken();
	return check_done();
}

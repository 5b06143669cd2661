// SPDX-License-Identifier: Apache-2.0
/*
 * Fuzz the HotSpot VMStructs table reader (lib/runtime/hotspot/vmstructs.c): the input is a
 * JVM memory image mapped at HS_IMG_BASE whose first words are the gHotSpotVM* variables
 * (tests/unit/hotspot_image.h; the seed is its JDK 17 image). Invariants: no crash, no read
 * outside the image; success means every field the unwinder needs is set and the interpreter
 * frame slots lie below the frame pointer; entry counts within the reader's bounds.
 */
#include <errno.h>

#include "fuzz.h"
#include "hotspot_image.h"

struct fimg {
	const uint8_t *b;
	size_t n;
};

static int fread_img(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct fimg *im = ctx;

	if (addr < HS_IMG_BASE || addr - HS_IMG_BASE > im->n || len > im->n - (addr - HS_IMG_BASE))
		return -EFAULT;
	memcpy(buf, im->b + (addr - HS_IMG_BASE), len);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fimg im = { data, size };
	uint64_t syms[OP_HS_NSYMS];
	struct op_hs_vm vm;
	int err;

	hs_img_syms(syms);
	err = op_hs_vm_read(fread_img, &im, syms, &vm);
	FUZZ_ASSERT(err <= 0);
	if (err == 0) {
		FUZZ_ASSERT(op_hs_vm_missing(&vm) == NULL);
		FUZZ_ASSERT(vm.frame_method < 0 && vm.frame_bcp < 0 && vm.frame_sender_sp < 0);
		FUZZ_ASSERT(vm.n_structs <= (1u << 16) && vm.n_types <= (1u << 16));
	}
	return 0;
}

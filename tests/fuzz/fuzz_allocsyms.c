// SPDX-License-Identifier: Apache-2.0
/*
 * Fuzz the allocator-symbol reader (lib/sample/alloc.c) as a profiled process's libraries
 * reach it: the input is an ELF image whose .dynsym/.symtab are searched for malloc, free
 * and the rest, each address turned into a file offset through its executable PT_LOAD
 * segment. Invariants: no crash, no sanitizer report; the count matches the offsets found.
 */
#include "fuzz.h"
#include "sample/alloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t off[OP_ALLOC_NSYMS];
	char *copy = malloc(size ? size : 1);
	int n, found = 0;

	FUZZ_ASSERT(copy);
	memcpy(copy, data, size);
	n = op_alloc_syms_mem(copy, size, off);
	for (size_t i = 0; n >= 0 && i < OP_ALLOC_NSYMS; i++) {
		FUZZ_ASSERT(op_alloc_sym_name(i));
		found += off[i] != 0;
	}
	FUZZ_ASSERT(n < 0 || n == found);
	free(copy);
	return 0;
}

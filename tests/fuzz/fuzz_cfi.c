// SPDX-License-Identifier: Apache-2.0
/*
 * Fuzz the CFI table compiler (lib/unwind/cfi.c) on an ELF image in memory, then look addresses up
 * in the table it built and take the file id through a file descriptor. Invariants: no crash,
 * no sanitizer report; a compiled table has sorted rows whose rule indices exist, covers
 * [base, end), and op_cfi_lookup() returns either NULL or one of its rules.
 */
#include <sys/mman.h>

#include "unwind/cfi.h"
#include "fuzz.h"

static void check_table(const struct op_cfi_table *t, struct fuzz_in *in)
{
	FUZZ_ASSERT(t->n_rows == 0 || t->rows);
	FUZZ_ASSERT(t->n_rules == 0 || t->rules);
	FUZZ_ASSERT(t->end >= t->base);
	for (size_t i = 0; i < t->n_rows; i++) {
		FUZZ_ASSERT(t->rows[i].rule < t->n_rules);
		if (i)
			FUZZ_ASSERT(t->rows[i - 1].pc < t->rows[i].pc);
	}
	FUZZ_ASSERT(op_cfi_table_bytes(t) ==
		    t->n_rows * sizeof(*t->rows) + t->n_rules * sizeof(*t->rules));
	for (int i = 0; i < 8; i++) {
		uint64_t a = i < 2 ? t->base + (i ? (t->end - t->base) / 2 : 0) : fuzz_take(in, 8);
		const struct op_unwind_rule *r = op_cfi_lookup(t, a);

		if (r)
			FUZZ_ASSERT(r >= t->rules && r < t->rules + t->n_rules);
	}
	for (size_t i = 0; i < t->n_rows; i += 1 + t->n_rows / 8)
		FUZZ_ASSERT(op_cfi_lookup(t, t->base + t->rows[i].pc) ==
			    &t->rules[t->rows[i].rule]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int memfd = -1;
	struct fuzz_in tail = { data + (size > 64 ? size - 64 : 0), size > 64 ? 64 : size };
	struct op_cfi_table *t = NULL;
	uint8_t *copy = malloc(size ? size : 1);
	char id[128];
	int err;

	/* a private copy: the exact size, so the sanitizer sees any read past the end */
	FUZZ_ASSERT(copy);
	memcpy(copy, data, size);
	err = op_cfi_compile_mem(copy, size, &t);
	if (err == 0) {
		FUZZ_ASSERT(t);
		check_table(t, &tail);
		op_cfi_table_free(t);
	} else {
		FUZZ_ASSERT(err < 0 && !t);
	}
	free(copy);

	if (memfd < 0)
		memfd = memfd_create("fuzz-cfi", MFD_CLOEXEC);
	if (memfd >= 0 && ftruncate(memfd, 0) == 0 &&
	    pwrite(memfd, data, size, 0) == (ssize_t)size) {
		err = op_cfi_file_id(memfd, id, sizeof(id));
		if (err == 0)
			FUZZ_ASSERT(strlen(id) < sizeof(id) && (id[0] == 'b' || id[0] == 'h'));
	}
	return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CFI table compiler: reads a binary's .eh_frame (found through the section table, else
 * through PT_GNU_EH_FRAME and .eh_frame_hdr) or, without one, its .debug_frame, and a Go
 * binary's .gopclntab SP-delta tables (gopclntab.c); runs every
 * FDE's CFA program and emits compact rows (bpf/unwind/step.h): sorted by address, identical
 * neighbours merged, rules deduplicated, gaps between FDEs marked "not covered".
 *
 * An own parser rather than libdwarf: libdwarf answers "the rules at one PC" (re-running the
 * FDE program per query, quadratic over a whole binary) and hides which expression forms it
 * met; compiling all rows in one linear pass and recognising the handful of expressions GCC
 * and clang emit (PLT stubs, DRAP realignment, signal trampolines) needs the raw program.
 *
 * Pure functions of the file's bytes, no global state: thread-safe, fuzzable.
 */
#ifndef OTELPROF_CFI_H
#define OTELPROF_CFI_H

#include <stddef.h>
#include <stdint.h>

#include "bpf/unwind/tables.h"

enum op_cfi_source {
	OP_CFI_EH_FRAME = 1,
	OP_CFI_DEBUG_FRAME = 2,
	OP_CFI_GOPCLNTAB = 3, /* Go SP-delta tables (+ .eh_frame for a cgo binary's C code) */
};

struct op_cfi_table {
	uint64_t base;		    /* ELF virtual address of row pc 0 */
	uint64_t end;		    /* ELF address past the last covered byte */
	struct op_unwind_row *rows; /* sorted by pc */
	size_t n_rows;
	struct op_unwind_rule *rules; /* distinct rules; rows index them */
	size_t n_rules;
	enum op_cfi_source source;
	size_t n_fdes;	      /* FDEs compiled */
	size_t n_raw_rows;    /* rows before merging */
	size_t n_unsupported; /* rows whose CFA rule is not representable */
};

/*
 * Compile the unwind table of the ELF file open on @fd (read-only, not consumed).
 * Returns 0 with *@out set, -ENOENT when the file has no CFI (neither .eh_frame nor
 * .debug_frame), -EINVAL for malformed CFI, -ENOMEM, -E2BIG when the table cannot be
 * represented (more than 2^22 rows or spanning more than 4 GiB).
 */
int op_cfi_compile_fd(int fd, struct op_cfi_table **out);
int op_cfi_compile_path(const char *path, struct op_cfi_table **out);
/* Same, for an ELF image in memory (the vDSO). */
int op_cfi_compile_mem(const void *image, size_t size, struct op_cfi_table **out);
void op_cfi_table_free(struct op_cfi_table *t);

/* Bytes the table occupies in BPF maps: rows plus its rules. */
size_t op_cfi_table_bytes(const struct op_cfi_table *t);

/*
 * Bucket index of @t for the BPF lookup (bpf/unwind/step.h, struct op_unwind_table).
 * op_cfi_index_entries() returns how many entries it has (n_buckets + 1; 0 when the table is
 * too small to need one) with the finest bucket size whose entries take at most one slot per
 * OP_UNWIND_ROWS_PER_INDEX_SLOT rows, in *@shift. op_cfi_index_fill() writes @n entries.
 */
size_t op_cfi_index_entries(const struct op_cfi_table *t, unsigned int *shift);
void op_cfi_index_fill(const struct op_cfi_table *t, unsigned int shift, uint32_t *idx, size_t n);

/* The rule covering ELF address @vaddr, or NULL if no row does (before the first row). */
const struct op_unwind_rule *op_cfi_lookup(const struct op_cfi_table *t, uint64_t vaddr);

/*
 * File identity used to share tables: "b<hex build id>" when the file has a GNU build id,
 * else "h<hex 64-bit hash of its CFI sections and size>". Returns 0 or a negative errno.
 */
int op_cfi_file_id(int fd, char *buf, size_t len);

#endif

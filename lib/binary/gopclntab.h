/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Go function names, files and lines from .gopclntab (gopclntab.c) for symbolize.c, and the
 * per-function stack-pointer deltas the CFI compiler (cfi.c) turns into unwind rows.
 */
#ifndef OTELPROF_GOPCLNTAB_H
#define OTELPROF_GOPCLNTAB_H

#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "binary/filecache.h"

struct op_file;
struct op_gopcln;

/* Copy and check the pclntab of @elf; NULL when there is none or its format is unknown. */
struct op_gopcln *op_gopcln_load(Elf *elf, struct op_file *f);
/* The same over the ELF image itself (no copy, no file reads): @elf must outlive it. */
struct op_gopcln *op_gopcln_open_mem(Elf *elf);
/* The same with the table mapped again from @fd (not kept): the walk drops what it read. */
struct op_gopcln *op_gopcln_open_fd(Elf *elf, int fd);
void op_gopcln_free(struct op_gopcln *g);
size_t op_gopcln_bytes(const struct op_gopcln *g);
/*
 * The frames at @pc, inlined calls first (name, file, line, start line), from the function
 * table and, Go 1.20+, its inline tree; 0 or -ENOENT. Strings interned in @f.
 */
int op_gopcln_lookup(struct op_gopcln *g, struct op_file *f, uint64_t pc,
		     struct op_sym_result *out);
bool op_gopcln_has_inline(const struct op_gopcln *g);

/*
 * Every function's SP-delta (pcsp) table as ranges: @fn(@ctx, lo, hi, spdelta, entry) for
 * [lo, hi) in ELF virtual addresses, where rsp + spdelta is the address of the return
 * address; @entry marks a function's first range. Stops at and returns @fn's first non-zero
 * result; -ENOENT/-EINVAL for a missing or bad table.
 */
int op_gopcln_spdeltas(struct op_gopcln *g,
		       int (*fn)(void *ctx, uint64_t lo, uint64_t hi, int32_t spdelta, bool entry),
		       void *ctx);

#endif

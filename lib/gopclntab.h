/* SPDX-License-Identifier: Apache-2.0 */
/* Go function names, files and lines from .gopclntab (gopclntab.c); used by symbolize.c only. */
#ifndef OTELPROF_GOPCLNTAB_H
#define OTELPROF_GOPCLNTAB_H

#include <gelf.h>
#include <stddef.h>
#include <stdint.h>

#include "symbolize.h"

struct op_file;
struct op_gopcln;

/* Copy and check the pclntab of @elf; NULL when there is none or its format is unknown. */
struct op_gopcln *op_gopcln_load(Elf *elf, struct op_file *f);
void op_gopcln_free(struct op_gopcln *g);
size_t op_gopcln_bytes(const struct op_gopcln *g);
/* One frame for @pc (name, file, line, start line); 0 or -ENOENT. Strings interned in @f. */
int op_gopcln_lookup(struct op_gopcln *g, struct op_file *f, uint64_t pc,
		     struct op_sym_result *out);

#endif

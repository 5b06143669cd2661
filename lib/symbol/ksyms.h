/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OTELPROF_KSYMS_H
#define OTELPROF_KSYMS_H

#include <stddef.h>
#include <stdint.h>

/* Kernel symbols from /proc/kallsyms (module names kept). */
struct op_ksyms;
struct op_ksyms *op_ksyms_load(void);
void op_ksyms_free(struct op_ksyms *k);
/* Returns the symbol containing @addr (and its module or NULL for vmlinux), or NULL. */
const char *op_ksyms_resolve(const struct op_ksyms *k, uint64_t addr, const char **module);
/* Number of kernel text symbols loaded. */
size_t op_ksyms_count(const struct op_ksyms *k);
/* Between lookups: the table's pages leave resident memory when it lives in a spill file. */
void op_ksyms_idle(struct op_ksyms *k);

#endif

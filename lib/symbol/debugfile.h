/* SPDX-License-Identifier: Apache-2.0 */
/* Separate debug files and MiniDebugInfo (debugfile.c); used by symbolize.c only. */
#ifndef OTELPROF_DEBUGFILE_H
#define OTELPROF_DEBUGFILE_H

#include <gelf.h>
#include <stddef.h>

struct op_file;

/*
 * Find and open @f's separate debug file (build id, then .gnu_debuglink). Returns an fd
 * (the caller closes it) and its path in @found, or -1.
 */
int op_debugfile_open(const struct op_file *f, char *found, size_t found_len);

/* Merge the .symtab of @elf's .gnu_debugdata (xz MiniDebugInfo) into @f. 0 or -errno. */
int op_debugdata_symbols(struct op_file *f, Elf *elf);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Symbolization of an address in a binary of the file cache (binary/filecache.h): DWARF inline
 * chains, files and lines (the file's own or a separate debug file's), Go's pclntab, else the
 * ELF symbol tables. The lazy state it hangs on a file is freed with the file.
 */
#ifndef OTELPROF_SYMBOLIZE_H
#define OTELPROF_SYMBOLIZE_H

#include "binary/filecache.h"

/*
 * Symbolize the ELF virtual address @vaddr. Returns 0 with out->n >= 1, or -ENOENT when no
 * symbol covers it (out->n == 0).
 */
int op_file_symbolize(struct op_file *f, uint64_t vaddr, struct op_sym_result *out);

/*
 * The same for a sampled frame (@self: the sample's innermost user frame): a file whose DWARF
 * is compressed is named from its symbol tables (out->deferred) until its code has been the
 * innermost frame of OTELPROF_DWARF_AFTER samples (default 16); this call reads it then.
 */
int op_file_symbolize_frame(struct op_file *f, uint64_t vaddr, bool self,
			    struct op_sym_result *out);
/*
 * A frame named with out->deferred seen again (its result cached by the caller): counts it
 * like op_file_symbolize_frame() and returns whether the DWARF still waits (false: look the
 * frame up again).
 */
bool op_file_dwarf_waits(struct op_file *f, bool self);
/*
 * OTELPROF_DWARF_AFTER from the environment: 0, or -EINVAL (logged) for a bad value.
 */
int op_symbolize_config(void);

/*
 * Whether symbolizing @f gives file:line (DWARF or Go pclntab) and inline frames (DWARF), for
 * the mapping's has_line_numbers / has_inline_frames. Loads the lazy parts if needed.
 */
int op_file_has_lines(struct op_file *f);
/* Inflated debug sections kept (bytes now) and sections inflated so far, all files. */
void op_symbolize_inflated_stats(uint64_t *bytes, uint64_t *inflations);
int op_file_has_inline_frames(struct op_file *f);

/*
 * Where separate debug files are looked for: a colon-separated list of host directories
 * searched instead of /usr/lib/debug inside each process's root (NULL restores the default).
 * The environment variable OTELPROF_DEBUG_ROOT does the same when this was not called.
 */
void op_symbolize_set_debug_dirs(const char *dirs);

#endif

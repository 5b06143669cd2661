/* SPDX-License-Identifier: Apache-2.0 */
/* DWARF lines and inline chains (dwarf.c); used by symbolize.c only. */
#ifndef OTELPROF_DWARF_H
#define OTELPROF_DWARF_H

#include <libelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbol/symbolize.h"

struct op_file;
struct op_dwarf;

/* Read the CU index of the ELF file open on @fd (dup()ed); strings go to @f. NULL: no DWARF. */
struct op_dwarf *op_dwarf_open(int fd, struct op_file *f);
void op_dwarf_free(struct op_dwarf *d);
/*
 * Whether @elf has a compressed .debug_info (SHF_COMPRESSED, as distributions' debug packages
 * and -gz builds): reading its DWARF means inflating it whole.
 */
bool op_dwarf_compressed(Elf *elf);
/*
 * Whether the DWARF 5 unit headers libdwarf trusts are consistent (checked by open); adds the
 * uncompressed size of the .debug_* sections to *@debug_bytes when non-NULL.
 */
bool op_dwarf_sane(int fd, size_t *debug_bytes);
/*
 * Set up libdwarf for every instance of the process (its allocation tracking is a global):
 * call before creating any libdwarf instance. Thread-safe; the first call does it.
 */
void op_libdwarf_setup(void);
size_t op_dwarf_bytes(const struct op_dwarf *d);
/*
 * Bound on parsed CU data (default 32 MiB); over it, the least recently used parsed CUs are
 * dropped and re-parsed on demand.
 */
void op_dwarf_set_budget(struct op_dwarf *d, size_t bytes);

/*
 * Bound on the section bytes of all open libdwarf instances together (default 40 MiB); over
 * it, the least recently used are closed and re-opened on demand.
 */
void op_dwarf_set_handle_budget(size_t bytes);
/*
 * Close the libdwarf instances unused for a while (op_dwarf_set_handle_idle; what was parsed
 * out of them stays); take the pages of mapped sections out of resident memory.
 * Cheap: does the work at most once a second. Call without holding any file's lock.
 */
void op_dwarf_idle(void);
/*
 * How long a libdwarf instance may stay unused before op_dwarf_idle() closes it (5 s); a
 * file's instance opened again after such a close stays twice as long each time, up to 64x.
 */
void op_dwarf_set_handle_idle(uint64_t ns);
/* Open libdwarf instances and the section bytes they hold, now. */
void op_dwarf_handle_stats(size_t *open, size_t *bytes);

/*
 * Compressed (zlib) debug sections are inflated once and the copy kept when the libdwarf
 * instance closes, so that re-opening it does not inflate them again. Bound on those copies
 * over all files: copies in memory (default 24 MiB) and copies in spill files
 * (util/spill.h; default 256 MiB of disk); this sets both. Over either, the least recently
 * used files' copies are freed (and their instances closed). A section larger than the
 * budget is not kept (libelf inflates it into the instance, freed with it), so a hostile
 * size claim costs no more than before.
 */
void op_dwarf_set_inflated_budget(size_t bytes);
struct op_dwarf_inflated_stats {
	size_t bytes;	     /* inflated copies held now */
	uint64_t inflations; /* sections inflated (each one again after its copy was freed) */
	uint64_t reused;     /* section loads served from a kept copy */
};
void op_dwarf_inflated_stats(struct op_dwarf_inflated_stats *st);

/*
 * Frames for @addr, innermost first. Returns 0 with out->n >= 1; 1 with out->n == 1 when only
 * file and line are known (no function entry: the caller names it); -ENOENT otherwise.
 */
int op_dwarf_lookup(struct op_dwarf *d, uint64_t addr, struct op_sym_result *out);

#endif

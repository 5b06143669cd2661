/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Binaries and their symbols.
 *
 * struct op_file is one ELF file, opened once and shared by every process that maps it
 * (keyed by device + inode + size + mtime), with its build id, htlhash, symbol tables and
 * (later) DWARF line/inline data. The file cache owns them, bounded by bytes, evicting files
 * no one references. Symbol strings returned stay valid while the caller holds a reference.
 *
 * Files are opened read-only through /proc/PID/map_files/START-END, else
 * /proc/PID/root/PATH, so containerised processes resolve and no path from another mount
 * namespace is followed on the host. A malformed or unreadable file still yields an op_file
 * (with no symbols) so frames keep mapping + address.
 */
#ifndef OTELPROF_SYMBOLIZE_H
#define OTELPROF_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

#define OP_MAX_INLINE 16

struct op_sym_line {
	const char *name;	 /* display name (demangled when possible) */
	const char *system_name; /* raw symbol name */
	const char *file;	 /* source file, or NULL */
	int64_t line;		 /* 0 when unknown */
	int64_t start_line;	 /* 0 when unknown */
};

/* Result of symbolizing one address: innermost (inlined) function first. n == 0: unknown. */
struct op_sym_result {
	size_t n;
	struct op_sym_line lines[OP_MAX_INLINE];
};

struct op_file;
struct op_filecache;

/* @max_bytes: bound on memory held by unreferenced files (0 = 32 MiB). */
struct op_filecache *op_filecache_new(size_t max_bytes);
void op_filecache_free(struct op_filecache *c);

/*
 * Open (or find) the file mapped by @pid at [@vma_start, @vma_end) whose path in the process
 * is @path. Returns a new reference, or NULL if the file cannot be opened at all (the caller
 * keeps mapping + address). A @path ending in " (deleted)" is opened only through map_files;
 * "[vdso]" gives the kernel's vDSO image (the same in every process).
 */
struct op_file *op_filecache_get(struct op_filecache *c, int pid, const char *path,
				 uint64_t vma_start, uint64_t vma_end);
/* Open a file by host path (tests, kernel modules); same contract. */
struct op_file *op_filecache_get_path(struct op_filecache *c, const char *path);
void op_file_put(struct op_file *f);

/* Bytes held by the cache (for stats/bench). */
size_t op_filecache_bytes(const struct op_filecache *c);

const char *op_file_build_id_gnu(const struct op_file *f); /* hex, or NULL */
const char *op_file_build_id_go(const struct op_file *f);  /* Go build id, or NULL */
const char *op_file_htlhash(const struct op_file *f);	   /* hex of 16 bytes, or NULL */
int op_file_is_go(const struct op_file *f);

/* Translate a file offset (as in /proc/PID/maps) to an ELF virtual address (PT_LOAD). */
int op_file_offset_to_vaddr(const struct op_file *f, uint64_t offset, uint64_t *vaddr);

/*
 * Symbolize the ELF virtual address @vaddr. Returns 0 with out->n >= 1, or -ENOENT when no
 * symbol covers it (out->n == 0).
 */
int op_file_symbolize(struct op_file *f, uint64_t vaddr, struct op_sym_result *out);

/*
 * Whether symbolizing @f gives file:line (DWARF or Go pclntab) and inline frames (DWARF), for
 * the mapping's has_line_numbers / has_inline_frames. Loads the lazy parts if needed.
 */
int op_file_has_lines(struct op_file *f);
int op_file_has_inline_frames(struct op_file *f);

/*
 * Where separate debug files are looked for: a colon-separated list of host directories
 * searched instead of /usr/lib/debug inside each process's root (NULL restores the default).
 * The environment variable OTELPROF_DEBUG_ROOT does the same when this was not called.
 */
void op_symbolize_set_debug_dirs(const char *dirs);

/* Kernel symbols from /proc/kallsyms (module names kept). */
struct op_ksyms;
struct op_ksyms *op_ksyms_load(void);
void op_ksyms_free(struct op_ksyms *k);
/* Returns the symbol containing @addr (and its module or NULL for vmlinux), or NULL. */
const char *op_ksyms_resolve(const struct op_ksyms *k, uint64_t addr, const char **module);
/* Number of kernel text symbols loaded. */
size_t op_ksyms_count(const struct op_ksyms *k);

#endif

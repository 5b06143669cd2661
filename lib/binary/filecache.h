/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Binaries as the profiler meets them: the file cache and what a binary says about itself.
 *
 * struct op_file is one ELF file, opened once and shared by every process that maps it
 * (keyed by device + inode + size + mtime), with its build id, htlhash, symbol tables and
 * (once the symbolizer has asked) DWARF line/inline data. The file cache owns them, bounded by
 * bytes, evicting files no one references. Symbol strings returned stay valid while the caller
 * holds a reference.
 *
 * Files are opened read-only through /proc/PID/map_files/START-END, else
 * /proc/PID/root/PATH, so containerised processes resolve and no path from another mount
 * namespace is followed on the host. A malformed or unreadable file still yields an op_file
 * (with no symbols) so frames keep mapping + address.
 */
#ifndef OTELPROF_FILECACHE_H
#define OTELPROF_FILECACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#define OP_MAX_INLINE 16

/*
 * A file's identity as the cache keys it (device, inode, size, modification time), for the
 * small per-file caches of other stages (e.g. what a runtime read from a binary).
 */
struct op_file_id {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
};

/* The identity of the file open on @fd; false (errno set) when fstat fails. */
static inline bool op_file_id_of(int fd, struct op_file_id *id)
{
	struct stat st;

	if (fstat(fd, &st))
		return false;
	*id = (struct op_file_id){ st.st_dev, st.st_ino, st.st_size, st.st_mtim };
	return true;
}

static inline bool op_file_id_eq(const struct op_file_id *a, const struct op_file_id *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec;
}

/* A slot for @id in a table of @slots entries. */
static inline size_t op_file_id_slot(const struct op_file_id *id, size_t slots)
{
	uint64_t h = ((uint64_t)id->dev * 0x9e3779b97f4a7c15ull) ^
		     ((uint64_t)id->ino * 0xc2b2ae3d27d4eb4full);

	return (size_t)((h >> 32) % slots);
}

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
	/* named without the file's DWARF, which waits (symbolize.h op_file_symbolize_frame) */
	bool deferred;
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
/*
 * A file already in the cache and referenced now (mapped by a process being tracked), by the
 * device (st_dev, e.g. makedev() of /proc/PID/maps' major:minor) and inode of a mapping:
 * for a process that exited before its libraries were opened (its map_files are gone), the
 * same libc another process maps. NULL when none is cached. A referenced file's inode cannot
 * have been reused: it is mapped, so it is the same file.
 */
struct op_file *op_filecache_get_mapped(struct op_filecache *c, uint64_t dev, uint64_t ino);
/* Open a file by host path (tests, kernel modules); same contract. */
struct op_file *op_filecache_get_path(struct op_filecache *c, const char *path);
void op_file_put(struct op_file *f);

/* Bytes held by the cache (for stats/bench). */
size_t op_filecache_bytes(const struct op_filecache *c);
/* Files open in the cache (in use or idle). */
size_t op_filecache_count(struct op_filecache *c);

const char *op_file_path(const struct op_file *f);	   /* as first opened, or NULL */
const char *op_file_build_id_gnu(const struct op_file *f); /* hex, or NULL */
const char *op_file_build_id_go(const struct op_file *f);  /* Go build id, or NULL */
const char *op_file_htlhash(const struct op_file *f);	   /* hex of 16 bytes, or NULL */
int op_file_is_go(const struct op_file *f);
const char *op_file_go_version(const struct op_file *f); /* "go1.22.12", or NULL */

/* Translate a file offset (as in /proc/PID/maps) to an ELF virtual address (PT_LOAD). */
int op_file_offset_to_vaddr(const struct op_file *f, uint64_t offset, uint64_t *vaddr);

/* The function symbol (.symtab/.dynsym, merged debug symbols) covering @vaddr, or NULL. */
const struct op_sym *op_file_find_sym(const struct op_file *f, uint64_t vaddr);

#endif

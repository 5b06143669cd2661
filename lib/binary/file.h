/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internals of struct op_file, shared by the parts that read a binary: binary/filecache.c
 * (cache, ELF, symbol tables), binary/gopclntab.c (Go's function table) and the symbolizer
 * (symbol/: DWARF lines and inline frames, separate debug files, demangling), which hangs its
 * lazily loaded state on the file and a function that frees it. Not an interface outside lib/.
 */
#ifndef OTELPROF_FILE_H
#define OTELPROF_FILE_H

#include <gelf.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "binary/filecache.h"

/*
 * Append-only string storage in chunks that never move, so pointers handed out stay valid
 * until the pool is freed.
 */
struct op_strpool {
	struct op_strchunk *head;
	size_t bytes;
};
const char *op_strpool_add(struct op_strpool *p, const char *s, size_t len);
void op_strpool_free(struct op_strpool *p);

/* A function symbol: [addr, end). Display names are demangled on lookup (results are cached). */
struct op_sym {
	uint64_t addr;
	uint64_t end;
	const char *name; /* raw, in the file's pool */
};

struct op_load_seg {
	uint64_t offset, filesz, vaddr, memsz;
	uint32_t flags; /* PF_X etc. */
};

struct op_dwarf;      /* symbol/dwarf.c */
struct op_gopcln;     /* binary/gopclntab.c */
struct op_rcache_ent; /* symbol/symbolize.c */

struct op_file {
	struct op_filecache *cache;	     /* NULL once the cache is gone */
	struct op_file *hnext;		     /* hash chain */
	struct op_file *lru_prev, *lru_next; /* on the cache's idle list while refs == 0 */
	int refs;

	/* identity */
	dev_t dev;
	ino_t ino;
	uint64_t size;
	int64_t mtime_sec, mtime_nsec;

	size_t bytes; /* memory accounted to this file */

	char *path; /* path as the process names it (for debug links); may be NULL */
	char *root; /* "/proc/PID/root" or "" : where to resolve debug files */
	int fd;	    /* kept open until the lazy debug-info load has run; -1 after */

	char *build_id_gnu; /* hex */
	uint8_t *build_id_raw;
	size_t build_id_len;
	char *build_id_go;
	char htlhash[33];
	bool has_htlhash;
	bool is_go;
	char go_version[24]; /* "go1.22.12" from .go.buildinfo, "" if unknown */
	bool is_elf;
	bool is_vdso;
	uint16_t e_type;
	uint16_t e_machine;

	struct op_load_seg *loads;
	size_t n_loads;

	struct op_sym *syms; /* sorted by addr, non-overlapping starts */
	size_t n_syms;
	bool has_symtab;     /* .symtab (not only .dynsym) */
	bool has_debug_info; /* .debug_info in the file itself */

	char *debuglink; /* .gnu_debuglink file name */
	uint32_t debuglink_crc;
	bool has_debugdata; /* .gnu_debugdata (MiniDebugInfo) */

	struct op_strpool pool;
	const char **interned; /* open-addressing set over pool strings */
	size_t n_interned, cap_interned;
	size_t lazy_bytes; /* bytes of lazy state last accounted */

	/* lazily loaded state, under lock; the symbolizer's, freed by release_lazy */
	pthread_mutex_t lock;
	void (*release_lazy)(struct op_file *f); /* set by whoever loads lazy state; or NULL */
	bool full_tried;
	struct op_rcache_ent *rcache; /* recent results (symbolize.c), NULL until first use */
	size_t rcache_bytes;
	struct op_dwarf *dwarf;
	/*
	 * Compressed DWARF not read yet (symbolize.c, dwarf_after): its file open here until the
	 * file's frames have been the innermost of enough samples (dwarf_votes); -1: none waits.
	 */
	int dwarf_fd;
	unsigned int dwarf_votes;
	bool dwarf_waited; /* its DWARF waited: function names from the symbol tables */
	struct op_gopcln *gopcln;
};

/* filecache.c: the first section of @elf named @want (its header in @out), or NULL. */
Elf_Scn *op_elf_section(Elf *elf, const char *want, GElf_Shdr *out);
/* filecache.c: intern a string in the file's pool (deduplicated); NULL on ENOMEM. */
const char *op_file_intern(struct op_file *f, const char *s);
/*
 * filecache.c: the Go version in the @size bytes of a .go.buildinfo section at @buf, into
 * @out ("" when there is none). Pure; fuzzed.
 */
void op_go_buildinfo_version(const void *buf, size_t size, char *out, size_t len);

/*
 * filecache.c: merge the function symbols of an ELF into @f: the file's own when it is first
 * symbolized (not at load: most files seen are only unwound), then a debug file's.
 */
struct Elf;
void op_file_add_elf_symbols(struct op_file *f, struct Elf *elf, bool replace);
void op_file_account(struct op_file *f, ssize_t delta);

#endif

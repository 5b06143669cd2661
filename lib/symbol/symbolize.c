// SPDX-License-Identifier: Apache-2.0
/*
 * op_file_symbolize(): one address to a chain of functions, innermost first. DWARF (inline
 * chains, file and line) from the file or its separate debug file; else Go's pclntab; else the
 * ELF symbol tables (with MiniDebugInfo's and the debug file's .symtab merged in). The lazy
 * parts, the file's own symbol tables among them, are loaded on the first call per file; the
 * file's descriptor is closed after that (DWARF keeps its own).
 *
 * Results are cached per file in a small direct-mapped table keyed by address, so the hot
 * addresses of a profile stay cheap after the DWARF state behind them has been dropped or
 * its libdwarf instance closed. Every string in a result lives in the file's pool, so a
 * cached result stays valid for the file's lifetime.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbol/debugfile.h"
#include "symbol/demangle.h"
#include "symbol/dwarf.h"
#include "binary/gopclntab.h"
#include "util/env.h"
#include "util/log.h"
#include "binary/file.h"
#include "symbol/symbolize.h"

/*
 * Compressed DWARF (SHF_COMPRESSED .debug_info: distributions' debug packages, -gz builds) is
 * inflated whole before one address can be looked up: libc's debug file 8.6 MB (about 35 ms
 * of CPU with the spill copy), python3.11's about 100 ms. On a host sampled at 20 Hz that is
 * most of what the agent spends in the seconds after it first sees a process, mostly for
 * files whose frames are callers (libc's start and thread entry under every C program) or
 * that run for a few samples. Such a file is named from its symbol tables until its code
 * has been the innermost user frame of dwarf_after samples (on-CPU time there); then its
 * DWARF is read and its frames get inline chains, files and lines from then on (the frames
 * named before keep their names without them: op_sym_result.deferred, counted). 0: at first
 * sight, as uncompressed DWARF always is. OTELPROF_DWARF_AFTER sets it.
 */
#define DWARF_AFTER_DEFAULT 16u
#define DWARF_AFTER_MAX	    (1u << 20)
static unsigned int dwarf_after = DWARF_AFTER_DEFAULT;

int op_symbolize_config(void)
{
	const char *v;
	unsigned long n;
	int r = op_env_ulong("OTELPROF_DWARF_AFTER", 0, DWARF_AFTER_MAX, &n, &v);

	if (r == 0)
		return 0;
	if (r < 0) {
		op_err("OTELPROF_DWARF_AFTER=%s: want a number of samples from 0 (read compressed "
		       "DWARF at a file's first sight) to %u (unset it for the default %u)",
		       v, DWARF_AFTER_MAX, DWARF_AFTER_DEFAULT);
		return -EINVAL;
	}
	__atomic_store_n(&dwarf_after, (unsigned int)n, __ATOMIC_RELAXED);
	return 0;
}

#define RCACHE_BITS  8 /* 256 entries per file: about 6 KiB plus the cached lines */
#define RCACHE_SLOTS (1u << RCACHE_BITS)

struct op_rcache_ent {
	uint64_t key; /* vaddr + 1; 0: empty */
	struct op_sym_line *lines;
	uint32_t n;
	int32_t ret;
};

static struct op_rcache_ent *rcache_slot(struct op_file *f, uint64_t vaddr)
{
	uint64_t h = (vaddr ^ (vaddr >> 29)) * 0x9e3779b97f4a7c15ull;

	if (!f->rcache) {
		f->rcache = calloc(RCACHE_SLOTS, sizeof(*f->rcache));
		if (!f->rcache)
			return NULL;
		f->rcache_bytes = RCACHE_SLOTS * sizeof(*f->rcache);
	}
	return &f->rcache[h >> (64 - RCACHE_BITS)];
}

static bool rcache_get(struct op_file *f, uint64_t vaddr, struct op_sym_result *out, int *ret)
{
	struct op_rcache_ent *e = f->rcache ? rcache_slot(f, vaddr) : NULL;

	if (!e || e->key != vaddr + 1 || vaddr == UINT64_MAX) /* key 0 means empty */
		return false;
	out->n = e->n;
	if (e->n)
		memcpy(out->lines, e->lines, e->n * sizeof(*e->lines));
	*ret = e->ret;
	return true;
}

static void rcache_put(struct op_file *f, uint64_t vaddr, const struct op_sym_result *res, int ret)
{
	struct op_rcache_ent *e = vaddr != UINT64_MAX ? rcache_slot(f, vaddr) : NULL;
	struct op_sym_line *lines = NULL;

	if (!e)
		return;
	if (res->n) {
		lines = malloc(res->n * sizeof(*lines));
		if (!lines)
			return;
		memcpy(lines, res->lines, res->n * sizeof(*lines));
	}
	f->rcache_bytes += res->n * sizeof(*lines);
	f->rcache_bytes -= e->n * sizeof(*lines);
	free(e->lines);
	*e = (struct op_rcache_ent){ vaddr + 1, lines, (uint32_t)res->n, ret };
}

static void rcache_free(struct op_file *f)
{
	size_t i;

	if (!f->rcache)
		return;
	for (i = 0; i < RCACHE_SLOTS; i++)
		free(f->rcache[i].lines);
	free(f->rcache);
	f->rcache = NULL;
	f->rcache_bytes = 0;
}

static void release_lazy(struct op_file *f)
{
	rcache_free(f);
	op_dwarf_free(f->dwarf);
	f->dwarf = NULL;
	if (f->dwarf_fd >= 0)
		close(f->dwarf_fd);
	f->dwarf_fd = -1;
	op_gopcln_free(f->gopcln);
	f->gopcln = NULL;
}

static size_t lazy_bytes(const struct op_file *f)
{
	return op_dwarf_bytes(f->dwarf) + op_gopcln_bytes(f->gopcln) + f->pool.bytes +
	       f->cap_interned * sizeof(*f->interned) + f->rcache_bytes;
}

/* Keep the cache's byte count in step with what the lazy parts hold. */
static void account_lazy(struct op_file *f)
{
	size_t now = lazy_bytes(f);

	if (now != f->lazy_bytes) {
		op_file_account(f, (ssize_t)now - (ssize_t)f->lazy_bytes);
		f->lazy_bytes = now;
	}
}

static void load_full(struct op_file *f)
{
	char found[4096] = "";
	int dbg_fd = -1, dwarf_fd = -1;
	bool compressed = false; /* the .debug_info of the DWARF read below is compressed */
	Elf *elf;

	if (f->fd < 0)
		return;
	/* the file's own symbol tables, read at its first symbolization (op_file_add_elf_symbols
	 * counts them in f->bytes) */
	elf = f->is_elf ? elf_begin(f->fd, ELF_C_READ_MMAP, NULL) : NULL;
	if (elf) {
		op_file_add_elf_symbols(f, elf, false);
		compressed = f->has_debug_info && op_dwarf_compressed(elf);
		elf_end(elf);
	}
	/* the pool is already counted in f->bytes; count only its growth from here */
	f->lazy_bytes = f->pool.bytes + f->cap_interned * sizeof(*f->interned);

	/*
	 * Go: .gopclntab gives what DWARF gives for Go code — names, files, lines, start lines and,
	 * Go 1.20+, inlined calls (tests/unit/test_dwarf.c compares them address by address) — for
	 * a fraction of the memory and time (an unstripped 17 MB binary: 36 MiB RSS and 174 ms to
	 * the first address through DWARF). DWARF stays closed then; a cgo binary's C code is
	 * named from its symbol table.
	 */
	if (f->is_go) {
		elf = elf_begin(f->fd, ELF_C_READ_MMAP, NULL);
		if (elf) {
			f->gopcln = op_gopcln_load(elf, f);
			elf_end(elf);
		}
		if (op_gopcln_has_inline(f->gopcln))
			return;
	}
	if (f->has_debug_info) {
		dwarf_fd = f->fd;
	} else if (f->build_id_gnu || f->debuglink) {
		dbg_fd = op_debugfile_open(f, found, sizeof(found));
		if (dbg_fd >= 0) {
			elf = elf_begin(dbg_fd, ELF_C_READ_MMAP, NULL);
			if (elf) {
				/* a stripped binary's static functions are in the debug .symtab */
				if (!f->has_symtab)
					op_file_add_elf_symbols(f, elf, false);
				compressed = op_dwarf_compressed(elf);
				elf_end(elf);
			}
			dwarf_fd = dbg_fd;
		}
	}
	if (dwarf_fd >= 0 && compressed && __atomic_load_n(&dwarf_after, __ATOMIC_RELAXED)) {
		/* read when the file's samples ask for it (dwarf_waits); the descriptor kept */
		f->dwarf_fd = fcntl(dwarf_fd, F_DUPFD_CLOEXEC, 0);
		f->dwarf_waited = f->dwarf_fd >= 0;
	}
	if (dwarf_fd >= 0 && f->dwarf_fd < 0) {
		f->dwarf = op_dwarf_open(dwarf_fd, f);
		if (!f->dwarf && dbg_fd >= 0)
			op_debug("debug file %s has no usable DWARF", found);
	}
	if (!f->has_symtab && f->has_debugdata && dbg_fd < 0) {
		elf = elf_begin(f->fd, ELF_C_READ_MMAP, NULL);
		if (elf) {
			op_debugdata_symbols(f, elf);
			elf_end(elf);
		}
	}
	if (dbg_fd >= 0)
		close(dbg_fd);
}

static void ensure_full(struct op_file *f)
{
	if (f->full_tried)
		return;
	f->full_tried = true;
	f->release_lazy = release_lazy;
	load_full(f);
	if (f->fd >= 0) {
		close(f->fd);
		f->fd = -1;
	}
}

static const char *sym_display(struct op_file *f, struct op_sym *s)
{
	const char *d = op_file_demangle(f, s->name);

	return d ? d : s->name;
}

/*
 * Under f->lock, the lazy parts loaded: counts a sample's innermost frame (@self) against a
 * file whose compressed DWARF waits, and reads the DWARF when it is due (or @now). The
 * results given without it are forgotten then. True while it still waits.
 */
static bool dwarf_waits(struct op_file *f, bool self, bool now)
{
	if (f->dwarf_fd < 0)
		return false;
	if (self && f->dwarf_votes < UINT_MAX)
		f->dwarf_votes++;
	if (!now && f->dwarf_votes < __atomic_load_n(&dwarf_after, __ATOMIC_RELAXED))
		return true;
	f->dwarf = op_dwarf_open(f->dwarf_fd, f);
	if (!f->dwarf)
		op_debug("DWARF of %s: not usable", f->path ? f->path : "?");
	close(f->dwarf_fd);
	f->dwarf_fd = -1;
	rcache_free(f);
	return false;
}

bool op_file_dwarf_waits(struct op_file *f, bool self)
{
	bool r;

	if (!f)
		return false;
	pthread_mutex_lock(&f->lock);
	ensure_full(f);
	r = dwarf_waits(f, self, false);
	account_lazy(f);
	pthread_mutex_unlock(&f->lock);
	return r;
}

static int symbolize(struct op_file *f, uint64_t vaddr, bool self, bool now,
		     struct op_sym_result *out)
{
	struct op_sym *s;
	int ret = -ENOENT, r;

	if (!out)
		return -EINVAL;
	out->n = 0;
	out->deferred = false;
	if (!f)
		return -EINVAL;
	op_dwarf_idle();
	pthread_mutex_lock(&f->lock);
	ensure_full(f);
	out->deferred = dwarf_waits(f, self, now);
	if (rcache_get(f, vaddr, out, &ret)) {
		pthread_mutex_unlock(&f->lock);
		return ret;
	}
	s = (struct op_sym *)op_file_find_sym(f, vaddr);

	r = f->dwarf ? op_dwarf_lookup(f->dwarf, vaddr, out) : -ENOENT;
	if (r == 0) {
		ret = 0;
		/*
		 * a function DIE without a name: the symbol table knows it. A file whose DWARF
		 * waited: the symbol table names the function always, as before its DWARF was read
		 * (its name for a compiler's clone, foo.isra.0, or its choice among aliases), so a
		 * function keeps one name in a profile
		 */
		if ((!out->lines[out->n - 1].name || f->dwarf_waited) && s) {
			out->lines[out->n - 1].name = sym_display(f, s);
			out->lines[out->n - 1].system_name = s->name;
		}
	} else if (r == 1 && (s || f->gopcln)) {
		/* file and line without a function entry */
		struct op_sym_line l = out->lines[0];

		if (f->gopcln && op_gopcln_lookup(f->gopcln, f, vaddr, out) == 0) {
			ret = 0;
		} else if (s) {
			out->lines[0] = (struct op_sym_line){ .name = sym_display(f, s),
							      .system_name = s->name,
							      .file = l.file,
							      .line = l.line };
			out->n = 1;
			ret = 0;
		}
	} else if (f->gopcln && op_gopcln_lookup(f->gopcln, f, vaddr, out) == 0) {
		ret = 0;
	} else if (s) {
		out->lines[0] =
			(struct op_sym_line){ .name = sym_display(f, s), .system_name = s->name };
		out->n = 1;
		ret = 0;
	}
	if (ret)
		out->n = 0;
	if (ret == 0 || ret == -ENOENT)
		rcache_put(f, vaddr, out, ret);
	account_lazy(f);
	pthread_mutex_unlock(&f->lock);
	return ret;
}

int op_file_symbolize(struct op_file *f, uint64_t vaddr, struct op_sym_result *out)
{
	return symbolize(f, vaddr, false, true, out);
}

int op_file_symbolize_frame(struct op_file *f, uint64_t vaddr, bool self, struct op_sym_result *out)
{
	return symbolize(f, vaddr, self, false, out);
}

void op_symbolize_inflated_stats(uint64_t *bytes, uint64_t *inflations)
{
	struct op_dwarf_inflated_stats st;

	op_dwarf_inflated_stats(&st);
	*bytes = st.bytes;
	*inflations = st.inflations;
}

int op_file_has_lines(struct op_file *f)
{
	int r;

	if (!f)
		return 0;
	pthread_mutex_lock(&f->lock);
	ensure_full(f);
	r = f->dwarf != NULL || f->dwarf_fd >= 0 || f->gopcln != NULL;
	pthread_mutex_unlock(&f->lock);
	return r;
}

int op_file_has_inline_frames(struct op_file *f)
{
	int r;

	if (!f)
		return 0;
	pthread_mutex_lock(&f->lock);
	ensure_full(f);
	r = f->dwarf != NULL || f->dwarf_fd >= 0 || op_gopcln_has_inline(f->gopcln);
	pthread_mutex_unlock(&f->lock);
	return r;
}

// SPDX-License-Identifier: Apache-2.0
/*
 * Go function names, files and lines from .gopclntab, which every Go binary keeps, also when
 * built with -ldflags="-s -w" (no .symtab, no DWARF). Formats of Go 1.18-1.19 (magic
 * 0xfffffff0) and 1.20+ (0xfffffff1, adds start lines) are read; older ones are skipped.
 *
 * Layout (runtime/symtab.go, pcHeader): magic u32, pad u8 u8, minLC u8, ptrSize u8,
 * nfunc int, nfiles uint, textStart, funcnameOffset, cuOffset, filetabOffset, pctabOffset,
 * pclnOffset (pointer-sized). pclnOffset starts the function table: nfunc+1 pairs of u32
 * (entry offset from the text start, offset of the _func record from the table).
 *
 * Only the function table is copied (8 bytes a function, for the binary search); function
 * records, names, pc-value tables and file names are read from the file with pread() when a
 * lookup needs them (the symbolizer caches results per address). A truncated or changed file
 * makes lookups fail, never fault.
 */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "binary/gopclntab.h"
#include "util/log.h"
#include "binary/file.h"

#define GO118_MAGIC 0xfffffff0u
#define GO120_MAGIC 0xfffffff1u
#define MAX_PCLNTAB (1u << 30)

struct op_gopcln {
	const uint8_t *mem; /* the table in an ELF image that outlives this (op_gopcln_open_mem) */
	int fd;		    /* else the file, dup()ed */
	uint64_t file_off;  /* of the pclntab in the file */
	uint8_t *ftab;	    /* copy of the function table: (nfunc + 1) * 8 bytes */
	size_t size;
	uint32_t magic;
	uint8_t minlc, ptrsize;
	uint64_t nfunc;
	uint64_t text;
	uint64_t funcname, cutab, filetab, pctab, functab;
	/* go:func.* (funcdata such as inline trees) in the file, when the module data was found */
	uint64_t gofunc_off, gofunc_len;
	void *map; /* op_gopcln_open_fd(): our own read-only mapping of the table (mem points in) */
	size_t map_len;
};

/* @len bytes at pclntab offset @off, all inside the table. */
static bool rd(const struct op_gopcln *g, uint64_t off, void *buf, size_t len)
{
	size_t got = 0;

	if (off > g->size || g->size - off < len)
		return false;
	if (g->mem) {
		memcpy(buf, g->mem + off, len);
		return true;
	}
	if (g->ftab && off >= g->functab && off - g->functab + len <= (g->nfunc + 1) * 8) {
		memcpy(buf, g->ftab + (off - g->functab), len);
		return true;
	}
	while (got < len) {
		ssize_t r = pread(g->fd, (char *)buf + got, len - got,
				  (off_t)(g->file_off + off + got));

		if (r <= 0)
			return false;
		got += (size_t)r;
	}
	return true;
}

static bool rd32(const struct op_gopcln *g, uint64_t off, uint32_t *v)
{
	return rd(g, off, v, 4);
}

static uint64_t rdptr(const uint8_t *p, uint8_t ptrsize)
{
	uint64_t v = 0;

	if (ptrsize == 8)
		memcpy(&v, p, 8);
	else {
		uint32_t w;

		memcpy(&w, p, 4);
		v = w;
	}
	return v;
}

#define MAX_GO_NAME 65536

/* The NUL-terminated string at pclntab offset @off, interned in @f; NULL if unreadable. */
static const char *cstr(const struct op_gopcln *g, struct op_file *f, uint64_t off)
{
	char stack[512], *buf = stack, *big = NULL;
	size_t cap = sizeof(stack), len;
	const char *out = NULL;

	for (;;) {
		len = off < g->size ? g->size - off : 0;
		if (len > cap)
			len = cap;
		if (!len || !rd(g, off, buf, len))
			break;
		if (memchr(buf, '\0', len)) {
			out = op_file_intern(f, buf);
			break;
		}
		if (len < cap || cap >= MAX_GO_NAME)
			break; /* no terminator before the end of the table */
		cap *= 4;
		free(big);
		big = buf = malloc(cap);
		if (!buf)
			break;
	}
	free(big);
	return out;
}

static bool header_ok(const uint8_t *p, size_t n)
{
	uint32_t magic;

	if (n < 8 + 8 * 8)
		return false;
	memcpy(&magic, p, 4);
	return (magic == GO118_MAGIC || magic == GO120_MAGIC) && p[4] == 0 && p[5] == 0 &&
	       (p[6] == 1 || p[6] == 2 || p[6] == 4) && (p[7] == 4 || p[7] == 8);
}

/* The pclntab of @elf: its bytes in the ELF image, file offset and address; NULL if none. */
static const uint8_t *find_table(Elf *elf, size_t *size, uint64_t *file_off, uint64_t *vaddr)
{
	GElf_Shdr sh;
	Elf_Scn *scn;
	Elf_Data *d;

	scn = op_elf_section(elf, ".gopclntab", &sh);
	if (scn && sh.sh_type != SHT_NOBITS) {
		d = elf_rawdata(scn, NULL);
		if (d && d->d_buf && header_ok(d->d_buf, d->d_size)) {
			*size = d->d_size;
			*file_off = sh.sh_offset;
			*vaddr = sh.sh_addr;
			return d->d_buf;
		}
	}
	/* PIE/external linking can fold it into .data.rel.ro: find the header */
	scn = op_elf_section(elf, ".data.rel.ro", &sh);
	d = scn && sh.sh_type != SHT_NOBITS ? elf_rawdata(scn, NULL) : NULL;
	if (d && d->d_buf) {
		for (size_t off = 0; off + 72 <= d->d_size; off += 8)
			if (header_ok((uint8_t *)d->d_buf + off, d->d_size - off)) {
				*size = d->d_size - off;
				*file_off = sh.sh_offset + off;
				*vaddr = sh.sh_addr + off;
				return (uint8_t *)d->d_buf + off;
			}
	}
	return NULL;
}

/* moduledata word indices (Go 1.20+: pcHeader, six slices, findfunctab, minpc, maxpc, text,
 * etext, noptrdata..enoptrbss, covctrs, ecovctrs, end, gcdata, gcbss, types, etypes, rodata,
 * gofunc) */
#define MD_MINPC  20
#define MD_TEXT	  22
#define MD_ETEXT  23
#define MD_GOFUNC 40
#define MD_WORDS  41

/*
 * The module data (runtime/symtab.go moduledata) of the pclntab at @pcln_vaddr: it starts with
 * a pointer to the pclntab header. Found in an allocated data section and accepted only when
 * text <= minpc and the functions (@code_len bytes from text) end by etext. False if none.
 * The linker puts it in .noptrdata, Go 1.26's in .go.module: those first (pass 0), then every
 * other section (pass 1, for a linker that does otherwise). The scan reads every word of a
 * section: reading .rodata and .gopclntab on the way made 19 MB of a 37 MB Go binary resident.
 */
static bool find_moduledata(Elf *elf, uint64_t pcln_vaddr, uint32_t code_len, uint64_t w[MD_WORDS])
{
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx))
		shstrndx = 0;
	for (int pass = 0; pass < 2; pass++) {
		Elf_Scn *scn = NULL;
		GElf_Shdr sh;

		while ((scn = elf_nextscn(elf, scn))) {
			const char *name;
			Elf_Data *d;
			bool usual;

			if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
			    !(sh.sh_flags & SHF_ALLOC) || (sh.sh_flags & SHF_EXECINSTR))
				continue;
			name = shstrndx ? elf_strptr(elf, shstrndx, sh.sh_name) : NULL;
			usual = name &&
				(!strcmp(name, ".noptrdata") || !strcmp(name, ".go.module"));
			if (usual != (pass == 0))
				continue;
			d = elf_rawdata(scn, NULL);
			if (!d || !d->d_buf || d->d_size < MD_WORDS * 8)
				continue;
			for (size_t off = 0; off + MD_WORDS * 8 <= d->d_size; off += 8) {
				memcpy(&w[0], (uint8_t *)d->d_buf + off, 8);
				if (w[0] != pcln_vaddr)
					continue;
				memcpy(w, (uint8_t *)d->d_buf + off, MD_WORDS * 8);
				if (w[MD_TEXT] && w[MD_TEXT] <= w[MD_MINPC] &&
				    w[MD_TEXT] + code_len <= w[MD_ETEXT])
					return true;
			}
		}
	}
	return false;
}

/* File extent of go:func.* at @vaddr: inside an allocated, file-backed, non-code section. */
static void set_gofunc(struct op_gopcln *g, Elf *elf, uint64_t vaddr)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_ALLOC) || (sh.sh_flags & SHF_EXECINSTR))
			continue;
		if (vaddr >= sh.sh_addr && vaddr - sh.sh_addr < sh.sh_size) {
			g->gofunc_off = sh.sh_offset + (vaddr - sh.sh_addr);
			g->gofunc_len = sh.sh_size - (vaddr - sh.sh_addr);
			return;
		}
	}
}

/* Header fields of the table at @base (header_ok() checked); false when inconsistent. */
static bool parse_header(struct op_gopcln *g, Elf *elf, const uint8_t *base, size_t size,
			 uint64_t vaddr)
{
	GElf_Shdr text;
	uint64_t md[MD_WORDS];
	uint32_t code_len;
	uint8_t ps;

	g->size = size;
	memcpy(&g->magic, base, 4);
	g->minlc = base[6];
	g->ptrsize = ps = base[7];
	g->nfunc = rdptr(base + 8, ps);
	g->text = rdptr(base + 8 + 2 * ps, ps);
	g->funcname = rdptr(base + 8 + 3 * ps, ps);
	g->cutab = rdptr(base + 8 + 4 * ps, ps);
	g->filetab = rdptr(base + 8 + 5 * ps, ps);
	g->pctab = rdptr(base + 8 + 6 * ps, ps);
	g->functab = rdptr(base + 8 + 7 * ps, ps);
	if (g->functab >= size || !g->nfunc || g->nfunc >= (size - g->functab) / 8 ||
	    g->funcname >= size || g->pctab >= size)
		return false;
	/* textStart is filled in at run time: the module data knows it (external linking puts
	 * C code first in .text), else Go's code starts .text */
	memcpy(&code_len, base + g->functab + g->nfunc * 8, 4);
	if (ps == 8 && find_moduledata(elf, vaddr, code_len, md)) {
		if (!g->text)
			g->text = md[MD_TEXT];
		if (g->magic == GO120_MAGIC && md[MD_TEXT] == g->text)
			set_gofunc(g, elf, md[MD_GOFUNC]);
	}
	if (!g->text && op_elf_section(elf, ".text", &text))
		g->text = text.sh_addr;
	return true;
}

/*
 * The table of @elf read through @fd (owned: closed on failure), or, with @fd < 0, in the ELF
 * image itself. @what names the file in a debug message. *@base: the table's bytes.
 */
static struct op_gopcln *open_table(Elf *elf, int fd, const char *what, const uint8_t **base)
{
	struct op_gopcln *g;
	size_t size = 0;
	uint64_t file_off = 0, vaddr = 0;

	*base = find_table(elf, &size, &file_off, &vaddr);
	g = *base && size <= MAX_PCLNTAB ? calloc(1, sizeof(*g)) : NULL;
	if (!g) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	g->fd = fd;
	g->file_off = file_off;
	g->mem = fd < 0 ? *base : NULL;
	if (!parse_header(g, elf, *base, size, vaddr)) {
		op_debug("malformed .gopclntab in %s", what ? what : "?");
		op_gopcln_free(g);
		return NULL;
	}
	return g;
}

struct op_gopcln *op_gopcln_load(Elf *elf, struct op_file *f)
{
	struct op_gopcln *g;
	const uint8_t *base;
	int fd = f->fd >= 0 ? dup(f->fd) : -1;

	if (fd < 0)
		return NULL;
	g = open_table(elf, fd, f->path, &base);
	if (!g)
		return NULL;
	/* the function table is searched on every lookup: keep it in memory */
	g->ftab = malloc((g->nfunc + 1) * 8);
	if (!g->ftab) {
		op_gopcln_free(g);
		return NULL;
	}
	memcpy(g->ftab, base + g->functab, (g->nfunc + 1) * 8);
	return g;
}

struct op_gopcln *op_gopcln_open_mem(Elf *elf)
{
	const uint8_t *base;

	return open_table(elf, -1, NULL, &base);
}

/*
 * The walk over every function (op_gopcln_spdeltas) reads the function table, the records and
 * the pc-value tables: through the ELF image's mapping, all of it stays resident until the
 * image is closed (8 MB of a 37 MB Go binary's 13.5 MB table). Through a mapping of the table
 * alone, known to be of the file, the walk can drop what it has read (MADV_DONTNEED: the pages
 * stay in the page cache and fault back in when read again). Reading it with pread() instead
 * took 2.5 times as long: the pc-value tables are shared between functions, the walk jumps.
 */
struct op_gopcln *op_gopcln_open_fd(Elf *elf, int fd)
{
	const uint8_t *base;
	struct op_gopcln *g = open_table(elf, -1, NULL, &base);
	long page = sysconf(_SC_PAGESIZE);
	uint64_t at;
	void *m;

	if (!g || page <= 0)
		return g;
	at = g->file_off - g->file_off % (uint64_t)page;
	m = mmap(NULL, g->size + (g->file_off - at), PROT_READ, MAP_PRIVATE, fd, (off_t)at);
	if (m == MAP_FAILED)
		return g; /* the image's mapping, as op_gopcln_open_mem() */
	g->map = m;
	g->map_len = g->size + (g->file_off - at);
	g->mem = (const uint8_t *)m + (g->file_off - at);
	return g;
}

void op_gopcln_free(struct op_gopcln *g)
{
	if (!g)
		return;
	if (g->fd >= 0)
		close(g->fd);
	free(g->ftab); /* NULL for op_gopcln_open_mem() and op_gopcln_open_fd() */
	if (g->map)
		munmap(g->map, g->map_len);
	free(g);
}

size_t op_gopcln_bytes(const struct op_gopcln *g)
{
	return g ? sizeof(*g) + (g->ftab ? (g->nfunc + 1) * 8 : 0) : 0;
}

/* Sequential reads of a pc-value table through a small buffer. */
struct reader {
	const struct op_gopcln *g;
	uint64_t off; /* next byte */
	uint64_t buf_off;
	size_t buf_len;
	uint8_t buf[256];
};

static bool next_byte(struct reader *r, uint8_t *b)
{
	if (r->g->mem) { /* the table is in memory: no copy through the buffer */
		if (r->off >= r->g->size)
			return false;
		*b = r->g->mem[r->off++];
		return true;
	}
	if (r->off < r->buf_off || r->off >= r->buf_off + r->buf_len) {
		size_t len = sizeof(r->buf);

		if (r->off >= r->g->size)
			return false;
		if (len > r->g->size - r->off)
			len = r->g->size - r->off;
		if (!rd(r->g, r->off, r->buf, len))
			return false;
		r->buf_off = r->off;
		r->buf_len = len;
	}
	*b = r->buf[r->off++ - r->buf_off];
	return true;
}

static bool varint(struct reader *r, uint32_t *v)
{
	uint32_t x = 0;
	int shift;

	for (shift = 0; shift < 35; shift += 7) {
		uint8_t b;

		if (!next_byte(r, &b))
			return false;
		x |= (uint32_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = x;
			return true;
		}
	}
	return false;
}

/* Value of the pc-value table at @tab_off for @target in a function starting at @entry. */
static bool pcvalue(const struct op_gopcln *g, uint32_t tab_off, uint64_t entry, uint64_t target,
		    int32_t *out)
{
	struct reader r = { .g = g, .off = g->pctab + tab_off };
	uint64_t pc = entry;
	int32_t val = -1;
	bool first = true;
	int guard;

	if (!tab_off)
		return false;
	for (guard = 0; guard < 1000000; guard++) {
		uint32_t uv, pcd;

		if (!varint(&r, &uv) || (uv == 0 && !first))
			return false;
		first = false;
		val += (uv & 1) ? -(int32_t)((uv >> 1) + 1) : (int32_t)(uv >> 1);
		if (!varint(&r, &pcd))
			return false;
		pc += (uint64_t)pcd * g->minlc;
		if (target < pc) {
			*out = val;
			return true;
		}
	}
	return false;
}

/* @len bytes at offset @off of go:func.* (funcdata), read from the file. */
static bool rd_gofunc(const struct op_gopcln *g, uint64_t off, void *buf, size_t len)
{
	if (g->fd < 0 || !g->gofunc_len || off > g->gofunc_len || g->gofunc_len - off < len)
		return false;
	return pread(g->fd, buf, len, (off_t)(g->gofunc_off + off)) == (ssize_t)len;
}

/* File and line of @pc in the function at @entry (pcfile/pcln tables of its _func). */
static void file_line(struct op_gopcln *g, struct op_file *f, uint64_t entry, uint64_t pc,
		      uint32_t pcfile, uint32_t pcln, uint32_t cuoff, struct op_sym_line *l)
{
	int32_t fileno, line;

	l->file = NULL;
	l->line = pcvalue(g, pcln, entry, pc, &line) && line > 0 ? line : 0;
	if (pcvalue(g, pcfile, entry, pc, &fileno) && fileno >= 0) {
		uint32_t foff;

		if (rd32(g, g->cutab + ((uint64_t)cuoff + (uint64_t)fileno) * 4, &foff) &&
		    foff != UINT32_MAX)
			l->file = cstr(g, f, g->filetab + foff);
	}
}

/* Go 1.20+ table indices: PCDATA_InlTreeIndex, FUNCDATA_InlTree (runtime/symtab.go) */
#define PCDATA_INLTREE	 2
#define FUNCDATA_INLTREE 3

int op_gopcln_lookup(struct op_gopcln *g, struct op_file *f, uint64_t pc, struct op_sym_result *out)
{
	uint64_t rel, lo = 0, hi, fo, i, entry;
	uint32_t e, funcoff, end, nameoff, pcfile, pcln, cuoff, npcdata, startline = 0;
	uint32_t inl_pcdata = 0, inl_funcdata = UINT32_MAX;
	uint8_t nfuncdata = 0;
	const char *name;
	int32_t idx;

	out->n = 0;
	if (!g || pc < g->text)
		return -ENOENT;
	rel = pc - g->text;
	if (!rd32(g, g->functab + g->nfunc * 8, &end) || rel >= end)
		return -ENOENT;
	hi = g->nfunc;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (!rd32(g, g->functab + mid * 8, &e))
			return -ENOENT;
		if (e <= rel)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return -ENOENT;
	i = lo - 1;
	if (!rd32(g, g->functab + i * 8, &e) || !rd32(g, g->functab + i * 8 + 4, &funcoff))
		return -ENOENT;
	fo = g->functab + funcoff;
	entry = g->text + e;
	/* _func: entryOff, nameOff, args, deferreturn, pcsp, pcfile, pcln, npcdata,
	 * cuOffset, startLine (1.20+), funcID, flag, pad, nfuncdata; then pcdata[npcdata] and
	 * funcdata[nfuncdata] offsets */
	{
		uint32_t rec[11];

		if (!rd(g, fo, rec, g->magic == GO120_MAGIC ? 44 : 36))
			return -ENOENT;
		nameoff = rec[1];
		pcfile = rec[5];
		pcln = rec[6];
		npcdata = rec[7];
		cuoff = rec[8];
		if (g->magic == GO120_MAGIC) {
			startline = rec[9];
			nfuncdata = (uint8_t)(rec[10] >> 24);
		}
	}
	name = cstr(g, f, g->funcname + nameoff);
	if (!name)
		return -ENOENT;
	if (g->gofunc_len && npcdata > PCDATA_INLTREE && nfuncdata > FUNCDATA_INLTREE &&
	    npcdata < 1024) {
		if (!rd32(g, fo + 44 + PCDATA_INLTREE * 4, &inl_pcdata) ||
		    !rd32(g, fo + 44 + ((uint64_t)npcdata + FUNCDATA_INLTREE) * 4, &inl_funcdata))
			inl_pcdata = 0;
	}
	/* inlined calls at @pc, innermost first: each names the callee and the call site's pc */
	while (inl_pcdata && inl_funcdata != UINT32_MAX && out->n < OP_MAX_INLINE - 1 &&
	       pcvalue(g, inl_pcdata, entry, pc, &idx) && idx >= 0) {
		/* inlinedCall: funcID u8, pad [3], nameOff i32, parentPc i32, startLine i32 */
		int32_t ic[4];
		struct op_sym_line *l = &out->lines[out->n];
		const char *iname;

		if (!rd_gofunc(g, (uint64_t)inl_funcdata + (uint64_t)idx * 16, ic, sizeof(ic)) ||
		    ic[2] < 0 || !(iname = cstr(g, f, g->funcname + (uint32_t)ic[1])))
			break;
		file_line(g, f, entry, pc, pcfile, pcln, cuoff, l);
		l->name = l->system_name = iname;
		l->start_line = ic[3] > 0 ? ic[3] : 0;
		out->n++;
		if (entry + (uint64_t)ic[2] == pc)
			break; /* a parent at the same pc would loop */
		pc = entry + (uint64_t)ic[2];
	}
	file_line(g, f, entry, pc, pcfile, pcln, cuoff, &out->lines[out->n]);
	out->lines[out->n].name = out->lines[out->n].system_name = name;
	out->lines[out->n].start_line = (int32_t)startline > 0 ? (int32_t)startline : 0;
	out->n++;
	return 0;
}

/* Whether lookups can return inlined frames (Go 1.20+ inline trees were found). */
bool op_gopcln_has_inline(const struct op_gopcln *g)
{
	return g && g->gofunc_len && g->fd >= 0;
}

int op_gopcln_spdeltas(struct op_gopcln *g,
		       int (*fn)(void *ctx, uint64_t lo, uint64_t hi, int32_t spdelta, bool entry),
		       void *ctx)
{
	uint32_t end;

	if (!g || !rd32(g, g->functab + g->nfunc * 8, &end))
		return -ENOENT;
	for (uint64_t i = 0; i < g->nfunc; i++) {
		uint32_t e, funcoff, next, rec[5];
		struct reader r = { .g = g };
		uint64_t pc, fend;
		int32_t val = -1;
		bool first = true;

		/* what the last 4096 functions read, dropped (open_fd's mapping) */
		if (g->map && i % 4096 == 4095)
			madvise(g->map, g->map_len, MADV_DONTNEED);

		if (!rd32(g, g->functab + i * 8, &e) ||
		    !rd32(g, g->functab + i * 8 + 4, &funcoff) ||
		    !rd32(g, g->functab + (i + 1) * 8, &next) || next < e || next > end)
			return -EINVAL;
		/* _func: entryOff, nameOff, args, deferreturn, pcsp, ... */
		if (!rd(g, g->functab + funcoff, rec, sizeof(rec)) || !rec[4])
			continue; /* no SP table (should not happen): left uncovered */
		pc = g->text + e;
		fend = g->text + next;
		r.off = g->pctab + rec[4];
		/* pairs (value delta, pc delta) until a zero value delta after the first; each
		 * value holds up to the pc after its delta. Bounded by the function's extent. */
		while (pc < fend) {
			uint32_t uv, pcd;
			uint64_t hi;
			int err;

			if (!varint(&r, &uv) || (uv == 0 && !first))
				break;
			first = false;
			val += (uv & 1) ? -(int32_t)((uv >> 1) + 1) : (int32_t)(uv >> 1);
			if (!varint(&r, &pcd) || !pcd)
				break;
			hi = pc + (uint64_t)pcd * g->minlc;
			if (hi > fend)
				hi = fend;
			err = fn(ctx, pc, hi, val, pc == g->text + e);
			if (err)
				return err;
			pc = hi;
		}
	}
	return 0;
}

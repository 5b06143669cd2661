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
 */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>

#include "gopclntab.h"
#include "log.h"
#include "symfile.h"

#define GO118_MAGIC 0xfffffff0u
#define GO120_MAGIC 0xfffffff1u
#define MAX_PCLNTAB (1u << 30)

struct op_gopcln {
	uint8_t *data;
	size_t size;
	uint32_t magic;
	uint8_t minlc, ptrsize;
	uint64_t nfunc;
	uint64_t text;
	uint64_t funcname, cutab, filetab, pctab, functab;
};

static bool rd32(const struct op_gopcln *g, uint64_t off, uint32_t *v)
{
	if (off > g->size || g->size - off < 4)
		return false;
	memcpy(v, g->data + off, 4);
	return true;
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

static const char *cstr(const struct op_gopcln *g, uint64_t off)
{
	if (off >= g->size || !memchr(g->data + off, '\0', g->size - off))
		return NULL;
	return (const char *)g->data + off;
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

static Elf_Scn *section(Elf *elf, const char *want, GElf_Shdr *out)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;

		if (!gelf_getshdr(scn, out))
			continue;
		name = elf_strptr(elf, shstrndx, out->sh_name);
		if (name && !strcmp(name, want))
			return scn;
	}
	return NULL;
}

struct op_gopcln *op_gopcln_load(Elf *elf, struct op_file *f)
{
	struct op_gopcln *g;
	GElf_Shdr sh, text;
	Elf_Scn *scn;
	Elf_Data *d = NULL;
	const uint8_t *base = NULL;
	size_t size = 0;
	uint8_t ps;

	scn = section(elf, ".gopclntab", &sh);
	if (scn && sh.sh_type != SHT_NOBITS) {
		d = elf_rawdata(scn, NULL);
		if (d && d->d_buf && header_ok(d->d_buf, d->d_size)) {
			base = d->d_buf;
			size = d->d_size;
		}
	}
	if (!base) {
		/* PIE/external linking can fold it into .data.rel.ro: find the header */
		scn = section(elf, ".data.rel.ro", &sh);
		d = scn && sh.sh_type != SHT_NOBITS ? elf_rawdata(scn, NULL) : NULL;
		if (d && d->d_buf) {
			size_t off;

			for (off = 0; off + 72 <= d->d_size; off += 8)
				if (header_ok((uint8_t *)d->d_buf + off, d->d_size - off)) {
					base = (uint8_t *)d->d_buf + off;
					size = d->d_size - off;
					break;
				}
		}
	}
	if (!base || size > MAX_PCLNTAB)
		return NULL;
	g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	g->data = malloc(size);
	if (!g->data) {
		free(g);
		return NULL;
	}
	memcpy(g->data, base, size);
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
	if (!g->text && section(elf, ".text", &text))
		g->text = text.sh_addr; /* textStart is filled in at run time */
	if (g->functab >= size || g->nfunc == 0 || g->nfunc > (size - g->functab) / 8 ||
	    g->funcname >= size || g->pctab >= size) {
		op_debug("malformed .gopclntab in %s", f->path ? f->path : "?");
		op_gopcln_free(g);
		return NULL;
	}
	return g;
}

void op_gopcln_free(struct op_gopcln *g)
{
	if (!g)
		return;
	free(g->data);
	free(g);
}

size_t op_gopcln_bytes(const struct op_gopcln *g)
{
	return g ? sizeof(*g) + g->size : 0;
}

static bool varint(const struct op_gopcln *g, uint64_t *off, uint32_t *v)
{
	uint32_t x = 0;
	int shift;

	for (shift = 0; shift < 35; shift += 7) {
		uint8_t b;

		if (*off >= g->size)
			return false;
		b = g->data[(*off)++];
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
	uint64_t off = g->pctab + tab_off, pc = entry;
	int32_t val = -1;
	bool first = true;
	int guard;

	if (!tab_off)
		return false;
	for (guard = 0; guard < 1000000; guard++) {
		uint32_t uv, pcd;

		if (!varint(g, &off, &uv) || (uv == 0 && !first))
			return false;
		first = false;
		val += (uv & 1) ? -(int32_t)((uv >> 1) + 1) : (int32_t)(uv >> 1);
		if (!varint(g, &off, &pcd))
			return false;
		pc += (uint64_t)pcd * g->minlc;
		if (target < pc) {
			*out = val;
			return true;
		}
	}
	return false;
}

int op_gopcln_lookup(struct op_gopcln *g, struct op_file *f, uint64_t pc, struct op_sym_result *out)
{
	uint64_t rel, lo = 0, hi, fo, i;
	uint32_t e, funcoff, end, nameoff, pcfile, pcln, cuoff, startline = 0;
	int32_t fileno, line;
	const char *name, *file = NULL;

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
	/* _func: entryOff, nameOff, args, deferreturn, pcsp, pcfile, pcln, npcdata,
	 * cuOffset, startLine (1.20+) */
	if (!rd32(g, fo + 4, &nameoff) || !rd32(g, fo + 20, &pcfile) || !rd32(g, fo + 24, &pcln) ||
	    !rd32(g, fo + 32, &cuoff))
		return -ENOENT;
	if (g->magic == GO120_MAGIC)
		rd32(g, fo + 36, &startline);
	name = cstr(g, g->funcname + nameoff);
	if (!name)
		return -ENOENT;
	name = op_file_intern(f, name);
	if (!name)
		return -ENOMEM;
	if (!pcvalue(g, pcln, g->text + e, pc, &line))
		line = 0;
	if (pcvalue(g, pcfile, g->text + e, pc, &fileno) && fileno >= 0) {
		uint32_t foff;

		if (rd32(g, g->cutab + ((uint64_t)cuoff + (uint64_t)fileno) * 4, &foff) &&
		    foff != UINT32_MAX) {
			file = cstr(g, g->filetab + foff);
			if (file)
				file = op_file_intern(f, file);
		}
	}
	out->lines[0] = (struct op_sym_line){
		.name = name,
		.system_name = name,
		.file = file,
		.line = line > 0 ? line : 0,
		.start_line = (int32_t)startline > 0 ? (int32_t)startline : 0,
	};
	out->n = 1;
	return 0;
}

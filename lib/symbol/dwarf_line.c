// SPDX-License-Identifier: Apache-2.0
/*
 * DWARF line-program decoder (DWARF 5 section 6.2; versions 2-4 differ only in the header):
 * the rows of a program and the paths of its header's file table.
 * Every read is bounds-checked against the unit: the input is a file from the host.
 */
#include "symbol/dwarf_line.h"

#include <stdlib.h>
#include <string.h>

#include <libdwarf/dwarf.h>

#include "util/cursor.h"

struct regs {
	uint64_t addr, file;
	uint64_t line; /* wraps (corrupt advances): a line past 32 bits is given as 0 */
};

static void regs_reset(struct regs *r)
{
	r->addr = 0;
	r->file = 1;
	r->line = 1;
}

static int emit(const struct regs *r, bool end, long *n,
		int (*fn)(void *ctx, const struct op_line_row *row), void *ctx)
{
	struct op_line_row row = {
		.addr = r->addr,
		.file = r->file,
		.line = r->line > UINT32_MAX ? 0 : (uint32_t)r->line,
		.end_sequence = end,
	};

	(*n)++;
	return fn(ctx, &row);
}

/* A unit's header, read up to the directory and file tables. */
struct line_hdr {
	struct op_cursor prog;	/* the program: from the header's end to the unit's end */
	struct op_cursor tabs;	/* the header's directory and file tables */
	const uint8_t *std_len; /* std_len[op - 1]: operands of standard opcode op */
	unsigned version, osz, min_inst, opcode_base, line_range;
	int line_base;
};

/* The header of the unit at @off; -1 when it is malformed. */
static int read_header(const uint8_t *sec, size_t size, uint64_t off, bool msb, struct line_hdr *hd)
{
	struct op_cursor c = { .msb = msb }, h = { .msb = msb };
	uint64_t len, hlen;

	hd->version = 0;
	if (!sec || off >= size)
		return -1;
	c.p = sec + off;
	c.end = sec + size;
	hd->osz = 4;
	len = op_rd_fixed(&c, 4);
	if (len == 0xffffffffu) {
		hd->osz = 8;
		len = op_rd_fixed(&c, 8);
	} else if (len >= 0xfffffff0u) {
		return -1;
	}
	if (c.bad || len > (uint64_t)(c.end - c.p))
		return -1;
	c.end = c.p + len;
	hd->version = (unsigned)op_rd_fixed(&c, 2);
	if (c.bad || hd->version < 2 || hd->version > 5) {
		hd->version = 0;
		return -1;
	}
	if (hd->version >= 5)
		op_rd_fixed(&c, 2); /* address_size, segment_selector_size */
	hlen = op_rd_fixed(&c, hd->osz);
	if (c.bad || hlen > (uint64_t)(c.end - c.p))
		return -1;
	/* the header's fields, read within the header */
	h.p = c.p;
	h.end = c.p + hlen;
	c.p += hlen;
	hd->prog = c;
	hd->min_inst = (unsigned)op_rd_fixed(&h, 1);
	if (hd->version >= 4)
		op_rd_fixed(&h, 1); /* maximum_operations_per_instruction: VLIW only */
	op_rd_fixed(&h, 1);	    /* default_is_stmt */
	hd->line_base = (int8_t)op_rd_fixed(&h, 1);
	hd->line_range = (unsigned)op_rd_fixed(&h, 1);
	hd->opcode_base = (unsigned)op_rd_fixed(&h, 1);
	if (h.bad || hd->line_range == 0 || hd->opcode_base == 0 ||
	    (size_t)(h.end - h.p) < hd->opcode_base - 1)
		return -1;
	hd->std_len = h.p;
	h.p += hd->opcode_base - 1;
	hd->tabs = h;
	return 0;
}

long op_dwarf_line_rows(const uint8_t *sec, size_t size, uint64_t off, bool msb,
			unsigned *version_out, int (*fn)(void *ctx, const struct op_line_row *row),
			void *ctx)
{
	struct line_hdr hd;
	struct op_cursor c;
	unsigned min_inst, opcode_base, line_range;
	int line_base;
	const uint8_t *std_len;
	struct regs r;
	long n = 0;
	int bad;

	bad = read_header(sec, size, off, msb, &hd);
	*version_out = hd.version;
	if (bad)
		return -1;
	c = hd.prog;
	min_inst = hd.min_inst;
	opcode_base = hd.opcode_base;
	line_range = hd.line_range;
	line_base = hd.line_base;
	std_len = hd.std_len;

	regs_reset(&r);
	while (c.p < c.end && !c.bad) {
		unsigned op = *c.p++;

		if (op >= opcode_base) {
			unsigned adj = op - opcode_base;

			r.addr += (uint64_t)min_inst * (adj / line_range);
			r.line += (uint64_t)(int64_t)(line_base + (int)(adj % line_range));
			if (emit(&r, false, &n, fn, ctx))
				return n;
			continue;
		}
		if (op == 0) {
			uint64_t elen = op_rd_uleb(&c);
			const uint8_t *next;
			unsigned sub;

			if (c.bad || elen == 0 || elen > (uint64_t)(c.end - c.p))
				break;
			next = c.p + elen;
			sub = *c.p++;
			switch (sub) {
			case 1: /* DW_LNE_end_sequence */
				if (emit(&r, true, &n, fn, ctx))
					return n;
				regs_reset(&r);
				break;
			case 2: /* DW_LNE_set_address */
				if (elen - 1 > 8)
					return n; /* no address this wide: corrupt */
				r.addr = op_rd_fixed(&c, (unsigned)(elen - 1));
				break;
			default: /* define_file, set_discriminator, vendor: skipped */
				break;
			}
			c.p = next;
			continue;
		}
		switch (op) {
		case 1: /* DW_LNS_copy */
			if (emit(&r, false, &n, fn, ctx))
				return n;
			break;
		case 2: /* DW_LNS_advance_pc */
			r.addr += (uint64_t)min_inst * op_rd_uleb(&c);
			break;
		case 3: /* DW_LNS_advance_line */
			r.line += (uint64_t)op_rd_sleb(&c);
			break;
		case 4: /* DW_LNS_set_file */
			r.file = op_rd_uleb(&c);
			break;
		case 8: /* DW_LNS_const_add_pc */
			r.addr += (uint64_t)min_inst * ((255 - opcode_base) / line_range);
			break;
		case 9: /* DW_LNS_fixed_advance_pc */
			r.addr += op_rd_fixed(&c, 2);
			break;
		default: {
			/* column, negate_stmt, basic_block, prologue/epilogue, isa, and opcodes
			 * of a later version: skip their operands as the header declares */
			unsigned k;

			for (k = 0; k < std_len[op - 1] && !c.bad; k++)
				op_rd_uleb(&c);
			break;
		}
		}
	}
	return n;
}

/* ---------------------------------------------------------------- the file table */

struct fentry {
	const char *name;
	uint64_t dir;
};

struct ftab {
	const struct op_line_strs *strs;
	unsigned version, osz;
	const char **dirs;
	size_t n_dirs, cap_dirs;
	struct fentry *files;
	size_t n_files, cap_files;
};

static int grow(void **arr, size_t *cap, size_t n, size_t elem)
{
	size_t nc;
	void *na;

	if (n < *cap)
		return 0;
	nc = *cap ? 2 * *cap : 16;
	na = reallocarray(*arr, nc, elem);
	if (!na)
		return -1;
	*arr = na;
	*cap = nc;
	return 0;
}

/* A NUL-terminated string at @c, or NULL (bad set) when it runs past the end. */
static const char *rd_cstr(struct op_cursor *c)
{
	const uint8_t *nul = c->p < c->end ? memchr(c->p, 0, (size_t)(c->end - c->p)) : NULL;
	const char *s = (const char *)c->p;

	if (!nul) {
		c->bad = true;
		c->p = c->end;
		return NULL;
	}
	c->p = nul + 1;
	return s;
}

/* The string at @off of a string section, NULL when outside it or not terminated in it. */
static const char *sec_str(const uint8_t *sec, size_t size, uint64_t off)
{
	struct op_cursor s;

	if (!sec || off >= size)
		return NULL; /* (no arithmetic on a NULL section: undefined even for + 0) */
	s = (struct op_cursor){ .p = sec + off, .end = sec + size };
	return rd_cstr(&s);
}

/*
 * A string of @form (the only ones a path is written in: inline, or an offset into
 * .debug_line_str or .debug_str); NULL on anything else. The strx forms would need the CU's
 * .debug_str_offsets base, which a line table does not have: no producer uses them here.
 */
static const char *rd_str_form(struct ftab *t, struct op_cursor *c, uint64_t form)
{
	uint64_t off;

	switch (form) {
	case DW_FORM_string:
		return rd_cstr(c);
	case DW_FORM_line_strp:
		off = op_rd_fixed(c, t->osz);
		return c->bad ? NULL : sec_str(t->strs->line_str, t->strs->line_str_size, off);
	case DW_FORM_strp:
		off = op_rd_fixed(c, t->osz);
		return c->bad ? NULL : sec_str(t->strs->str, t->strs->str_size, off);
	default:
		return NULL;
	}
}

/* A constant of @form (a directory index); false on a form that is not one. */
static bool rd_const_form(struct op_cursor *c, uint64_t form, uint64_t *v)
{
	switch (form) {
	case DW_FORM_udata:
		*v = op_rd_uleb(c);
		return !c->bad;
	case DW_FORM_data1:
		*v = op_rd_fixed(c, 1);
		return !c->bad;
	case DW_FORM_data2:
		*v = op_rd_fixed(c, 2);
		return !c->bad;
	case DW_FORM_data4:
		*v = op_rd_fixed(c, 4);
		return !c->bad;
	case DW_FORM_data8:
		*v = op_rd_fixed(c, 8);
		return !c->bad;
	default:
		return false;
	}
}

/*
 * Skip a value of @form whose content is not needed (MD5, timestamp, size, vendor content
 * types: the standard lets a reader skip what it does not know by its form). Forms of no
 * bytes are refused: with them an entry could take no room and a count would not be bounded
 * by the header's size.
 */
static bool skip_form(struct op_cursor *c, uint64_t form, unsigned osz)
{
	uint64_t n;

	switch (form) {
	case DW_FORM_string:
		rd_cstr(c);
		break;
	case DW_FORM_line_strp:
	case DW_FORM_strp:
	case DW_FORM_sec_offset:
		op_rd_fixed(c, osz);
		break;
	case DW_FORM_data1:
	case DW_FORM_flag:
	case DW_FORM_strx1:
		op_rd_fixed(c, 1);
		break;
	case DW_FORM_data2:
	case DW_FORM_strx2:
		op_rd_fixed(c, 2);
		break;
	case DW_FORM_strx3:
		op_rd_fixed(c, 3);
		break;
	case DW_FORM_data4:
	case DW_FORM_strx4:
		op_rd_fixed(c, 4);
		break;
	case DW_FORM_data8:
		op_rd_fixed(c, 8);
		break;
	case DW_FORM_data16:
		op_rd_fixed(c, 8);
		op_rd_fixed(c, 8);
		break;
	case DW_FORM_udata:
	case DW_FORM_sdata:
	case DW_FORM_strx:
		op_rd_uleb(c);
		break;
	case DW_FORM_block:
	case DW_FORM_block1:
	case DW_FORM_block2:
	case DW_FORM_block4:
		n = form == DW_FORM_block    ? op_rd_uleb(c)
		    : form == DW_FORM_block1 ? op_rd_fixed(c, 1)
		    : form == DW_FORM_block2 ? op_rd_fixed(c, 2)
					     : op_rd_fixed(c, 4);
		if (c->bad || n > (uint64_t)(c->end - c->p))
			return false;
		c->p += n;
		break;
	default:
		return false;
	}
	return !c->bad;
}

/* DWARF 2-4: include_directories and file_names, each a list ended by an empty string. */
static int read_tables_v4(struct ftab *t, struct op_cursor *c)
{
	while (c->p < c->end && *c->p) {
		const char *dir = rd_cstr(c);

		if (!dir || grow((void **)&t->dirs, &t->cap_dirs, t->n_dirs, sizeof(*t->dirs)))
			return -1;
		t->dirs[t->n_dirs++] = dir;
	}
	op_rd_fixed(c, 1);
	while (!c->bad && c->p < c->end && *c->p) {
		struct fentry f;

		f.name = rd_cstr(c);
		f.dir = op_rd_uleb(c);
		op_rd_uleb(c); /* modification time */
		op_rd_uleb(c); /* length */
		/* 0: the compilation directory, else include_directories[dir - 1] */
		if (c->bad || f.dir > t->n_dirs ||
		    grow((void **)&t->files, &t->cap_files, t->n_files, sizeof(*t->files)))
			return -1;
		t->files[t->n_files++] = f;
	}
	op_rd_fixed(c, 1);
	return c->bad ? -1 : 0;
}

struct lnct {
	uint64_t type, form;
};

/*
 * DWARF 5: an entry format (content type and form pairs), then the entries. @dirs: the
 * directory table (a path each), else the file table (a path and a directory index each).
 */
static int read_entries_v5(struct ftab *t, struct op_cursor *c, bool dirs)
{
	struct lnct fmt[255];
	unsigned nfmt = (unsigned)op_rd_fixed(c, 1), i;
	uint64_t count;
	bool has_path = false;

	for (i = 0; i < nfmt; i++) {
		fmt[i].type = op_rd_uleb(c);
		fmt[i].form = op_rd_uleb(c);
		has_path |= fmt[i].type == DW_LNCT_path;
	}
	count = op_rd_uleb(c);
	if (c->bad)
		return -1;
	if (!count)
		return 0;
	/* every entry has a path, and each takes at least one byte (skip_form()) */
	if (!has_path || count > (uint64_t)(c->end - c->p))
		return -1;
	if (dirs) {
		t->dirs = calloc(count, sizeof(*t->dirs));
		if (!t->dirs)
			return -1;
	} else {
		t->files = calloc(count, sizeof(*t->files));
		if (!t->files)
			return -1;
	}
	for (uint64_t k = 0; k < count; k++) {
		struct fentry f = { NULL, 0 };

		for (i = 0; i < nfmt; i++) {
			bool ok;

			if (fmt[i].type == DW_LNCT_path)
				ok = (f.name = rd_str_form(t, c, fmt[i].form)) != NULL;
			else if (fmt[i].type == DW_LNCT_directory_index && !dirs)
				ok = rd_const_form(c, fmt[i].form, &f.dir);
			else
				ok = skip_form(c, fmt[i].form, t->osz);
			if (!ok || c->bad)
				return -1;
		}
		if (dirs) {
			t->dirs[t->n_dirs++] = f.name;
		} else {
			if (f.dir >= t->n_dirs) /* DWARF 5 numbers directories from 0 */
				return -1;
			t->files[t->n_files++] = f;
		}
	}
	return 0;
}

/* A path being joined, in a buffer grown as needed. */
struct path {
	char *s;
	size_t len, cap;
};

/*
 * Append @part as a path component, the way libdwarf 20210528 joins (_dwarf_pathjoinl): no
 * separator before an empty path or after a trailing one, one of two meeting separators
 * dropped, nothing else normalised ("./libio/./libio/wgenops.c" stays as it is).
 */
static int path_join(struct path *p, const char *part)
{
	size_t n;

	if (p->len && p->s[p->len - 1] == '/') {
		if (*part == '/')
			part++;
	} else if (p->len && *part != '/') {
		if (path_join(p, "/"))
			return -1;
	}
	n = strlen(part);
	if (p->len + n + 1 > p->cap) {
		size_t nc = p->cap ? p->cap : 256;
		char *ns;

		while (nc < p->len + n + 1)
			nc *= 2;
		ns = realloc(p->s, nc);
		if (!ns)
			return -1;
		p->s = ns;
		p->cap = nc;
	}
	memcpy(p->s + p->len, part, n + 1);
	p->len += n;
	return 0;
}

/* libdwarf's full-path test: a leading '/', or a drive letter and ':' (any host). */
static bool path_is_full(const char *s)
{
	return s[0] == '/' || (((s[0] | 0x20) >= 'a' && (s[0] | 0x20) <= 'z') && s[1] == ':');
}

/*
 * File @f's path as libdwarf 20210528's dwarf_srcfiles() gives it (create_fullest_file_path):
 * a full name as it is; else the directory and the name, behind @comp_dir when the directory
 * is not a full path. The directory: DWARF 5 always names one (0: the compilation directory
 * as the producer wrote it), DWARF 2-4 none for index 0.
 */
static int file_path(const struct ftab *t, const struct fentry *f, const char *comp_dir,
		     struct path *p)
{
	const char *dir = "";

	p->len = 0;
	if (path_is_full(f->name))
		return path_join(p, f->name);
	if (t->version >= 5)
		dir = t->dirs[f->dir];
	else if (f->dir)
		dir = t->dirs[f->dir - 1];
	if (!*dir || !path_is_full(dir)) {
		if (comp_dir && *comp_dir && path_join(p, comp_dir))
			return -1;
	}
	if (*dir && path_join(p, dir))
		return -1;
	return path_join(p, f->name);
}

long op_dwarf_line_files(const uint8_t *sec, size_t size, uint64_t off, bool msb,
			 const struct op_line_strs *strs, const char *comp_dir,
			 int (*fn)(void *ctx, const char *path), void *ctx)
{
	static const struct op_line_strs none;
	struct line_hdr hd;
	struct ftab t = { .strs = strs ? strs : &none };
	struct path p = { NULL, 0, 0 };
	long n = -1;
	int bad;

	if (read_header(sec, size, off, msb, &hd))
		return -1;
	t.version = hd.version;
	t.osz = hd.osz;
	if (hd.version >= 5)
		bad = read_entries_v5(&t, &hd.tabs, true) || read_entries_v5(&t, &hd.tabs, false);
	else
		bad = read_tables_v4(&t, &hd.tabs);
	if (bad)
		goto out;
	/* the whole table is read before the first path is given: a malformed one gives none */
	for (n = 0; n < (long)t.n_files; n++) {
		if (file_path(&t, &t.files[n], comp_dir, &p)) {
			n = -1;
			break;
		}
		if (fn(ctx, p.s)) {
			n++;
			break;
		}
	}
out:
	free(p.s);
	free(t.dirs);
	free(t.files);
	return n;
}

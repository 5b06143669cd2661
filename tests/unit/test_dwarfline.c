// SPDX-License-Identifier: Apache-2.0
/*
 * The line-program decoder (lib/symbol/dwarf_line.c): hand-assembled programs in DWARF 2, 4
 * and 5 headers with every opcode, broken ones (a name and a row too many would be a wrong
 * line in a profile), and every CU of real binaries against libdwarf's own decoder
 * (dwarf_srclines_b) as an independent reader: this binary (built with -g by the Makefile),
 * libc's debug file and the pyenv libpythons when the machine has them. The file tables the
 * same way: hand-assembled DWARF 2-5 tables (every form a path or index comes in, broken
 * ones), and every CU's paths against libdwarf's dwarf_srcfiles().
 */
#include <fcntl.h>
#include <gelf.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libdwarf/dwarf.h>
#include <libdwarf/libdwarf.h>

#include "check.h"
#include "symbol/dwarf_line.h"

struct rows {
	struct op_line_row *r;
	size_t n, cap;
	size_t stop_at; /* the callback asks to stop after this many (0: never) */
};

static int take(void *ctx, const struct op_line_row *row)
{
	struct rows *v = ctx;

	if (v->n == v->cap) {
		v->cap = v->cap ? 2 * v->cap : 256;
		v->r = realloc(v->r, v->cap * sizeof(*v->r));
		REQUIRE(v->r);
	}
	v->r[v->n++] = *row;
	return v->stop_at && v->n >= v->stop_at;
}

static void rows_free(struct rows *v)
{
	free(v->r);
	free(v);
}

/* A unit: header fields for @version, the standard opcode lengths, then @prog. */
static size_t unit(uint8_t *out, unsigned version, const uint8_t *prog, size_t plen)
{
	static const uint8_t std_len[12] = { 0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1 };
	uint8_t hdr[64];
	size_t h = 0, n = 0, total;

	hdr[h++] = 1; /* minimum_instruction_length */
	if (version >= 4)
		hdr[h++] = 1;	/* maximum_operations_per_instruction */
	hdr[h++] = 1;		/* default_is_stmt */
	hdr[h++] = (uint8_t)-5; /* line_base */
	hdr[h++] = 14;		/* line_range */
	hdr[h++] = 13;		/* opcode_base */
	memcpy(hdr + h, std_len, sizeof(std_len));
	h += sizeof(std_len);
	/* directory and file tables: empty (v2-4: two terminating zeros; v5: zero formats and
	 * counts), the decoder skips them through header_length */
	if (version >= 5) {
		memcpy(hdr + h, "\0\0\0\0", 4);
		h += 4;
	} else {
		hdr[h++] = 0;
		hdr[h++] = 0;
	}
	total = 2 + (version >= 5 ? 2 : 0) + 4 + h + plen;
	out[n++] = (uint8_t)total;
	out[n++] = (uint8_t)(total >> 8);
	out[n++] = 0;
	out[n++] = 0;
	out[n++] = (uint8_t)version;
	out[n++] = 0;
	if (version >= 5) {
		out[n++] = 8; /* address_size */
		out[n++] = 0; /* segment_selector_size */
	}
	out[n++] = (uint8_t)h;
	out[n++] = 0;
	out[n++] = 0;
	out[n++] = 0;
	memcpy(out + n, hdr, h);
	n += h;
	memcpy(out + n, prog, plen);
	return n + plen;
}

static const uint8_t prog[] = {
	/* set_address 0x401000 */
	0,
	9,
	2,
	0x00,
	0x10,
	0x40,
	0,
	0,
	0,
	0,
	0,
	/* advance_line +9 (line 10), copy: row 0x401000 line 10 file 1 */
	3,
	9,
	1,
	/* special: adj = 0x4b - 13 = 62: addr += 62 / 14 = 4, line += -5 + 62 % 14 = +1 */
	0x4b,
	/* set_file 2, set_column 7, negate_stmt, prologue_end, set_isa 0 (skipped) */
	4,
	2,
	5,
	7,
	6,
	10,
	12,
	0,
	/* advance_pc 0x10, advance_line -3 (line 8), copy */
	2,
	0x10,
	3,
	0x7d,
	1,
	/* const_add_pc: addr += (255 - 13) / 14 = 17; fixed_advance_pc 0x0100; copy */
	8,
	9,
	0x00,
	0x01,
	1,
	/* set_discriminator 3 (skipped), vendor extended op 0x80 of 3 bytes (skipped) */
	0,
	2,
	4,
	3,
	0,
	3,
	0x80,
	0xaa,
	0xbb,
	/* advance_pc 2, end_sequence */
	2,
	2,
	0,
	1,
	1,
	/* a second sequence: registers reset (file 1, line 1) */
	0,
	9,
	2,
	0x00,
	0x20,
	0x40,
	0,
	0,
	0,
	0,
	0,
	1,
	0,
	1,
	1,
};

static void test_programs(void)
{
	static const struct op_line_row want[] = {
		{ 0x401000, 1, 10, false }, { 0x401004, 1, 11, false }, { 0x401014, 2, 8, false },
		{ 0x401125, 2, 8, false },  { 0x401127, 2, 8, true },	{ 0x402000, 1, 1, false },
		{ 0x402000, 1, 1, true },
	};
	static const unsigned versions[] = { 2, 3, 4, 5 };
	uint8_t sec[512];
	struct rows *v = calloc(1, sizeof(*v));

	REQUIRE(v);
	for (size_t k = 0; k < sizeof(versions) / sizeof(versions[0]); k++) {
		/* two units back to back: the second is found by its offset */
		size_t first = unit(sec, 2, prog, 3);
		size_t len = unit(sec + first, versions[k], prog, sizeof(prog));
		unsigned ver = 0;
		long n;

		v->n = 0;
		n = op_dwarf_line_rows(sec, first + len, first, false, &ver, take, v);
		CHECK_EQ(n, (long)(sizeof(want) / sizeof(want[0])));
		CHECK_EQ(ver, versions[k]);
		for (size_t i = 0; i < v->n && i < sizeof(want) / sizeof(want[0]); i++) {
			CHECK_EQ(v->r[i].addr, want[i].addr);
			CHECK_EQ(v->r[i].line, want[i].line);
			CHECK_EQ(v->r[i].file, want[i].file);
			CHECK_EQ(v->r[i].end_sequence, want[i].end_sequence);
		}
		/* the callback stops the walk */
		v->n = 0;
		v->stop_at = 2;
		CHECK_EQ(op_dwarf_line_rows(sec, first + len, first, false, &ver, take, v), 2);
		v->stop_at = 0;
	}
	rows_free(v);
}

static void test_broken(void)
{
	uint8_t sec[512], bad[512];
	struct rows *v = calloc(1, sizeof(*v));
	size_t len = unit(sec, 4, prog, sizeof(prog));
	unsigned ver;

	REQUIRE(v);
	/* every truncation: never a read past the end, never more rows than the whole */
	for (size_t cut = 0; cut < len; cut++) {
		long n;

		v->n = 0;
		n = op_dwarf_line_rows(sec, cut, 0, false, &ver, take, v);
		CHECK(n == -1 || (n >= 0 && n <= 7));
	}
	/* unit length past the section, a reserved length, version 6, line_range 0, an
	 * offset past the end */
	memcpy(bad, sec, len);
	bad[0] = 0xff;
	CHECK_EQ(op_dwarf_line_rows(bad, len, 0, false, &ver, take, v), -1);
	memcpy(bad, sec, len);
	memcpy(bad, "\xf0\xff\xff\xff", 4);
	CHECK_EQ(op_dwarf_line_rows(bad, len, 0, false, &ver, take, v), -1);
	memcpy(bad, sec, len);
	bad[4] = 6;
	CHECK_EQ(op_dwarf_line_rows(bad, len, 0, false, &ver, take, v), -1);
	memcpy(bad, sec, len);
	bad[10 + 4] = 0; /* line_range (after min_inst, max_ops, default_is_stmt, line_base) */
	CHECK_EQ(op_dwarf_line_rows(bad, len, 0, false, &ver, take, v), -1);
	CHECK_EQ(op_dwarf_line_rows(sec, len, len, false, &ver, take, v), -1);
	/* set_address wider than 8 bytes: the rows before it, then nothing more */
	{
		static const uint8_t wide[] = { 1, 0, 10, 2, 1, 2, 3, 4, 5, 6, 7, 8, 9, 1 };

		len = unit(bad, 4, wide, sizeof(wide));
		v->n = 0;
		CHECK_EQ(op_dwarf_line_rows(bad, len, 0, false, &ver, take, v), 1);
	}
	rows_free(v);
}

/* ---------------------------------------------------------------- file tables */

/* Bytes being assembled (little-endian). */
struct buf {
	uint8_t b[1024];
	size_t n;
};

static void put(struct buf *b, uint64_t v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		b->b[b->n++] = (uint8_t)(v >> (8 * i));
}

static void put_str(struct buf *b, const char *s)
{
	size_t n = strlen(s) + 1;

	memcpy(b->b + b->n, s, n);
	b->n += n;
}

static void put_uleb(struct buf *b, uint64_t v)
{
	do {
		uint8_t c = v & 0x7f;

		v >>= 7;
		b->b[b->n++] = c | (v ? 0x80 : 0);
	} while (v);
}

/*
 * A unit of @version (64-bit DWARF when @dw64) whose header holds the directory and file
 * tables @tabs, then a program of one end_sequence. @hlen_delta is added to header_length (a
 * header that says it ends before its tables do).
 */
static size_t unit_tabs(uint8_t *out, unsigned version, bool dw64, const struct buf *tabs,
			long hlen_delta)
{
	static const uint8_t std_len[12] = { 0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1 };
	static const uint8_t prog_end[] = { 0, 1, 1 };
	struct buf u = { .n = 0 }, h = { .n = 0 };
	unsigned osz = dw64 ? 8 : 4;

	put(&h, 1, 1); /* minimum_instruction_length */
	if (version >= 4)
		put(&h, 1, 1);	 /* maximum_operations_per_instruction */
	put(&h, 1, 1);		 /* default_is_stmt */
	put(&h, (uint8_t)-5, 1); /* line_base */
	put(&h, 14, 1);		 /* line_range */
	put(&h, 13, 1);		 /* opcode_base */
	memcpy(h.b + h.n, std_len, sizeof(std_len));
	h.n += sizeof(std_len);
	memcpy(h.b + h.n, tabs->b, tabs->n);
	h.n += tabs->n;

	if (dw64)
		put(&u, 0xffffffffu, 4);
	put(&u, 2 + (version >= 5 ? 2 : 0) + osz + h.n + sizeof(prog_end), osz);
	put(&u, version, 2);
	if (version >= 5)
		put(&u, 8 | 0 << 8, 2); /* address_size 8, segment_selector_size 0 */
	put(&u, (uint64_t)((long)h.n + hlen_delta), osz);
	memcpy(u.b + u.n, h.b, h.n);
	u.n += h.n;
	memcpy(u.b + u.n, prog_end, sizeof(prog_end));
	u.n += sizeof(prog_end);
	memcpy(out, u.b, u.n);
	return u.n;
}

struct paths {
	char p[8][128];
	size_t n;
	size_t stop_at; /* the callback asks to stop after this many (0: never) */
};

static int take_path(void *ctx, const char *path)
{
	struct paths *v = ctx;

	if (v->n < 8)
		snprintf(v->p[v->n], sizeof(v->p[0]), "%s", path);
	v->n++;
	return v->stop_at && v->n >= v->stop_at;
}

static long files_of(const uint8_t *sec, size_t len, const struct op_line_strs *strs,
		     const char *comp_dir, struct paths *v)
{
	long n;

	v->n = 0;
	n = op_dwarf_line_files(sec, len, 0, false, strs, comp_dir, take_path, v);
	CHECK(n < 0 ? v->n == 0 : (size_t)n == v->n);
	return n;
}

/* DWARF 2-4 tables: include_directories, then file_names (name, dir, mtime, length). */
static void v4_tabs(struct buf *t, unsigned bad_dir)
{
	t->n = 0;
	put_str(t, "/usr/include");
	put_str(t, "rel/dir");
	put_str(t, "trail/");
	put(t, 0, 1);
	put_str(t, "a.c"); /* in the compilation directory */
	put_uleb(t, 0);
	put_uleb(t, 1234567); /* modification time */
	put_uleb(t, 300);     /* length */
	put_str(t, "b.h");
	put_uleb(t, 1);
	put_uleb(t, 0);
	put_uleb(t, 0);
	put_str(t, "c.h");
	put_uleb(t, 2);
	put_uleb(t, 0);
	put_uleb(t, 0);
	put_str(t, "/abs/d.c");
	put_uleb(t, 2);
	put_uleb(t, 0);
	put_uleb(t, 0);
	put_str(t, "e.h"); /* "trail/" + "e.h": no second separator */
	put_uleb(t, bad_dir ? bad_dir : 3);
	put_uleb(t, 0);
	put_uleb(t, 0);
	put_str(t, "C:f.c"); /* a drive letter: a full path to libdwarf on any host */
	put_uleb(t, 1);
	put_uleb(t, 0);
	put_uleb(t, 0);
	put(t, 0, 1);
}

static void test_files_v4(void)
{
	uint8_t sec[1024];
	struct buf t;
	struct paths v = { .n = 0 };
	size_t len;

	for (unsigned version = 2; version <= 4; version++) {
		v4_tabs(&t, 0);
		len = unit_tabs(sec, version, false, &t, 0);
		CHECK_EQ(files_of(sec, len, NULL, "/build", &v), 6);
		CHECK_STR(v.p[0], "/build/a.c");
		CHECK_STR(v.p[1], "/usr/include/b.h");
		CHECK_STR(v.p[2], "/build/rel/dir/c.h");
		CHECK_STR(v.p[3], "/abs/d.c");
		CHECK_STR(v.p[4], "/build/trail/e.h");
		CHECK_STR(v.p[5], "C:f.c");
	}
	/* no comp_dir; one with a trailing separator; a relative one (glibc's ".") */
	CHECK_EQ(files_of(sec, len, NULL, NULL, &v), 6);
	CHECK_STR(v.p[0], "a.c");
	CHECK_STR(v.p[2], "rel/dir/c.h");
	CHECK_EQ(files_of(sec, len, NULL, "/build/", &v), 6);
	CHECK_STR(v.p[0], "/build/a.c");
	CHECK_STR(v.p[2], "/build/rel/dir/c.h");
	CHECK_EQ(files_of(sec, len, NULL, "./libio", &v), 6);
	CHECK_STR(v.p[2], "./libio/rel/dir/c.h");
	/* 64-bit DWARF: the same tables */
	len = unit_tabs(sec, 4, true, &t, 0);
	CHECK_EQ(files_of(sec, len, NULL, "/build", &v), 6);
	CHECK_STR(v.p[4], "/build/trail/e.h");
	/* the callback stops the walk */
	v.stop_at = 2;
	CHECK_EQ(files_of(sec, len, NULL, "/build", &v), 2);
	v.stop_at = 0;
	/* no files at all: none given, not an error */
	t.n = 0;
	put(&t, 0, 1);
	put(&t, 0, 1);
	len = unit_tabs(sec, 3, false, &t, 0);
	CHECK_EQ(files_of(sec, len, NULL, "/build", &v), 0);
}

/* .debug_line_str and .debug_str of the DWARF 5 tests */
static const char line_str[] = "/build\0inc\0main.c\0";
static const char str_sec[] = "xx\0/abs/y.h\0";

/*
 * DWARF 5 tables: directories (path: @dir_form, line_strp or string), files (path:
 * @path_form; directory_index: @dir_idx_form; MD5; a vendor content type in a block).
 */
static void v5_tabs(struct buf *t, unsigned osz, unsigned path_form, unsigned dir_idx_form,
		    uint64_t third_dir)
{
	t->n = 0;
	put(t, 1, 1); /* directory_entry_format_count */
	put_uleb(t, DW_LNCT_path);
	put_uleb(t, DW_FORM_line_strp);
	put_uleb(t, 2);
	put(t, 0, osz); /* "/build" */
	put(t, 7, osz); /* "inc" */
	put(t, 4, 1);	/* file_name_entry_format_count */
	put_uleb(t, DW_LNCT_path);
	put_uleb(t, path_form);
	put_uleb(t, DW_LNCT_directory_index);
	put_uleb(t, dir_idx_form);
	put_uleb(t, DW_LNCT_MD5);
	put_uleb(t, DW_FORM_data16);
	put_uleb(t, 0x2001); /* DW_LNCT_LLVM_source: skipped by its form */
	put_uleb(t, DW_FORM_block);
	put_uleb(t, 3);
	for (int i = 0; i < 3; i++) {
		static const char *inline_names[] = { "main.c", "x.h", "/abs/y.h" };
		static const uint64_t offs[] = { 11, 0, 3 }; /* in line_str, line_str, str */
		uint64_t dir = i == 2 ? third_dir : (uint64_t)i;

		if (path_form == DW_FORM_string)
			put_str(t, inline_names[i]);
		else
			put(t, offs[i], osz);
		if (dir_idx_form == DW_FORM_udata)
			put_uleb(t, dir);
		else if (dir_idx_form == DW_FORM_data1)
			put(t, dir, 1);
		else if (dir_idx_form == DW_FORM_data2)
			put(t, dir, 2);
		else
			put_str(t, "?");			/* not a constant */
		put(t, 0x1111111111111111ull * (unsigned)i, 8); /* MD5 */
		put(t, 0, 8);
		put_uleb(t, 2); /* the source: a 2-byte block */
		put(t, 0xabcd, 2);
	}
}

static void test_files_v5(void)
{
	const struct op_line_strs strs = {
		(const uint8_t *)line_str,
		sizeof(line_str) - 1,
		(const uint8_t *)str_sec,
		sizeof(str_sec) - 1,
	};
	uint8_t sec[1024];
	struct buf t;
	struct paths v = { .n = 0 };
	size_t len;

	/* files numbered from 0, file 0 in directory 0 (the compilation directory, full) */
	v5_tabs(&t, 4, DW_FORM_string, DW_FORM_udata, 1);
	len = unit_tabs(sec, 5, false, &t, 0);
	CHECK_EQ(files_of(sec, len, &strs, "/cd", &v), 3);
	CHECK_STR(v.p[0], "/build/main.c");
	CHECK_STR(v.p[1], "/cd/inc/x.h"); /* a relative directory: behind comp_dir */
	CHECK_STR(v.p[2], "/abs/y.h");
	/* the directory index in data1 and data2; 64-bit DWARF */
	v5_tabs(&t, 4, DW_FORM_string, DW_FORM_data1, 1);
	len = unit_tabs(sec, 5, false, &t, 0);
	CHECK_EQ(files_of(sec, len, &strs, "/cd", &v), 3);
	CHECK_STR(v.p[1], "/cd/inc/x.h");
	v5_tabs(&t, 8, DW_FORM_string, DW_FORM_data2, 1);
	len = unit_tabs(sec, 5, true, &t, 0);
	CHECK_EQ(files_of(sec, len, &strs, NULL, &v), 3);
	CHECK_STR(v.p[0], "/build/main.c");
	CHECK_STR(v.p[1], "inc/x.h");
	/* paths in .debug_line_str: main.c, then (line_str offset 0) "/build" as a file name */
	v5_tabs(&t, 4, DW_FORM_line_strp, DW_FORM_udata, 1);
	len = unit_tabs(sec, 5, false, &t, 0);
	CHECK_EQ(files_of(sec, len, &strs, "/cd", &v), 3);
	CHECK_STR(v.p[0], "/build/main.c");
	CHECK_STR(v.p[1], "/build");
	/* paths in .debug_str: offset 3 is "/abs/y.h" */
	v5_tabs(&t, 4, DW_FORM_strp, DW_FORM_udata, 0);
	len = unit_tabs(sec, 5, false, &t, 0);
	CHECK_EQ(files_of(sec, len, &strs, "/cd", &v), 3);
	CHECK_STR(v.p[0], "/build/"); /* "": a separator after the directory, as libdwarf */
	CHECK_STR(v.p[1], "/cd/inc/xx");
	CHECK_STR(v.p[2], "/abs/y.h");
}

static void test_files_broken(void)
{
	const struct op_line_strs strs = {
		(const uint8_t *)line_str,
		sizeof(line_str) - 1,
		(const uint8_t *)str_sec,
		sizeof(str_sec) - 1,
	};
	/* .debug_line_str without its last NUL: the last string runs off the section */
	const struct op_line_strs unterminated = { strs.line_str, strs.line_str_size - 1, NULL, 0 };
	uint8_t sec[1024], *copy;
	struct buf t;
	struct paths v = { .n = 0 };
	size_t len;

	/* v4: a directory index past include_directories */
	v4_tabs(&t, 4);
	len = unit_tabs(sec, 4, false, &t, 0);
	CHECK_EQ(files_of(sec, len, NULL, "/build", &v), -1);
	/* v4: the tables run past header_length (every cut of it), or off the section */
	v4_tabs(&t, 0);
	for (long cut = 1; cut <= (long)t.n; cut++) {
		len = unit_tabs(sec, 4, false, &t, -cut);
		CHECK_EQ(files_of(sec, len, NULL, "/build", &v), -1);
	}
	len = unit_tabs(sec, 4, false, &t, 0);
	for (size_t n = 0; n < len - 3; n++) {
		/* a copy of exactly n bytes: ASan sees a read past them */
		copy = malloc(n ? n : 1);
		REQUIRE(copy);
		memcpy(copy, sec, n);
		CHECK_EQ(op_dwarf_line_files(copy, n, 0, false, NULL, "/b", take_path, &v), -1);
		free(copy);
	}
	/* v5: a directory index out of range (2 of 2 directories) */
	v5_tabs(&t, 4, DW_FORM_string, DW_FORM_udata, 2);
	len = unit_tabs(sec, 5, false, &t, 0);
	CHECK_EQ(files_of(sec, len, &strs, "/cd", &v), -1);
	/* v5: a path of a form that is not a string; a directory index that is not a constant */
	v5_tabs(&t, 4, DW_FORM_data4, DW_FORM_udata, 1);
	len = unit_tabs(sec, 5, false, &t, 0);
	CHECK_EQ(files_of(sec, len, &strs, "/cd", &v), -1);
	v5_tabs(&t, 4, DW_FORM_string, DW_FORM_string, 1);
	len = unit_tabs(sec, 5, false, &t, 0);
	CHECK_EQ(files_of(sec, len, &strs, "/cd", &v), -1);
	/* v5: strx needs a string-offsets base a line table does not have */
	v5_tabs(&t, 4, DW_FORM_strx1, DW_FORM_udata, 1);
	len = unit_tabs(sec, 5, false, &t, 0);
	CHECK_EQ(files_of(sec, len, &strs, "/cd", &v), -1);
	/* v5: line_strp with no .debug_line_str, past it, into an unterminated string */
	v5_tabs(&t, 4, DW_FORM_line_strp, DW_FORM_udata, 1);
	len = unit_tabs(sec, 5, false, &t, 0);
	CHECK_EQ(files_of(sec, len, NULL, "/cd", &v), -1);
	CHECK_EQ(files_of(sec, len, &unterminated, "/cd", &v), -1);
	REQUIRE(t.b[8] == 7);
	t.b[8] = 200; /* the second directory's offset */
	len = unit_tabs(sec, 5, false, &t, 0);
	CHECK_EQ(files_of(sec, len, &strs, "/cd", &v), -1);
	/* v5: an unknown form for a skipped content type (MD5 in form 0x7f) */
	v5_tabs(&t, 4, DW_FORM_string, DW_FORM_udata, 1);
	REQUIRE(t.b[17] == DW_LNCT_MD5 && t.b[18] == DW_FORM_data16);
	t.b[18] = 0x7f;
	len = unit_tabs(sec, 5, false, &t, 0);
	CHECK_EQ(files_of(sec, len, &strs, "/cd", &v), -1);
	/* v5: every cut of the tables */
	v5_tabs(&t, 4, DW_FORM_line_strp, DW_FORM_udata, 1);
	for (long cut = 1; cut <= (long)t.n; cut++) {
		len = unit_tabs(sec, 5, false, &t, -cut);
		CHECK_EQ(files_of(sec, len, &strs, "/cd", &v), -1);
	}
	/* v5: a file count far past the header's bytes (no allocation for it either) */
	t.n = 0;
	put(&t, 1, 1);
	put_uleb(&t, DW_LNCT_path);
	put_uleb(&t, DW_FORM_string);
	put_uleb(&t, 1);
	put_str(&t, "/d");
	put(&t, 1, 1);
	put_uleb(&t, DW_LNCT_path);
	put_uleb(&t, DW_FORM_string);
	put_uleb(&t, 1ull << 60);
	put_str(&t, "f.c");
	len = unit_tabs(sec, 5, false, &t, 0);
	CHECK_EQ(files_of(sec, len, &strs, "/cd", &v), -1);
	/* v5: files but no path in their format; directories but no format */
	t.n = 0;
	put(&t, 1, 1);
	put_uleb(&t, DW_LNCT_path);
	put_uleb(&t, DW_FORM_string);
	put_uleb(&t, 1);
	put_str(&t, "/d");
	put(&t, 1, 1);
	put_uleb(&t, DW_LNCT_directory_index);
	put_uleb(&t, DW_FORM_udata);
	put_uleb(&t, 1);
	put_uleb(&t, 0);
	len = unit_tabs(sec, 5, false, &t, 0);
	CHECK_EQ(files_of(sec, len, &strs, "/cd", &v), -1);
	t.n = 0;
	put(&t, 0, 1);
	put_uleb(&t, 1);
	put(&t, 0, 1);
	put_uleb(&t, 0);
	len = unit_tabs(sec, 5, false, &t, 0);
	CHECK_EQ(files_of(sec, len, &strs, "/cd", &v), -1);
	/* a broken unit header: no file table either */
	v4_tabs(&t, 0);
	len = unit_tabs(sec, 4, false, &t, 0);
	sec[4] = 6; /* version 6 */
	CHECK_EQ(files_of(sec, len, NULL, "/cd", &v), -1);
	CHECK_EQ(op_dwarf_line_files(sec, len, len, false, NULL, "/cd", take_path, &v), -1);
}

static const uint8_t *section(Elf *e, const char *name, size_t *size)
{
	size_t shstr;
	Elf_Scn *s = NULL;

	if (elf_getshdrstrndx(e, &shstr))
		return NULL;
	while ((s = elf_nextscn(e, s))) {
		GElf_Shdr sh;
		const char *nm;
		Elf_Data *d;

		if (!gelf_getshdr(s, &sh) || !(nm = elf_strptr(e, shstr, sh.sh_name)) ||
		    strcmp(nm, name))
			continue;
		if ((sh.sh_flags & SHF_COMPRESSED) && elf_compress(s, 0, 0) < 0)
			return NULL;
		d = elf_getdata(s, NULL);
		if (!d)
			return NULL;
		*size = d->d_size;
		return d->d_buf;
	}
	return NULL;
}

struct all_paths {
	char **p;
	size_t n;
};

static int take_all(void *ctx, const char *path)
{
	struct all_paths *ap = ctx;

	ap->p = realloc(ap->p, (ap->n + 1) * sizeof(*ap->p));
	REQUIRE(ap->p);
	ap->p[ap->n] = strdup(path);
	REQUIRE(ap->p[ap->n]);
	ap->n++;
	return 0;
}

/*
 * Every CU of @path: our rows equal libdwarf's (dwarf_srclines_b), our file paths its
 * dwarf_srcfiles() paths. Returns the number of rows compared.
 */
static size_t against_libdwarf(const char *path)
{
	int fd = open(path, O_RDONLY), fd2 = open(path, O_RDONLY);
	Elf *e;
	const uint8_t *sec;
	size_t size = 0, total = 0, cus = 0, bad = 0, files = 0, bad_files = 0;
	struct op_line_strs strs = { NULL, 0, NULL, 0 };
	Dwarf_Debug dbg = NULL;
	Dwarf_Error err = NULL;
	Dwarf_Unsigned hl, next, toff;
	Dwarf_Half ver, asz, lsz, esz, ct;
	Dwarf_Off ab;
	Dwarf_Sig8 sig;
	struct rows *v = calloc(1, sizeof(*v));

	REQUIRE(v);
	REQUIRE(fd >= 0 && fd2 >= 0);
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	sec = e ? section(e, ".debug_line", &size) : NULL;
	if (sec) {
		strs.line_str = section(e, ".debug_line_str", &strs.line_str_size);
		strs.str = section(e, ".debug_str", &strs.str_size);
	}
	if (!sec || dwarf_init_b(fd2, DW_DLC_READ, DW_GROUPNUMBER_ANY, NULL, NULL, &dbg, &err) !=
			    DW_DLV_OK) {
		fprintf(stderr, "  %s: no DWARF lines\n", path);
		goto out;
	}
	while (dwarf_next_cu_header_d(dbg, 1, &hl, &ver, &ab, &asz, &lsz, &esz, &sig, &toff, &next,
				      &ct, &err) == DW_DLV_OK) {
		Dwarf_Die cu = NULL;
		Dwarf_Attribute at;
		Dwarf_Unsigned off, lver;
		Dwarf_Small tc;
		Dwarf_Line_Context lc;
		Dwarf_Line *ln;
		Dwarf_Signed nl = 0;
		unsigned myver = 0;
		long n;

		if (dwarf_siblingof_b(dbg, NULL, 1, &cu, &err) != DW_DLV_OK)
			continue;
		if (dwarf_attr(cu, DW_AT_stmt_list, &at, &err) != DW_DLV_OK ||
		    dwarf_global_formref(at, &off, &err) != DW_DLV_OK) {
			dwarf_dealloc_die(cu);
			continue;
		}
		/* the file table: our paths, libdwarf's */
		{
			struct all_paths ap = { NULL, 0 };
			char **lf = NULL, *cdir = NULL;
			Dwarf_Signed nlf = 0;
			Dwarf_Attribute ca;
			long nf;

			if (dwarf_attr(cu, DW_AT_comp_dir, &ca, &err) == DW_DLV_OK) {
				if (dwarf_formstring(ca, &cdir, &err) != DW_DLV_OK)
					cdir = NULL;
				dwarf_dealloc_attribute(ca);
			}
			nf = op_dwarf_line_files(sec, size, off, false, &strs, cdir, take_all, &ap);
			if (dwarf_srcfiles(cu, &lf, &nlf, &err) != DW_DLV_OK)
				nlf = 0;
			if (nf != (long)nlf) {
				bad_files++;
			} else {
				for (Dwarf_Signed i = 0; i < nlf; i++)
					if (strcmp(ap.p[i], lf[i]))
						bad_files++;
			}
			files += (size_t)nlf;
			for (Dwarf_Signed i = 0; i < nlf; i++)
				dwarf_dealloc(dbg, lf[i], DW_DLA_STRING);
			if (lf)
				dwarf_dealloc(dbg, lf, DW_DLA_LIST);
			for (size_t i = 0; i < ap.n; i++)
				free(ap.p[i]);
			free(ap.p);
		}
		v->n = 0;
		n = op_dwarf_line_rows(sec, size, off, false, &myver, take, v);
		if (dwarf_srclines_b(cu, &lver, &tc, &lc, &err) != DW_DLV_OK) {
			dwarf_dealloc_die(cu);
			continue;
		}
		dwarf_srclines_from_linecontext(lc, &ln, &nl, &err);
		cus++;
		if (n != (long)nl || myver != lver) {
			bad++;
		} else {
			for (Dwarf_Signed i = 0; i < nl; i++) {
				Dwarf_Addr a = 0;
				Dwarf_Unsigned l = 0, f = 0;
				Dwarf_Bool es = 0;
				const struct op_line_row *r = &v->r[i];

				dwarf_lineaddr(ln[i], &a, &err);
				dwarf_lineno(ln[i], &l, &err);
				dwarf_line_srcfileno(ln[i], &f, &err);
				dwarf_lineendsequence(ln[i], &es, &err);
				/* libdwarf before 0.5 starts a DWARF 5 file register at 0, the
				 * standard at 1 */
				if (r->addr != a || r->end_sequence != !!es ||
				    (!es &&
				     (r->line != l ||
				      (r->file != f && !(lver == 5 && f == 0 && r->file == 1))))) {
					bad++;
					break;
				}
			}
			total += v->n;
		}
		dwarf_srclines_dealloc_b(lc);
		dwarf_dealloc_die(cu);
	}
	fprintf(stderr,
		"  %s: %zu CUs, %zu rows compared, %zu CUs differ; %zu file paths compared, %zu "
		"differ\n",
		path, cus, total, bad, files, bad_files);
	CHECK(cus > 0);
	CHECK_EQ(bad, 0);
	CHECK(files >= cus);
	CHECK_EQ(bad_files, 0);
out:
	if (dbg)
		dwarf_finish(dbg, &err);
	if (e)
		elf_end(e);
	close(fd);
	close(fd2);
	rows_free(v);
	return total;
}

int main(void)
{
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	glob_t g;

	test_programs();
	test_broken();
	test_files_v4();
	test_files_v5();
	test_files_broken();
	REQUIRE(n > 0);
	self[n] = '\0';
	CHECK(against_libdwarf(self) > 1000);
	/* the two largest separate debug files (libc's, from libc6-dbg, DWARF 5 with
	 * compressed sections) and python builds with full DWARF, when here */
	if (glob("/usr/lib/debug/.build-id/*/*.debug", 0, NULL, &g) == 0) {
		const char *big[2] = { NULL, NULL };
		off_t sz[2] = { 0, 0 };

		for (size_t i = 0; i < g.gl_pathc; i++) {
			struct stat st;

			if (stat(g.gl_pathv[i], &st) || st.st_size <= sz[1])
				continue;
			if (st.st_size > sz[0]) {
				big[1] = big[0], sz[1] = sz[0];
				big[0] = g.gl_pathv[i], sz[0] = st.st_size;
			} else {
				big[1] = g.gl_pathv[i], sz[1] = st.st_size;
			}
		}
		for (size_t i = 0; i < 2; i++)
			if (big[i])
				against_libdwarf(big[i]);
		globfree(&g);
	}
	if (glob("/root/.pyenv/versions/3.1[13]*/lib/libpython3.*.so.1.0", 0, NULL, &g) == 0) {
		for (size_t i = 0; i < g.gl_pathc; i++)
			against_libdwarf(g.gl_pathv[i]);
		globfree(&g);
	}
	return check_done();
}

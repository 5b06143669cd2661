// SPDX-License-Identifier: Apache-2.0
/*
 * The line-program decoder (lib/symbol/dwarf_line.c): hand-assembled programs in DWARF 2, 4
 * and 5 headers with every opcode, broken ones (a name and a row too many would be a wrong
 * line in a profile), and every CU of real binaries against libdwarf's own decoder
 * (dwarf_srclines_b) as an independent reader: this binary (built with -g by the Makefile),
 * libc's debug file and the pyenv libpythons when the machine has them.
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

static const uint8_t *debug_line(Elf *e, size_t *size)
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
		    strcmp(nm, ".debug_line"))
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

/* Every CU of @path: our rows equal libdwarf's. Returns the number of rows compared. */
static size_t against_libdwarf(const char *path)
{
	int fd = open(path, O_RDONLY), fd2 = open(path, O_RDONLY);
	Elf *e;
	const uint8_t *sec;
	size_t size = 0, total = 0, cus = 0, bad = 0;
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
	sec = e ? debug_line(e, &size) : NULL;
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
	fprintf(stderr, "  %s: %zu CUs, %zu rows compared, %zu CUs differ\n", path, cus, total,
		bad);
	CHECK(cus > 0);
	CHECK_EQ(bad, 0);
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

// SPDX-License-Identifier: Apache-2.0
/*
 * Fuzz the DWARF line-program decoder (lib/symbol/dwarf_line.c) on a .debug_line section as
 * a binary on the host holds it: the first 2 bytes pick the unit's offset, byte order and
 * compilation directory, the rest is the section, which also stands for .debug_line_str and
 * .debug_str (offsets of DWARF 5 paths land in it). Invariants: no crash, no sanitizer
 * report (leaks included), every row of a unit comes from its bytes (no more rows than
 * bytes), a file table gives paths no longer than a directory, the compilation directory
 * and a name together could be, all of them or none, and a stop asked by a callback is kept.
 */
#include "fuzz.h"
#include "symbol/dwarf_line.h"

struct count {
	long rows;
	long stop_at;
};

static int row(void *ctx, const struct op_line_row *r)
{
	struct count *c = ctx;

	(void)r;
	c->rows++;
	return c->stop_at && c->rows >= c->stop_at;
}

struct paths {
	long n;
	long stop_at;
	size_t max_len;
};

static int path(void *ctx, const char *p)
{
	struct paths *c = ctx;

	FUZZ_ASSERT(p && strlen(p) <= c->max_len);
	c->n++;
	return c->stop_at && c->n >= c->stop_at;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	uint64_t sel = fuzz_take(&in, 2);
	struct count c = { 0, 0 };
	unsigned ver;
	long n;

	/* offset: the first unit half the time, else anywhere in the section */
	uint64_t off = (sel & 1) || !in.n ? 0 : (sel >> 2) % in.n;
	bool msb = sel & 2;

	n = op_dwarf_line_rows(in.p, in.n, off, msb, &ver, row, &c);
	FUZZ_ASSERT(n == -1 || (n == c.rows && (size_t)n <= in.n));
	FUZZ_ASSERT(n == -1 || (ver >= 2 && ver <= 5));
	if (n > 1) {
		c = (struct count){ 0, n / 2 };
		FUZZ_ASSERT(op_dwarf_line_rows(in.p, in.n, off, msb, &ver, row, &c) == n / 2);
	}

	/* the header's file table: strings of the section itself and a compilation directory */
	{
		static const char *const dirs[4] = { NULL, "", "/build", "rel/dir/" };
		const char *cdir = dirs[(sel >> 14) & 3];
		const struct op_line_strs strs = { in.p, in.n, in.p, in.n };
		struct paths p = { 0, 0, (cdir ? strlen(cdir) : 0) + 2 * in.n + 2 };
		long nf = op_dwarf_line_files(in.p, in.n, off, msb, &strs, cdir, path, &p);

		FUZZ_ASSERT(nf == -1 ? p.n == 0 : nf == p.n);
		/* a table read means a header read: the rows' decoder accepts it too */
		FUZZ_ASSERT(nf == -1 || n != -1);
		if (nf > 1) {
			p = (struct paths){ 0, nf / 2, p.max_len };
			FUZZ_ASSERT(op_dwarf_line_files(in.p, in.n, off, msb, &strs, cdir, path,
							&p) == nf / 2);
		}
	}
	return 0;
}

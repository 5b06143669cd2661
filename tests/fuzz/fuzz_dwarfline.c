// SPDX-License-Identifier: Apache-2.0
/*
 * Fuzz the DWARF line-program decoder (lib/symbol/dwarf_line.c) on a .debug_line section as
 * a binary on the host holds it: the first 2 bytes pick the unit's offset and byte order,
 * the rest is the section. Invariants: no crash, no sanitizer report, every row of a unit
 * comes from its bytes (no more rows than bytes), and a stop asked by the callback is kept.
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
	return 0;
}

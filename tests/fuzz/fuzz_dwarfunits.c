// SPDX-License-Identifier: Apache-2.0
/*
 * Fuzz the unit, address-range and abbreviation scanners (lib/symbol/dwarf_units.c) that
 * decide whether a file's DWARF is read one unit at a time: the first byte picks the byte
 * order, the rest is the section (.debug_info, .debug_aranges and .debug_abbrev all read the
 * same bytes). Invariants: no crash, no sanitizer report (leaks included); the units tile the
 * section from its start, each with its first DIE inside it; every range is non-empty and
 * belongs to a set that was announced; a stop asked by the callback is kept.
 */
#include "fuzz.h"
#include "symbol/dwarf_units.h"

struct ranges {
	long calls, sets, stop_at;
	bool announced;
};

static int range(void *ctx, uint64_t lo, uint64_t hi, uint64_t unit_off)
{
	struct ranges *r = ctx;

	(void)unit_off;
	if (lo == 0 && hi == 0) {
		r->sets++;
		r->announced = true;
	} else {
		FUZZ_ASSERT(lo < hi && r->announced);
	}
	r->calls++;
	return r->stop_at && r->calls >= r->stop_at;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	bool msb = fuzz_take(&in, 1) & 1;
	struct op_dwarf_unit *units;
	struct ranges r = { 0 };
	long n = op_dwarf_units(in.p, in.n, msb, &units);
	uint64_t at = 0;
	int refs;

	FUZZ_ASSERT(n == -1 ? units == NULL : n >= 0);
	for (long i = 0; i < n; i++) {
		FUZZ_ASSERT(units[i].off == at && units[i].len > units[i].die_off);
		FUZZ_ASSERT(units[i].version >= 2 && units[i].version <= 5);
		at += units[i].len;
	}
	FUZZ_ASSERT(n == -1 || at == in.n);
	free(units);

	n = op_dwarf_aranges(in.p, in.n, msb, range, &r);
	FUZZ_ASSERT(n == -1 || n == r.sets);
	if (r.calls > 1) {
		long all = r.calls;

		r = (struct ranges){ .stop_at = all / 2 };
		op_dwarf_aranges(in.p, in.n, msb, range, &r);
		FUZZ_ASSERT(r.calls == all / 2);
	}

	refs = op_dwarf_abbrev_refs_across(in.p, in.n);
	FUZZ_ASSERT(refs >= -1 && refs <= 1);
	return 0;
}

// SPDX-License-Identifier: Apache-2.0
/* Unit headers, address ranges and cross-unit forms, from the sections' bytes (dwarf_units.h). */
#include <libdwarf/dwarf.h>
#include <stdlib.h>

#include "util/cursor.h"
#include "symbol/dwarf_units.h"

#ifndef DW_FORM_GNU_ref_alt
#define DW_FORM_GNU_ref_alt 0x1f20
#endif

/* The unit length at @c (4 bytes, or 0xffffffff and 8): the length, *@osz its offset size. */
uint64_t op_dwarf_unit_length(struct op_cursor *c, size_t *osz)
{
	uint64_t len = op_rd_fixed(c, 4);

	*osz = 4;
	if (len == 0xffffffffu) {
		*osz = 8;
		len = op_rd_fixed(c, 8);
	} else if (len >= 0xfffffff0u) {
		c->bad = true; /* reserved */
	}
	return len;
}

long op_dwarf_units(const uint8_t *info, size_t size, bool msb, struct op_dwarf_unit **out)
{
	struct op_dwarf_unit *units = NULL, *nu;
	size_t n = 0, cap = 0, off = 0;

	*out = NULL;
	while (off < size) {
		struct op_cursor c = { info + off, info + size, msb, false };
		size_t osz, hdr;
		uint64_t len = op_dwarf_unit_length(&c, &osz);
		uint16_t version = (uint16_t)op_rd_fixed(&c, 2);

		if (c.bad || !len || len > (uint64_t)(c.end - c.p) + 2 || version < 2 ||
		    version > 5)
			goto bad;
		if (version == 5) {
			if (op_rd_fixed(&c, 1) != DW_UT_compile)
				goto bad;
			op_rd_fixed(&c, 1 + osz); /* address size, abbreviations offset */
		} else {
			op_rd_fixed(&c, osz + 1);
		}
		hdr = (size_t)(c.p - (info + off));
		len += osz == 8 ? 12 : 4; /* the whole unit, its length field included */
		if (c.bad || hdr >= len)
			goto bad;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			nu = realloc(units, cap * sizeof(*units));
			if (!nu)
				goto bad;
			units = nu;
		}
		units[n++] = (struct op_dwarf_unit){ off, len, (uint32_t)hdr, version };
		off += len;
	}
	*out = units;
	return (long)n;
bad:
	free(units);
	return -1;
}

long op_dwarf_aranges(const uint8_t *sec, size_t size, bool msb,
		      int (*fn)(void *ctx, uint64_t lo, uint64_t hi, uint64_t unit_off), void *ctx)
{
	size_t off = 0;
	long sets = 0;

	while (off < size) {
		struct op_cursor c = { sec + off, sec + size, msb, false };
		size_t osz, asz, hdr, tuple;
		uint64_t len = op_dwarf_unit_length(&c, &osz), unit_off;
		const uint8_t *end;

		if (c.bad || len > (uint64_t)(c.end - c.p))
			return -1;
		end = c.p + len;
		c.end = end;
		if (op_rd_fixed(&c, 2) != 2)
			return -1;
		unit_off = op_rd_fixed(&c, osz);
		asz = (size_t)op_rd_fixed(&c, 1);
		if (op_rd_fixed(&c, 1) != 0 || (asz != 4 && asz != 8) || c.bad)
			return -1;
		/* the tuples start at a multiple of twice the address size from the set's start */
		hdr = (size_t)(c.p - (sec + off));
		tuple = 2 * asz;
		hdr = (hdr + tuple - 1) / tuple * tuple;
		if (hdr > (size_t)(end - (sec + off)))
			return -1;
		c.p = sec + off + hdr;
		if (fn(ctx, 0, 0, unit_off)) /* the unit is listed, even with no code */
			return sets + 1;
		while ((size_t)(c.end - c.p) >= tuple) {
			uint64_t lo = op_rd_fixed(&c, asz), n = op_rd_fixed(&c, asz);

			if (!lo && !n)
				break;
			if (lo + n < lo)
				return -1;
			if (n && fn(ctx, lo, lo + n, unit_off))
				return sets + 1;
		}
		sets++;
		off = (size_t)(end - sec);
	}
	return sets;
}

int op_dwarf_abbrev_refs_across(const uint8_t *sec, size_t size)
{
	struct op_cursor c = { sec, sec + size, false, false };

	while (c.p < c.end) {
		if (!op_rd_uleb(&c))
			continue;   /* the end of one unit's table */
		op_rd_uleb(&c);	    /* tag */
		op_rd_fixed(&c, 1); /* has children */
		for (;;) {
			uint64_t at = op_rd_uleb(&c), form = op_rd_uleb(&c);

			if (c.bad)
				return -1;
			if (!at && !form)
				break;
			if (form == DW_FORM_ref_addr || form == DW_FORM_ref_sig8 ||
			    form == DW_FORM_GNU_ref_alt || form == DW_FORM_indirect)
				return 1;
			if (form == DW_FORM_implicit_const)
				op_rd_sleb(&c);
		}
	}
	return c.bad ? -1 : 0;
}

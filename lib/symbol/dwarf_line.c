// SPDX-License-Identifier: Apache-2.0
/*
 * DWARF line-program decoder (DWARF 5 section 6.2; versions 2-4 differ only in the header).
 * Every read is bounds-checked against the unit: the input is a file from the host.
 */
#include "symbol/dwarf_line.h"

#include <string.h>

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

long op_dwarf_line_rows(const uint8_t *sec, size_t size, uint64_t off, bool msb,
			unsigned *version_out, int (*fn)(void *ctx, const struct op_line_row *row),
			void *ctx)
{
	struct op_cursor c = { .msb = msb };
	uint64_t len, hlen;
	unsigned osz = 4, version, min_inst, opcode_base, line_range;
	int line_base;
	const uint8_t *std_len, *unit_end;
	struct regs r;
	long n = 0;

	*version_out = 0;
	if (!sec || off >= size)
		return -1;
	c.p = sec + off;
	c.end = sec + size;
	len = op_rd_fixed(&c, 4);
	if (len == 0xffffffffu) {
		osz = 8;
		len = op_rd_fixed(&c, 8);
	} else if (len >= 0xfffffff0u) {
		return -1;
	}
	if (c.bad || len > (uint64_t)(c.end - c.p))
		return -1;
	unit_end = c.p + len;
	c.end = unit_end;
	version = (unsigned)op_rd_fixed(&c, 2);
	if (c.bad || version < 2 || version > 5)
		return -1;
	*version_out = version;
	if (version >= 5)
		op_rd_fixed(&c, 2); /* address_size, segment_selector_size */
	hlen = op_rd_fixed(&c, osz);
	if (c.bad || hlen > (uint64_t)(c.end - c.p))
		return -1;
	{
		/* the header's fields up to the opcode lengths, read within the header */
		struct op_cursor h = { .p = c.p, .end = c.p + hlen, .msb = msb };

		c.p += hlen; /* the program */
		min_inst = (unsigned)op_rd_fixed(&h, 1);
		if (version >= 4)
			op_rd_fixed(&h, 1); /* maximum_operations_per_instruction: VLIW only */
		op_rd_fixed(&h, 1);	    /* default_is_stmt */
		line_base = (int8_t)op_rd_fixed(&h, 1);
		line_range = (unsigned)op_rd_fixed(&h, 1);
		opcode_base = (unsigned)op_rd_fixed(&h, 1);
		if (h.bad || line_range == 0 || opcode_base == 0 ||
		    (size_t)(h.end - h.p) < opcode_base - 1)
			return -1;
		std_len = h.p; /* std_len[op - 1]: operands of standard opcode op */
	}

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

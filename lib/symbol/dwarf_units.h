/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What it takes to open one compile unit alone: the unit headers of .debug_info, the address
 * ranges of .debug_aranges and whether .debug_abbrev lets a DIE refer outside its own unit,
 * decoded straight from the sections' bytes.
 *
 * libdwarf 20210528 reaches a unit by building a context for every unit before it (and
 * reading each one's abbreviations): libc's debug file has 4,126 units, and indexing them
 * was most of its first symbolization (18 ms with the sections already plain) and 4 MiB
 * resident while its instance stayed open. A file whose compile units are all in
 * .debug_aranges and never refer across units is read one unit at a time instead
 * (symbol/dwarf.c).
 */
#ifndef OTELPROF_SYMBOL_DWARF_UNITS_H
#define OTELPROF_SYMBOL_DWARF_UNITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct op_cursor;

/*
 * A unit's initial length (every DWARF section of units): 4 bytes, or 0xffffffff and 8 more
 * (the 64-bit format), *@osz the offset size it implies (4 or 8); a reserved value
 * (0xfffffff0-0xfffffffe) or a read past the end sets the cursor's bad.
 */
uint64_t op_dwarf_unit_length(struct op_cursor *c, size_t *osz);

struct op_dwarf_unit {
	uint64_t off;	  /* of its header in .debug_info */
	uint64_t len;	  /* header and DIEs */
	uint32_t die_off; /* its first DIE, from @off */
	uint16_t version;
};

/*
 * The units of .debug_info (@size bytes, @msb: big-endian) in section order, into *@out
 * (malloc'd, the caller frees). Returns their number, or -1 when a header is malformed, a unit
 * is not a compile unit (DWARF 5 type, partial or skeleton units are reached through
 * references from other units) or memory ran out; *@out is NULL then.
 */
long op_dwarf_units(const uint8_t *info, size_t size, bool msb, struct op_dwarf_unit **out);

/*
 * Call @fn for every address range [lo, hi) of .debug_aranges with the offset of its unit in
 * .debug_info, until @fn returns nonzero: first once per set with lo == hi == 0 (its unit is
 * listed, code or not), then for each of its ranges; empty ones are skipped. Returns the
 * number of sets read, or -1 when one is malformed (a version other than 2, a segment
 * selector, an address size other than 4 or 8, a range that wraps around, a set past the
 * section).
 */
long op_dwarf_aranges(const uint8_t *sec, size_t size, bool msb,
		      int (*fn)(void *ctx, uint64_t lo, uint64_t hi, uint64_t unit_off), void *ctx);

/*
 * Whether an attribute in .debug_abbrev has a form that can refer to a DIE of another unit
 * (DW_FORM_ref_addr, DW_FORM_ref_sig8, DW_FORM_GNU_ref_alt, or DW_FORM_indirect, which could
 * be any of them): 1 if one does, 0 if none, -1 when the section is malformed.
 */
int op_dwarf_abbrev_refs_across(const uint8_t *sec, size_t size);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The rows of one DWARF line program (.debug_line, versions 2-5), decoded straight from the
 * section's bytes: address, line, file register and end of sequence, nothing else.
 *
 * libdwarf's dwarf_srclines_b() builds a full row object per row (every register, an
 * allocation each, tracked in its tree): on python3.11's CUs it was half of a CU parse, the
 * agent's largest first-sight cost. The file table stays libdwarf's (dwarf_srcfiles()), read
 * from the same header.
 */
#ifndef OTELPROF_SYMBOL_DWARF_LINE_H
#define OTELPROF_SYMBOL_DWARF_LINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct op_line_row {
	uint64_t addr;
	uint64_t file; /* the file register as the program set it (1 at a sequence's start) */
	uint32_t line;
	bool end_sequence;
};

/*
 * Call @fn for each row of the line program at @off in @sec (@size bytes; @msb: big-endian),
 * in program order, until @fn returns nonzero; *@version: the program's DWARF version (files
 * are numbered from 1 before version 5, from 0 since). Returns the number of rows, or -1 when the
 * header is malformed (rows of a program cut short by corruption are still given: the
 * decoding stops at the first byte past the unit).
 */
long op_dwarf_line_rows(const uint8_t *sec, size_t size, uint64_t off, bool msb, unsigned *version,
			int (*fn)(void *ctx, const struct op_line_row *row), void *ctx);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The rows of one DWARF line program (.debug_line, versions 2-5), decoded straight from the
 * section's bytes: address, line, file register and end of sequence, nothing else; and the
 * paths of the files its header names.
 *
 * libdwarf's dwarf_srclines_b() builds a full row object per row (every register, an
 * allocation each, tracked in its tree): on python3.11's CUs it was half of a CU parse, the
 * agent's largest first-sight cost. Its dwarf_srcfiles() leaks what it allocated when it fails
 * on a damaged header unless libdwarf tracks every allocation, which costs more than the file
 * table is worth: the table is read here too, its paths joined as dwarf_srcfiles() joins them.
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

/* The string sections a DWARF 5 file table may point into (NULL, 0: the file has none). */
struct op_line_strs {
	const uint8_t *line_str; /* .debug_line_str, for DW_FORM_line_strp */
	size_t line_str_size;
	const uint8_t *str; /* .debug_str, for DW_FORM_strp */
	size_t str_size;
};

/*
 * Call @fn with the path of each file in the header of the line program at @off, in table
 * order (the first is file 1 before DWARF 5, file 0 since), until @fn returns nonzero. A path
 * is joined as libdwarf 20210528's dwarf_srcfiles() joins it: the file's directory and, when
 * that is relative, @comp_dir (the CU's DW_AT_comp_dir; NULL: none) before it. @path is valid
 * during the call only. Returns the number of calls made, or -1 when the header or its
 * tables are malformed (a string outside its section, a directory index out of range, a
 * path of a form other than string, line_strp or strp) or memory ran out: then @fn was not
 * called.
 */
long op_dwarf_line_files(const uint8_t *sec, size_t size, uint64_t off, bool msb,
			 const struct op_line_strs *strs, const char *comp_dir,
			 int (*fn)(void *ctx, const char *path), void *ctx);

#endif

// SPDX-License-Identifier: Apache-2.0
/*
 * The decoders of lib/runtime/python/linetable.c against CPython itself: for one function
 * (below, as Python source) compiled by each of 3.8-3.13, its line table and the line CPython
 * gives every instruction offset (dis.findlinestarts up to 3.9, co_lines() from 3.10),
 * generated on this machine by running that function's definition under each pyenv Python;
 * plus UTF-8 of each str kind and versions from Py_Version and file names.
 *
 *   def sample(a, b):           # line 2 in the generating script
 *       x = a + b
 *       if x > 3:
 *           y = [i * 2
 *                for i in range(x)]
 *       else:
 *           y = None
 *
 *       try:
 *           z = x / b
 *       except ZeroDivisionError:
 *           z = 0
 *       return (x,
 *               y, z)
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "bpf/types.h"
#include "check.h"
#include "runtime/python/python.h"

struct lt_case {
	int minor;
	int64_t first;
	size_t len;
	const uint8_t *tab;
	size_t n; /* (offset, line) pairs */
	const int64_t *want;
};

static const struct lt_case cases[] = {
	{ 8, 2, 28, (const uint8_t[]){ 0, 1, 8,	 1, 8,	1, 6,  1, 6, 255, 8, 3, 4, 2,
				       2, 1, 12, 1, 14, 1, 10, 1, 2, 1,	  2, 0, 2, 255 },
	  44,
	  (const int64_t[]){ 0,	 3,  2,	 3,  4,	 3,  6,	 3,  8,	 4,  10, 4,  12, 4,  14, 4,  16, 5,
			     18, 5,  20, 5,  22, 6,  24, 6,  26, 6,  28, 5,  30, 5,  32, 5,  34, 5,
			     36, 8,  38, 8,  40, 10, 42, 11, 44, 11, 46, 11, 48, 11, 50, 11, 52, 11,
			     54, 12, 56, 12, 58, 12, 60, 12, 62, 12, 64, 12, 66, 12, 68, 13, 70, 13,
			     72, 13, 74, 13, 76, 13, 78, 14, 80, 15, 82, 15, 84, 14, 86, 14 } },
	{ 9, 2, 26, (const uint8_t[]){ 0, 1, 8, 1,  8, 1,  6, 1,  6, 255, 8, 3, 4,
				       2, 2, 1, 12, 1, 12, 1, 10, 1, 2,	  1, 4, 255 },
	  43,
	  (const int64_t[]){ 0,	 3,  2,	 3,  4,	 3,  6,	 3,  8,	 4,  10, 4,  12, 4,  14, 4,  16, 5,
			     18, 5,  20, 5,  22, 6,  24, 6,  26, 6,  28, 5,  30, 5,  32, 5,  34, 5,
			     36, 8,  38, 8,  40, 10, 42, 11, 44, 11, 46, 11, 48, 11, 50, 11, 52, 11,
			     54, 12, 56, 12, 58, 12, 60, 12, 62, 12, 64, 12, 66, 13, 68, 13, 70, 13,
			     72, 13, 74, 13, 76, 14, 78, 15, 80, 15, 82, 14, 84, 14 } },
	{ 10, 2, 28, (const uint8_t[]){ 8,  1, 8,  1, 6, 1, 6, 1,   8, 255, 4, 3, 2, 2,
					12, 1, 12, 1, 8, 1, 2, 255, 2, 2,   4, 1, 4, 255 },
	  43,
	  (const int64_t[]){ 0,	 3,  2,	 3,  4,	 3,  6,	 3,  8,	 4,  10, 4,  12, 4,  14, 4,  16, 5,
			     18, 5,  20, 5,  22, 6,  24, 6,  26, 6,  28, 5,  30, 5,  32, 5,  34, 5,
			     36, 8,  38, 8,  40, 10, 42, 11, 44, 11, 46, 11, 48, 11, 50, 11, 52, 11,
			     54, 12, 56, 12, 58, 12, 60, 12, 62, 12, 64, 12, 66, 13, 68, 13, 70, 13,
			     72, 13, 74, 12, 76, 14, 78, 15, 80, 15, 82, 14, 84, 14 } },
	{ 11, 2, 135,
	  (const uint8_t[]){ 128, 0,   216, 8,	 9,   136, 65,	137, 5,	  128, 65,  216, 7,   8,
			     136, 49,  130, 117, 128, 117, 240, 2,   1,	  13,  32,  240, 0,   1,
			     13,  32,  221, 22,	 27,  152, 65,	145, 104, 148, 104, 240, 3,   1,
			     13,  32,  241, 0,	 1,   13,  32,	244, 0,	  1,   13,  32,	 136, 1,
			     136, 1,   240, 6,	 0,   13,  17,	136, 1,	  240, 4,   3,	 5,   14,
			     216, 12,  13,  144, 1,   137, 69,	136, 1,	  136, 1,   248, 221, 11,
			     28,  240, 0,   1,	 5,   14,  240, 0,   1,	  5,   14,  240, 0,   1,
			     5,	  14,  216, 12,	 13,  136, 1,	136, 1,	  136, 1,   240, 3,   1,
			     5,	  14,  248, 248, 248, 224, 12,	13,  216, 12,  13,  136, 113, 240,
			     3,	  1,   12,  18,	 240, 0,   1,	5,   18 },
	  66,
	  (const int64_t[]){ 0,	  2,  2,   3,  4,   3,	6,   3,	 8,   3,  10,  3,  12,	4,  14,	 4,
			     16,  4,  18,  4,  20,  4,	22,  4,	 24,  5,  26,  5,  28,	6,  30,	 6,
			     32,  6,  34,  6,  36,  6,	38,  6,	 40,  6,  42,  6,  44,	6,  46,	 6,
			     48,  6,  50,  6,  52,  6,	54,  6,	 56,  5,  58,  5,  60,	5,  62,	 5,
			     64,  5,  66,  5,  68,  5,	70,  5,	 72,  5,  74,  5,  76,	8,  78,	 8,
			     80,  10, 82,  11, 84,  11, 86,  11, 88,  11, 90,  11, 92,	11, 96,	 12,
			     98,  12, 100, 12, 102, 12, 104, 12, 106, 12, 108, 12, 110, 12, 112, 12,
			     114, 13, 116, 13, 118, 13, 120, 13, 122, 12, 130, 14, 132, 15, 134, 15,
			     136, 14, 138, 14 } },
	{ 12, 2, 123,
	  (const uint8_t[]){ 128, 0,   216, 8,	 9,   136, 65,	137, 5,	 128, 65,  216, 7,   8,
			     136, 49,  130, 117, 228, 22,  27,	152, 65, 147, 104, 246, 3,   1,
			     13,  32,  216, 17,	 18,  240, 3,	0,   14, 15,  144, 17,	139, 85,
			     240, 0,   1,   13,	 32,  136, 1,	241, 0,	 1,   13,  32,	240, 6,
			     0,	  13,  17,  136, 1,   240, 4,	3,   5,	 14,  216, 12,	13,  144,
			     1,	  137, 69,  136, 1,   240, 6,	0,   13, 14,  216, 12,	13,  136,
			     113, 240, 3,   1,	 12,  18,  240, 0,   1,	 5,   18,  249, 242, 19,
			     1,	  13,  32,  248, 244, 14,  0,	12,  29, 242, 0,   1,	5,   14,
			     216, 12,  13,  138, 1,   240, 3,	1,   5,	 14,  250 },
	  68,
	  (const int64_t[]){ 0,	  2,  2,   3,  4,   3,	6,   3,	 8,   3,  10,  3,  12,	4,  14,	 4,
			     16,  4,  18,  4,  20,  4,	22,  6,	 24,  6,  26,  6,  28,	6,  30,	 6,
			     32,  6,  34,  6,  36,  6,	38,  6,	 40,  6,  42,  5,  44,	5,  46,	 5,
			     48,  5,  50,  5,  52,  5,	54,  5,	 56,  6,  58,  5,  60,	5,  62,	 5,
			     64,  5,  66,  5,  68,  5,	70,  5,	 72,  5,  74,  5,  76,	5,  78,	 8,
			     80,  8,  82,  10, 84,  11, 86,  11, 88,  11, 90,  11, 92,	11, 94,	 14,
			     96,  15, 98,  15, 100, 14, 102, 14, 108, 5,  110, 5,  112, 5,  116, 12,
			     118, 12, 120, 12, 122, 12, 124, 12, 126, 12, 128, 12, 130, 12, 132, 13,
			     134, 13, 136, 13, 138, 13, 140, 12 } },
	{ 13, 2, 122,
	  (const uint8_t[]){ 128, 0,   216, 8,	 9,   137, 5,	128, 65,  216, 7,   8,	 136, 49,
			     131, 117, 228, 22,	 27,  152, 65,	148, 104, 243, 3,   1,	 13,  32,
			     217, 22,  30,  144, 17,  240, 3,	0,   14,  15,  144, 17,	 140, 85,
			     217, 22,  30,  240, 3,   0,   9,	10,  240, 0,   1,   13,	 32,  136,
			     1,	  240, 6,   0,	 13,  17,  136, 1,   240, 4,   3,   5,	 14,  216,
			     12,  13,  137, 69,	 136, 1,   240, 6,   0,	  13,  14,  216, 12,  13,
			     240, 3,   1,   12,	 18,  240, 0,	1,   5,	  18,  249, 242, 19,  1,
			     13,  32,  248, 244, 14,  0,   12,	29,  243, 0,   1,   5,	 14,  216,
			     12,  13,  138, 1,	 240, 3,   1,	5,   14,  250 },
	  69,
	  (const int64_t[]){ 0,	  2,  2,   3,  4,   3,	6,   3,	 8,   3,  10,  4,  12,	4,  14,	 4,
			     16,  4,  18,  4,  20,  4,	22,  6,	 24,  6,  26,  6,  28,	6,  30,	 6,
			     32,  6,  34,  6,  36,  6,	38,  6,	 40,  6,  42,  6,  44,	5,  46,	 5,
			     48,  5,  50,  5,  52,  6,	54,  6,	 56,  6,  58,  5,  60,	5,  62,	 5,
			     64,  5,  66,  5,  68,  5,	70,  5,	 72,  6,  74,  6,  76,	5,  78,	 5,
			     80,  5,  82,  8,  84,  8,	86,  10, 88,  11, 90,  11, 92,	11, 94,	 11,
			     96,  14, 98,  15, 100, 14, 102, 14, 108, 5,  110, 5,  112, 5,  116, 12,
			     118, 12, 120, 12, 122, 12, 124, 12, 126, 12, 128, 12, 130, 12, 132, 12,
			     134, 13, 136, 13, 138, 13, 140, 13, 142, 12 } },
};

static void check_tables(void)
{
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		const struct lt_case *k = &cases[c];
		int bad = 0;

		for (size_t i = 0; i < k->n; i++) {
			int64_t got =
				op_py_line(k->minor, k->tab, k->len, k->first, k->want[2 * i]);

			if (got != k->want[2 * i + 1] && bad++ < 3)
				fprintf(stderr, "3.%d: offset %lld: line %lld, CPython says %lld\n",
					k->minor, (long long)k->want[2 * i], (long long)got,
					(long long)k->want[2 * i + 1]);
		}
		CHECK_EQ(bad, 0);
		/* before the first instruction (a 3.11+ frame not started): the first line */
		CHECK_EQ(op_py_line(k->minor, k->tab, k->len, k->first, -2), k->first);
	}
}

static void check_strings(void)
{
	char out[32];
	const uint8_t latin1[] = { 'c', 0xe9 };		   /* "cé" */
	const uint8_t ucs2[] = { 0x3b, 0x04, 'x', 0 };	   /* "лx" */
	const uint8_t ucs4[] = { 0x00, 0xf6, 0x01, 0x00 }; /* U+1F600 */

	CHECK_EQ(op_py_utf8(latin1, 2, 1, out, sizeof(out)), 3);
	CHECK_STR(out, "c\xc3\xa9");
	CHECK_EQ(op_py_utf8(ucs2, 2, 2, out, sizeof(out)), 3);
	CHECK_STR(out, "\xd0\xbbx");
	CHECK_EQ(op_py_utf8(ucs4, 1, 4, out, sizeof(out)), 4);
	CHECK_STR(out, "\xf0\x9f\x98\x80");
	CHECK_EQ(op_py_utf8(ucs4, 1, 4, out, 4), 0); /* no room for the whole character */
	CHECK_STR(out, "");
	CHECK_EQ(op_py_utf8(latin1, 2, 3, out, sizeof(out)), -1);
}

static void check_versions(void)
{
	CHECK_EQ(op_py_version_hex(0x030b02f0), 311);
	CHECK_EQ(op_py_version_hex(0x030d00f0), 313);
	CHECK_EQ(op_py_version_hex(0x7f000000), -1);
	CHECK_EQ(op_py_version_name("/root/.pyenv/versions/3.10.13/lib/libpython3.10.so.1.0"), 310);
	CHECK_EQ(op_py_version_name("/usr/lib/libpython2.7.so.1.0"), 207);
	CHECK_EQ(op_py_version_name("/usr/bin/python3.11"), 311);
	CHECK_EQ(op_py_version_name("/lib/libpython3.so"), -1);
	CHECK_EQ(op_py_version_name("/usr/bin/bash"), -1);
}

/* The marker frames bpf/runtime/python.bpf.h records where the chain stopped matching. */
static void check_markers(void)
{
	CHECK_STR(op_py_marker_name(OP_PY_MARKER_PAYLOAD, OP_PY_CHAIN_ENDED),
		  "[python: frame chain changed during the walk]");
	CHECK_STR(op_py_marker_name(OP_PY_MARKER_PAYLOAD, OP_PY_READ_FAILED),
		  "[python: frame chain unreadable]");
	/* a real frame: a code object's address and (first line, offset) */
	CHECK(op_py_marker_name(0x7f0012345678ull, OP_PY_CHAIN_ENDED) == NULL);
	CHECK(op_py_marker_name(0x7f0012345678ull, (12ull << 32) | 4) == NULL);
}

int main(void)
{
	check_tables();
	check_strings();
	check_versions();
	check_markers();
	return check_done();
}

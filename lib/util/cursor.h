/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A bounds-checked cursor over bytes from outside (unwind tables, DWARF): fixed-size
 * integers in the file's byte order and LEB128 numbers. A read past the end (or of more than
 * 8 bytes) sets bad and returns 0, and the cursor stays at the end: callers read on and
 * check bad once.
 */
#ifndef OTELPROF_UTIL_CURSOR_H
#define OTELPROF_UTIL_CURSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct op_cursor {
	const uint8_t *p, *end;
	bool msb; /* fixed-size values are big-endian */
	bool bad;
};

static inline uint64_t op_rd_fixed(struct op_cursor *c, size_t n)
{
	uint64_t v = 0;

	if (n > 8 || (size_t)(c->end - c->p) < n) {
		c->bad = true;
		c->p = c->end;
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)c->p[c->msb ? n - 1 - i : i] << (8 * i);
	c->p += n;
	return v;
}

/* The bits of a LEB128 number (beyond 64 dropped), its length in bits (@shift, a multiple
 * of 7) and its last byte; a number that runs past the end sets bad. */
static inline uint64_t op_rd_leb_bits(struct op_cursor *c, unsigned int *shift, uint8_t *last)
{
	uint64_t v = 0;

	*shift = 0;
	while (c->p < c->end) {
		uint8_t b = *c->p++;

		if (*shift < 64)
			v |= (uint64_t)(b & 0x7f) << *shift;
		*shift += 7;
		if (!(b & 0x80)) {
			*last = b;
			return v;
		}
	}
	c->bad = true;
	return 0;
}

static inline uint64_t op_rd_uleb(struct op_cursor *c)
{
	unsigned int shift;
	uint8_t last;

	return op_rd_leb_bits(c, &shift, &last);
}

static inline int64_t op_rd_sleb(struct op_cursor *c)
{
	unsigned int shift;
	uint8_t last = 0;
	uint64_t v = op_rd_leb_bits(c, &shift, &last);

	/* sign-extend in unsigned arithmetic: 1 << 63 would overflow int64_t */
	if (shift < 64 && (last & 0x40)) /* last stays 0 when the number ran out */
		v |= ~(uint64_t)0 << shift;
	return (int64_t)v;
}

#endif

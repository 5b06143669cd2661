// SPDX-License-Identifier: Apache-2.0
/*
 * Pure decoders of what a CPython process holds: the line tables of its code objects and the
 * characters of its str objects. Formats (facts from CPython's Objects/lnotab_notes.txt and
 * Objects/locations.md of each release):
 *   3.8, 3.9  co_lnotab: pairs (byte offset increment, signed line increment); the line of
 *             offset A is the first line plus the line increments of the pairs whose summed
 *             offset is <= A.
 *   3.10      co_linetable: pairs (byte length of a range, signed line delta); -128: the
 *             range has no line; the line is the first line plus the deltas so far.
 *   3.11+     the location table: entries of a header byte (bit 7 set; code = bits 3-6; length
 *             in 2-byte code units = bits 0-2, plus one) and the code's data. Codes 0-9: same
 *             line, one column byte; 10-12: line + code-10, two column bytes; 13: line delta
 *             as a signed varint, no columns; 14: signed varint line delta, then end line
 *             delta, column and end column as varints; 15: no location. Varints are 6-bit
 *             little-endian chunks with bit 6 as continuation; a signed one holds the sign in
 *             its lowest bit.
 */
#include <string.h>

#include "runtime/python/python.h"

static int64_t line_lnotab(const uint8_t *tab, size_t len, int64_t first, int64_t lasti)
{
	int64_t line = first, addr = 0;

	for (size_t i = 0; i + 1 < len; i += 2) {
		addr += tab[i];
		if (addr > lasti)
			break;
		line += (int8_t)tab[i + 1];
	}
	return line;
}

static int64_t line_310(const uint8_t *tab, size_t len, int64_t first, int64_t lasti)
{
	int64_t line = first, start = 0, end = 0, cur = first;

	for (size_t i = 0; i + 1 < len; i += 2) {
		int8_t d = (int8_t)tab[i + 1];

		start = end;
		end += tab[i];
		if (d == -128) {
			cur = -1;
		} else {
			line += d;
			cur = line;
		}
		if (lasti >= start && lasti < end)
			return cur < 0 ? first : cur;
	}
	return first;
}

/* A varint of the 3.11 location table at @p (< @end); advances *p. */
static uint64_t varint(const uint8_t **p, const uint8_t *end)
{
	uint64_t v = 0;
	unsigned int shift = 0;

	while (*p < end) {
		uint8_t b = *(*p)++;

		if (shift < 60)
			v |= (uint64_t)(b & 63) << shift;
		shift += 6;
		if (!(b & 64))
			break;
	}
	return v;
}

/* A corrupt table may hold any delta: add without signed overflow (the line is then wrong,
 * never undefined; it is only used as a number). */
static int64_t wrap_add(int64_t a, int64_t b)
{
	return (int64_t)((uint64_t)a + (uint64_t)b);
}

static int64_t svarint(const uint8_t **p, const uint8_t *end)
{
	uint64_t v = varint(p, end);

	return (v & 1) ? (int64_t)(0 - (v >> 1)) : (int64_t)(v >> 1);
}

static int64_t line_311(const uint8_t *tab, size_t len, int64_t first, int64_t lasti)
{
	const uint8_t *p = tab, *end = tab + len;
	int64_t line = first, unit = lasti / 2, addr = 0;

	while (p < end) {
		uint8_t h = *p++;
		int code = (h >> 3) & 15;
		int64_t n = (h & 7) + 1;
		bool has_line = true;

		if (!(h & 128))
			break; /* not an entry's start: a corrupt table */
		switch (code) {
		case 15:
			has_line = false;
			break;
		case 14:
			line = wrap_add(line, svarint(&p, end));
			varint(&p, end);
			varint(&p, end);
			varint(&p, end);
			break;
		case 13:
			line = wrap_add(line, svarint(&p, end));
			break;
		case 12:
		case 11:
		case 10:
			line = wrap_add(line, code - 10);
			p += (end - p) < 2 ? (end - p) : 2;
			break;
		default:
			p += p < end ? 1 : 0;
			break;
		}
		if (unit >= addr && unit < addr + n)
			return has_line ? line : first;
		addr += n;
	}
	return first;
}

int64_t op_py_line(int minor, const uint8_t *tab, size_t len, int64_t first, int64_t lasti)
{
	if (!tab || lasti < 0)
		return first;
	if (minor <= 9)
		return line_lnotab(tab, len, first, lasti);
	if (minor == 10)
		return line_310(tab, len, first, lasti);
	return line_311(tab, len, first, lasti);
}

int op_py_utf8(const uint8_t *chars, size_t n, int kind, char *out, size_t cap)
{
	size_t o = 0;

	if (kind != 1 && kind != 2 && kind != 4)
		return -1;
	if (!cap)
		return 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t c;
		char b[4];
		size_t k;

		if (kind == 1)
			c = chars[i];
		else if (kind == 2)
			c = (uint32_t)chars[2 * i] | (uint32_t)chars[2 * i + 1] << 8;
		else
			c = (uint32_t)chars[4 * i] | (uint32_t)chars[4 * i + 1] << 8 |
			    (uint32_t)chars[4 * i + 2] << 16 | (uint32_t)chars[4 * i + 3] << 24;
		if (!c || (c >= 0xd800 && c < 0xe000) || c > 0x10ffff)
			c = 0xfffd; /* NUL, a lone surrogate or not a code point: the replacement */
		if (c < 0x80) {
			b[0] = (char)c;
			k = 1;
		} else if (c < 0x800) {
			b[0] = (char)(0xc0 | c >> 6);
			b[1] = (char)(0x80 | (c & 63));
			k = 2;
		} else if (c < 0x10000) {
			b[0] = (char)(0xe0 | c >> 12);
			b[1] = (char)(0x80 | ((c >> 6) & 63));
			b[2] = (char)(0x80 | (c & 63));
			k = 3;
		} else {
			b[0] = (char)(0xf0 | c >> 18);
			b[1] = (char)(0x80 | ((c >> 12) & 63));
			b[2] = (char)(0x80 | ((c >> 6) & 63));
			b[3] = (char)(0x80 | (c & 63));
			k = 4;
		}
		if (o + k + 1 > cap)
			break;
		memcpy(out + o, b, k);
		o += k;
	}
	out[o] = 0;
	return (int)o;
}

int op_py_version_hex(uint32_t hex)
{
	int major = (int)(hex >> 24), minor = (int)((hex >> 16) & 0xff);

	if (major < 2 || major > 3)
		return -1;
	return major * 100 + minor;
}

int op_py_version_name(const char *path)
{
	const char *b = path ? strrchr(path, '/') : NULL;
	int major, minor = 0;

	b = b ? b + 1 : path;
	if (!b)
		return -1;
	if (!strncmp(b, "libpython", 9))
		b += 9;
	else if (!strncmp(b, "python", 6))
		b += 6;
	else
		return -1;
	if (b[0] < '2' || b[0] > '3' || b[1] != '.' || b[2] < '0' || b[2] > '9')
		return -1;
	major = b[0] - '0';
	for (b += 2; *b >= '0' && *b <= '9'; b++) {
		minor = minor * 10 + (*b - '0');
		if (minor >= 100)
			return -1; /* no such version: 3.100 would read as 4.00 */
	}
	return major * 100 + minor;
}

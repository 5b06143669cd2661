// SPDX-License-Identifier: Apache-2.0
/*
 * Fuzz the decoders of what a CPython process holds (lib/runtime/python/linetable.c): the
 * line tables of every version (co_lnotab, 3.10's co_linetable, the 3.11+ location table),
 * str contents of each kind to UTF-8, and the version from a file name. Input: a minor
 * version byte, a 4-byte instruction offset, a 2-byte first line, then the table (also used
 * as the characters and the name). Invariants: no crash; a negative offset gives the first
 * line; the output of op_py_utf8 is NUL-terminated within its buffer, of the length it
 * returns, and valid UTF-8.
 */
#include <string.h>

#include "fuzz.h"
#include "runtime/python/python.h"

static int utf8_valid(const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		size_t k = s[i] < 0x80	       ? 1
			   : (s[i] >> 5) == 6  ? 2
			   : (s[i] >> 4) == 14 ? 3
			   : (s[i] >> 3) == 30 ? 4
					       : 0;

		if (!k || i + k > n)
			return 0;
		for (size_t j = 1; j < k; j++)
			if ((s[i + j] & 0xc0) != 0x80)
				return 0;
		i += k;
	}
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char out[256], *name;
	int32_t lasti;
	int16_t first;
	int minor, n;

	if (size < 7)
		return 0;
	minor = 8 + data[0] % 6;
	memcpy(&lasti, data + 1, 4);
	memcpy(&first, data + 5, 2);
	data += 7;
	size -= 7;

	(void)op_py_line(minor, data, size, first, lasti);
	FUZZ_ASSERT(op_py_line(minor, data, size, first, -2) == first);
	FUZZ_ASSERT(op_py_line(minor, NULL, 0, first, lasti) == first);

	for (int kind = 1; kind <= 4; kind *= 2) {
		n = op_py_utf8(data, size / (size_t)kind, kind, out, sizeof(out));
		FUZZ_ASSERT(n >= 0 && (size_t)n < sizeof(out));
		FUZZ_ASSERT(strlen(out) == (size_t)n);
		FUZZ_ASSERT(utf8_valid((const unsigned char *)out, (size_t)n));
	}
	FUZZ_ASSERT(op_py_utf8(data, size, 3, out, sizeof(out)) == -1);

	name = malloc(size + 1);
	FUZZ_ASSERT(name);
	memcpy(name, data, size);
	name[size] = 0;
	n = op_py_version_name(name);
	FUZZ_ASSERT(n == -1 || (n >= 200 && n < 400));
	free(name);
	return 0;
}

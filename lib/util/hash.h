/* SPDX-License-Identifier: Apache-2.0 */
/* Hashing of bytes for the in-memory tables (interning, dictionaries); not for anything kept. */
#ifndef OTELPROF_HASH_H
#define OTELPROF_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The 64-bit finalizer of MurmurHash3: every input bit reaches every output bit. */
static inline uint64_t op_mix64(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return h;
}

/* A hash of @len bytes at @data, eight at a time. */
static inline uint64_t op_hash_bytes(const void *data, size_t len)
{
	const unsigned char *b = data;
	uint64_t h = 0xcbf29ce484222325ull ^ (len * 0x9e3779b97f4a7c15ull);
	uint64_t v;

	while (len >= 8) {
		memcpy(&v, b, 8);
		h = (h ^ (v * 0x87c37b91114253d5ull)) * 0x4cf5ad432745937full;
		h ^= h >> 29;
		b += 8;
		len -= 8;
	}
	v = 0;
	memcpy(&v, b, len);
	h = (h ^ (v * 0x87c37b91114253d5ull)) * 0x4cf5ad432745937full;
	return op_mix64(h);
}

#endif

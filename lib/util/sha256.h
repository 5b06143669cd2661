/* SPDX-License-Identifier: Apache-2.0 */
/* A compact SHA-256 (FIPS 180-4), used for the htlhash file id. */
#ifndef OTELPROF_SHA256_H
#define OTELPROF_SHA256_H

#include <stddef.h>
#include <stdint.h>

struct op_sha256 {
	uint32_t h[8];
	uint64_t len; /* bytes hashed so far */
	uint8_t buf[64];
	size_t n; /* bytes in buf */
};

void op_sha256_init(struct op_sha256 *s);
void op_sha256_update(struct op_sha256 *s, const void *data, size_t len);
void op_sha256_final(struct op_sha256 *s, uint8_t out[32]);
/* One-shot convenience. */
void op_sha256(const void *data, size_t len, uint8_t out[32]);

#endif

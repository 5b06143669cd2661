/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers shared by the libFuzzer targets (tests/fuzz/fuzz_*.c). A target aborts (and so
 * reports a finding) when an invariant a user would notice breaks: FUZZ_ASSERT prints the
 * expression and calls abort(); sanitizer reports do the same for memory errors and UB.
 */
#ifndef OTELPROF_FUZZ_H
#define OTELPROF_FUZZ_H

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#define FUZZ_ASSERT(expr)                                                                         \
	do {                                                                                      \
		if (!(expr)) {                                                                    \
			fprintf(stderr, "%s:%d: fuzz invariant broken: %s\n", __FILE__, __LINE__, \
				#expr);                                                           \
			abort();                                                                  \
		}                                                                                 \
	} while (0)

/* Consume bytes from the input as a little reader that yields zeros when exhausted. */
struct fuzz_in {
	const uint8_t *p;
	size_t n;
};

static inline uint64_t fuzz_take(struct fuzz_in *in, size_t bytes)
{
	uint64_t v = 0;

	for (size_t i = 0; i < bytes && i < 8; i++) {
		if (!in->n)
			break;
		v |= (uint64_t)in->p[0] << (8 * i);
		in->p++;
		in->n--;
	}
	return v;
}

/*
 * A path whose file holds exactly @data: one temp file per fuzzing process, rewritten for
 * every input (the library opens it by path, as it opens binaries of other processes).
 * Returns the path or NULL.
 */
static inline const char *fuzz_write_file(const uint8_t *data, size_t size)
{
	static char path[256];
	static int fd = -1;
	size_t off = 0;

	if (fd < 0) {
		const char *dir = getenv("TMPDIR");

		snprintf(path, sizeof(path), "%s/otelprof-fuzz-XXXXXX", dir ? dir : "/tmp");
		fd = mkstemp(path);
		if (fd < 0)
			return NULL;
	}
	if (ftruncate(fd, 0))
		return NULL;
	while (off < size) {
		ssize_t n = pwrite(fd, data + off, size - off, off);

		if (n <= 0)
			return NULL;
		off += n;
	}
	return path;
}

/* gunzip into a malloc()ed buffer; NULL if @in is not one complete gzip stream. */
static inline uint8_t *fuzz_gunzip(const uint8_t *in, size_t len, size_t *out_len)
{
	size_t cap = len * 4 + 4096;
	uint8_t *out = malloc(cap), *bigger;
	z_stream zs = { 0 };
	int rc;

	if (!out || len < 2 || in[0] != 0x1f || in[1] != 0x8b ||
	    inflateInit2(&zs, 15 + 16) != Z_OK) {
		free(out);
		return NULL;
	}
	zs.next_in = (Bytef *)in;
	zs.avail_in = len;
	for (;;) {
		zs.next_out = out + zs.total_out;
		zs.avail_out = cap - zs.total_out;
		rc = inflate(&zs, Z_NO_FLUSH);
		if (rc == Z_STREAM_END)
			break;
		if (rc != Z_OK && rc != Z_BUF_ERROR)
			goto fail;
		cap *= 2;
		bigger = realloc(out, cap);
		if (!bigger)
			goto fail;
		out = bigger;
	}
	*out_len = zs.total_out;
	inflateEnd(&zs);
	return out;
fail:
	inflateEnd(&zs);
	free(out);
	return NULL;
}

#endif

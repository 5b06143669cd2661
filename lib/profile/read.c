// SPDX-License-Identifier: Apache-2.0
/*
 * Format detection and the shared pieces of the readers: gunzip with a bound, the protobuf
 * wire scan that tells pprof from OTLP, the arena protobuf-c decodes into.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "profile/read.h"
#include "profile/read_internal.h"

size_t op_read_max_bytes = (size_t)2 << 30;

int op_errf(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* ------------------------------------------------------------------ arena */

struct op_arena_blk {
	struct op_arena_blk *next;
	size_t used, cap;
	_Alignas(16) unsigned char data[];
};

void *op_arena_alloc(struct op_arena *a, size_t n)
{
	struct op_arena_blk *b = a->head;

	n = (n + 15) & ~(size_t)15;
	if (a->full || n > op_read_max_bytes || a->used + n > op_read_max_bytes * 4) {
		a->full = true;
		return NULL;
	}
	if (!b || b->cap - b->used < n) {
		size_t cap = n > (1 << 20) ? n : (1 << 20);

		b = malloc(sizeof(*b) + cap);
		if (!b) {
			a->full = true;
			return NULL;
		}
		b->used = 0;
		b->cap = cap;
		/* a big block goes behind the head: the head's room stays usable */
		if (a->head && n > (1 << 20)) {
			b->next = a->head->next;
			a->head->next = b;
		} else {
			b->next = a->head;
			a->head = b;
		}
	}
	a->used += n;
	b->used += n;
	return b->data + b->used - n;
}

void op_arena_free(struct op_arena *a)
{
	while (a->head) {
		struct op_arena_blk *n = a->head->next;

		free(a->head);
		a->head = n;
	}
	a->used = 0;
	a->full = false;
}

static void *pbc_alloc(void *data, size_t n)
{
	return op_arena_alloc(data, n);
}

static void pbc_free(void *data, void *p)
{
}

ProtobufCAllocator op_arena_allocator(struct op_arena *a)
{
	ProtobufCAllocator al = { .alloc = pbc_alloc, .free = pbc_free, .allocator_data = a };

	return al;
}

/* ------------------------------------------------------------------ detection */

const char *op_format_name(enum op_format f)
{
	switch (f) {
	case OP_FORMAT_PPROF:
		return "pprof";
	case OP_FORMAT_OTLP:
		return "OTLP";
	case OP_FORMAT_OTLP_JSON:
		return "OTLP/JSON";
	case OP_FORMAT_FOLDED:
		return "folded stacks";
	default:
		return "unknown";
	}
}

static int gunzip(const uint8_t *in, size_t len, uint8_t **out, size_t *out_len, char *err,
		  size_t errlen)
{
	z_stream zs;
	uint8_t *buf = NULL;
	size_t cap = len * 4 + 4096, n = 0;
	int rc;

	memset(&zs, 0, sizeof(zs));
	if (inflateInit2(&zs, 15 + 32) != Z_OK)
		return op_errf(err, errlen, "cannot start decompressing (zlib)");
	zs.next_in = (Bytef *)in;
	zs.avail_in = len > UINT32_MAX ? UINT32_MAX : (uInt)len;
	for (;;) {
		if (n == cap || !buf) {
			uint8_t *nb;

			if (buf)
				cap *= 2;
			if (cap > op_read_max_bytes + 1)
				cap = op_read_max_bytes + 1;
			if (n >= cap) {
				inflateEnd(&zs);
				free(buf);
				return op_errf(
					err, errlen,
					"decompresses to more than %zu MiB (not a profile, or "
					"one too large to read)",
					op_read_max_bytes >> 20);
			}
			nb = realloc(buf, cap);
			if (!nb) {
				inflateEnd(&zs);
				free(buf);
				return op_errf(err, errlen, "out of memory decompressing");
			}
			buf = nb;
		}
		zs.next_out = buf + n;
		zs.avail_out = (uInt)(cap - n);
		rc = inflate(&zs, Z_NO_FLUSH);
		n = cap - zs.avail_out;
		if (rc == Z_STREAM_END) {
			/* gzip allows members one after the other (cat a.gz b.gz) */
			size_t used = (size_t)(zs.next_in - in);

			if (used < len && len - used >= 2 && in[used] == 0x1f &&
			    in[used + 1] == 0x8b) {
				inflateReset(&zs);
				zs.avail_in = (uInt)(len - used);
				continue;
			}
			break;
		}
		if (rc == Z_BUF_ERROR && zs.avail_in == 0) {
			inflateEnd(&zs);
			free(buf);
			return op_errf(err, errlen,
				       "truncated gzip data (the file ends early: was it copied or "
				       "written completely?)");
		}
		if (rc != Z_OK && rc != Z_BUF_ERROR) {
			inflateEnd(&zs);
			free(buf);
			return op_errf(err, errlen, "corrupt gzip data (%s)",
				       zs.msg ? zs.msg : "zlib error");
		}
		if (zs.avail_in == 0 && zs.avail_out != 0) {
			inflateEnd(&zs);
			free(buf);
			return op_errf(err, errlen, "truncated gzip data (the file ends early)");
		}
	}
	inflateEnd(&zs);
	*out = buf;
	*out_len = n;
	return 0;
}

static int varint(const uint8_t *p, size_t len, size_t *pos, uint64_t *v)
{
	uint64_t r = 0;

	for (int shift = 0; shift < 64; shift += 7) {
		if (*pos >= len)
			return -1;
		r |= (uint64_t)(p[*pos] & 0x7f) << shift;
		if (!(p[(*pos)++] & 0x80)) {
			*v = r;
			return 0;
		}
	}
	return -2;
}

enum scan_result { SCAN_OK, SCAN_TRUNCATED, SCAN_BAD };

/*
 * Walk the top-level fields of a protobuf message. *fields gets a bit per field number seen
 * (numbers above 63 set bit 63).
 */
static enum scan_result scan_proto(const uint8_t *p, size_t len, uint64_t *fields, size_t *at)
{
	size_t pos = 0;

	*fields = 0;
	while (pos < len) {
		uint64_t key, v;
		int r;

		*at = pos;
		r = varint(p, len, &pos, &key);
		if (r)
			return r == -1 ? SCAN_TRUNCATED : SCAN_BAD;
		if ((key >> 3) == 0)
			return SCAN_BAD;
		*fields |= 1ull << ((key >> 3) > 63 ? 63 : (key >> 3));
		switch (key & 7) {
		case 0:
			r = varint(p, len, &pos, &v);
			if (r)
				return r == -1 ? SCAN_TRUNCATED : SCAN_BAD;
			break;
		case 1:
			if (len - pos < 8)
				return SCAN_TRUNCATED;
			pos += 8;
			break;
		case 2:
			r = varint(p, len, &pos, &v);
			if (r)
				return r == -1 ? SCAN_TRUNCATED : SCAN_BAD;
			if (v > len - pos)
				return SCAN_TRUNCATED;
			pos += v;
			break;
		case 5:
			if (len - pos < 4)
				return SCAN_TRUNCATED;
			pos += 4;
			break;
		default:
			return SCAN_BAD;
		}
	}
	return SCAN_OK;
}

/*
 * Text: no control characters but line breaks and tabs in the first 64 KiB. JSON and folded
 * stacks are text; protobuf practically never is (its first byte may well be '\n', field 1,
 * and the next '{', a length of 123).
 */
static bool looks_text(const uint8_t *p, size_t len)
{
	size_t n = len < 65536 ? len : 65536;

	for (size_t i = 0; i < n; i++)
		if (p[i] < 0x20 && p[i] != '\n' && p[i] != '\r' && p[i] != '\t')
			return false;
	return true;
}

/* Text whose lines look like "a;b;c 123". */
static bool looks_folded(const uint8_t *p, size_t len)
{
	size_t i, n = len < 65536 ? len : 65536, end;

	/* the first line that is not blank or a comment ends in a number */
	for (i = 0; i < n;) {
		for (end = i; end < n && p[end] != '\n'; end++)
			;
		while (end > i && (p[end - 1] == '\r' || p[end - 1] == ' ' || p[end - 1] == '\t'))
			end--;
		if (end > i && p[i] != '#') {
			size_t d = end;

			while (d > i && p[d - 1] >= '0' && p[d - 1] <= '9')
				d--;
			return d < end && d > i && (p[d - 1] == ' ' || p[d - 1] == '\t');
		}
		while (i < n && p[i] != '\n')
			i++;
		i++;
	}
	return false;
}

static int dispatch(struct op_data *d, const uint8_t *buf, size_t len, enum op_format *fmt,
		    int depth, char *err, size_t errlen)
{
	uint64_t fields;
	size_t i, at = 0;
	enum scan_result r;

	*fmt = OP_FORMAT_UNKNOWN;
	if (!len)
		return op_errf(err, errlen, depth ? "the compressed data is empty" : "empty file");
	if (len >= 2 && buf[0] == 0x1f && buf[1] == 0x8b) {
		uint8_t *raw = NULL;
		size_t n = 0;
		int rc;

		if (depth)
			return op_errf(err, errlen, "gzip inside gzip: not a profile");
		if (gunzip(buf, len, &raw, &n, err, errlen))
			return -1;
		rc = dispatch(d, raw, n, fmt, depth + 1, err, errlen);
		free(raw);
		return rc;
	}
	for (i = 0;
	     i < len && (buf[i] == ' ' || buf[i] == '\n' || buf[i] == '\r' || buf[i] == '\t'); i++)
		;
	if (i < len && buf[i] == '{' && looks_text(buf, len)) {
		*fmt = OP_FORMAT_OTLP_JSON;
		return op_read_otlp_json(d, buf, len, err, errlen);
	}
	if (looks_text(buf, len) && looks_folded(buf, len)) {
		*fmt = OP_FORMAT_FOLDED;
		return op_read_folded(d, buf, len, err, errlen);
	}
	r = scan_proto(buf, len, &fields, &at);
	/*
	 * An ExportProfilesServiceRequest has fields 1 (resource_profiles) and 2 (dictionary)
	 * only; a pprof Profile always has 6 (string_table: "" at least) and more.
	 */
	if (r == SCAN_OK && fields && !(fields & ~6ull)) {
		*fmt = OP_FORMAT_OTLP;
		return op_read_otlp(d, buf, len, err, errlen);
	}
	if (r == SCAN_OK && (fields & (1ull << 6))) {
		*fmt = OP_FORMAT_PPROF;
		return op_read_pprof(d, buf, len, err, errlen);
	}
	if (r == SCAN_TRUNCATED && (fields & ~0xfffeull) == 0)
		return op_errf(
			err, errlen,
			"truncated protobuf data: a field at byte %zu runs past the end (%zu "
			"bytes): the file ends early",
			at, len);
	return op_errf(err, errlen,
		       "not a profile: neither pprof, OTLP protobuf, OTLP/JSON nor folded stacks "
		       "(the format is recognised by content)");
}

struct op_data *op_read_buf(const uint8_t *buf, size_t len, enum op_format *fmt, char *err,
			    size_t errlen)
{
	struct op_data *d = op_data_new();
	enum op_format f;

	if (!d) {
		op_errf(err, errlen, "out of memory");
		return NULL;
	}
	if (dispatch(d, buf, len, &f, 0, err, errlen)) {
		op_data_free(d);
		d = NULL;
	} else if (d->samples.n <= 1 && f != OP_FORMAT_UNKNOWN) {
		/* a profile without a single sample is treated as what it most likely is */
		op_errf(err, errlen, "the %s profile holds no samples", op_format_name(f));
		op_data_free(d);
		d = NULL;
	}
	if (fmt)
		*fmt = f;
	return d;
}

struct op_data *op_read_file(const char *path, enum op_format *fmt, char *err, size_t errlen)
{
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0;
	struct op_data *d;
	int fd;

	if (fmt)
		*fmt = OP_FORMAT_UNKNOWN;
	fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : dup(STDIN_FILENO);
	if (fd < 0) {
		op_errf(err, errlen, "cannot open it: %s", strerror(errno));
		return NULL;
	}
	for (;;) {
		ssize_t n;

		if (len == cap) {
			size_t ncap = cap ? cap * 2 : 1 << 20;
			uint8_t *nb;

			if (cap > op_read_max_bytes) {
				op_errf(err, errlen, "larger than %zu MiB",
					op_read_max_bytes >> 20);
				goto fail;
			}
			nb = realloc(buf, ncap);
			if (!nb) {
				op_errf(err, errlen, "out of memory reading it");
				goto fail;
			}
			buf = nb;
			cap = ncap;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			op_errf(err, errlen, "cannot read it: %s", strerror(errno));
			goto fail;
		}
		if (!n)
			break;
		len += n;
	}
	close(fd);
	d = op_read_buf(buf, len, fmt, err, errlen);
	free(buf);
	return d;
fail:
	close(fd);
	free(buf);
	return NULL;
}

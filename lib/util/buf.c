// SPDX-License-Identifier: Apache-2.0
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"

static bool reserve(struct op_buf *b, size_t more)
{
	size_t ncap;
	char *np;

	if (b->oom)
		return false;
	if (b->len + more + 1 <= b->cap)
		return true;
	ncap = b->cap ? b->cap : 4096;
	while (ncap < b->len + more + 1) {
		if (ncap > ((size_t)-1) / 2) {
			b->oom = true;
			return false;
		}
		ncap *= 2;
	}
	np = realloc(b->p, ncap);
	if (!np) {
		b->oom = true;
		return false;
	}
	b->p = np;
	b->cap = ncap;
	return true;
}

void op_buf_add(struct op_buf *b, const void *data, size_t len)
{
	if (!reserve(b, len))
		return;
	memcpy(b->p + b->len, data, len);
	b->len += len;
	b->p[b->len] = 0;
}

void op_buf_puts(struct op_buf *b, const char *s)
{
	op_buf_add(b, s, strlen(s));
}

void op_buf_printf(struct op_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!reserve(b, 256))
		return;
	va_start(ap, fmt);
	n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->oom = true;
		return;
	}
	if ((size_t)n >= b->cap - b->len) {
		if (!reserve(b, (size_t)n))
			return;
		va_start(ap, fmt);
		vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
	}
	b->len += (size_t)n;
}

void op_buf_free(struct op_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
	b->oom = false;
}

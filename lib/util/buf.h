/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A growable byte buffer for text output (reports, folded stacks). Appending never fails
 * loudly: an allocation failure sets oom and later appends do nothing; check it at the end.
 */
#ifndef OTELPROF_UTIL_BUF_H
#define OTELPROF_UTIL_BUF_H

#include <stdbool.h>
#include <stddef.h>

struct op_buf {
	char *p;
	size_t len, cap;
	bool oom;
};

void op_buf_add(struct op_buf *b, const void *data, size_t len);
void op_buf_puts(struct op_buf *b, const char *s);
void op_buf_printf(struct op_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void op_buf_free(struct op_buf *b);

#endif

// SPDX-License-Identifier: Apache-2.0
/* The library's only output channel: a process-wide callback, also fed by libbpf. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>

#include <bpf/libbpf.h>

#include "util/log.h"

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static otelprof_log_fn log_fn;
static void *log_ctx;
static enum otelprof_log_level log_max = OTELPROF_LOG_WARN;

static void vlog(enum otelprof_log_level level, const char *fmt, va_list ap)
{
	char small[1024], *buf = small;
	otelprof_log_fn fn;
	va_list ap2;
	int len;
	void *ctx;
	size_t n;

	pthread_mutex_lock(&log_lock);
	fn = log_fn;
	ctx = log_ctx;
	pthread_mutex_unlock(&log_lock);
	if (!fn || level > log_max)
		return;
	/* verifier logs from libbpf run to many kilobytes: keep them whole */
	va_copy(ap2, ap);
	len = vsnprintf(small, sizeof(small), fmt, ap);
	if (len >= (int)sizeof(small)) {
		buf = malloc(len + 1);
		if (buf)
			vsnprintf(buf, len + 1, fmt, ap2);
		else
			buf = small;
	}
	va_end(ap2);
	n = strlen(buf);
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	if (n)
		fn(level, buf, ctx);
	if (buf != small)
		free(buf);
}

void op_log(enum otelprof_log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(level, fmt, ap);
	va_end(ap);
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	enum otelprof_log_level l;

	switch (level) {
	case LIBBPF_WARN:
		l = OTELPROF_LOG_WARN;
		break;
	case LIBBPF_INFO:
		l = OTELPROF_LOG_INFO;
		break;
	default:
		l = OTELPROF_LOG_DEBUG;
		break;
	}
	vlog(l, fmt, ap);
	return 0;
}

OTELPROF_API otelprof_log_fn otelprof_set_log(otelprof_log_fn fn, void *ctx,
					      enum otelprof_log_level max_level)
{
	otelprof_log_fn prev;

	pthread_mutex_lock(&log_lock);
	prev = log_fn;
	log_fn = fn;
	log_ctx = ctx;
	log_max = max_level;
	pthread_mutex_unlock(&log_lock);
	libbpf_set_print(fn ? libbpf_print : NULL);
	return prev;
}

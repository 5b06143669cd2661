/* SPDX-License-Identifier: Apache-2.0 */
/* Internal logging: every message goes through the callback set by otelprof_set_log(). */
#ifndef OTELPROF_LOG_H
#define OTELPROF_LOG_H

#include "otelprof.h"

void op_log(enum otelprof_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define op_err(...)   op_log(OTELPROF_LOG_ERROR, __VA_ARGS__)
#define op_warn(...)  op_log(OTELPROF_LOG_WARN, __VA_ARGS__)
#define op_info(...)  op_log(OTELPROF_LOG_INFO, __VA_ARGS__)
#define op_debug(...) op_log(OTELPROF_LOG_DEBUG, __VA_ARGS__)

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Labels that name a span (links.c): the spellings the common tracing-to-profiling bridges
 * use for a trace id and a span id in pprof labels or thread-local labels, turned into the
 * bytes of an OTLP Link. README "Trace correlation" lists them.
 */
#ifndef OTELPROF_LINKS_H
#define OTELPROF_LINKS_H

#include <stdint.h>

/* If @key names a trace id and @val is one (32 hex digits, not all zero): 0, @out set. */
int op_label_trace_id(const char *key, const char *val, uint8_t out[16]);
/*
 * If @key names a span id and @val is one (16 hex digits, or a decimal 64-bit id for the
 * bridges that write decimal; not zero): 0, @out set (big-endian, as OTLP carries it).
 */
int op_label_span_id(const char *key, const char *val, uint8_t out[8]);

#endif

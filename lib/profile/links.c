// SPDX-License-Identifier: Apache-2.0
/* Trace and span ids in labels; see links.h. Pure; fuzzed through the encode target. */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/hex.h"
#include "profile/links.h"

/*
 * Keys, compared without case: OpenTelemetry's own spelling (trace_id/span_id, as the OTel
 * to pprof-label bridges and the custom-labels examples write them), the dotted and camel
 * forms other SDKs use (trace.id, traceId, traceID, otel.trace_id), and the decimal span ids
 * of Datadog's tracers ("span id", "local root span id" — no trace id there: label only).
 */
static const char *const trace_keys[] = { "trace_id", "trace.id", "traceid", "otel.trace_id",
					  "trace-id" };
static const char *const span_keys[] = { "span_id", "span.id", "spanid", "otel.span_id",
					 "span-id" };
static const char *const decimal_span_keys[] = { "span id", "local root span id" };

static bool key_in(const char *key, const char *const *keys, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcasecmp(key, keys[i]))
			return true;
	return false;
}

/* @len bytes from 2*len hex digits; -EINVAL unless exactly that and not all zero. */
static int from_hex(const char *s, uint8_t *out, size_t len)
{
	bool nonzero = false;

	if (strlen(s) != 2 * len)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		int h = op_hexval(s[2 * i]), l = op_hexval(s[2 * i + 1]);

		if (h < 0 || l < 0)
			return -EINVAL;
		out[i] = (uint8_t)(h << 4 | l);
		nonzero |= out[i] != 0;
	}
	return nonzero ? 0 : -EINVAL;
}

int op_label_trace_id(const char *key, const char *val, uint8_t out[16])
{
	if (!key || !val || !key_in(key, trace_keys, sizeof(trace_keys) / sizeof(*trace_keys)))
		return -ENOENT;
	return from_hex(val, out, 16);
}

int op_label_span_id(const char *key, const char *val, uint8_t out[8])
{
	if (!key || !val)
		return -ENOENT;
	if (key_in(key, span_keys, sizeof(span_keys) / sizeof(*span_keys)))
		return from_hex(val, out, 8);
	if (key_in(key, decimal_span_keys,
		   sizeof(decimal_span_keys) / sizeof(*decimal_span_keys))) {
		unsigned long long v;
		char *end;

		if (!*val || *val == '-' || *val == '+')
			return -EINVAL;
		errno = 0;
		v = strtoull(val, &end, 10);
		if (errno || *end || !v)
			return -EINVAL;
		for (int i = 7; i >= 0; i--, v >>= 8)
			out[i] = (uint8_t)v;
		return 0;
	}
	return -ENOENT;
}

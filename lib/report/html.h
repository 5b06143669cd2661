/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HTML report: one self-contained page (no network, no server) with the view's data
 * embedded as JSON and the renderer (lib/report/report.{html,css,js}, compiled in) inlined.
 * The same page shows a diff when the view holds two profiles (base = 0, new = 1).
 */
#ifndef OTELPROF_REPORT_HTML_H
#define OTELPROF_REPORT_HTML_H

#include <stdbool.h>
#include <stdint.h>

#include "report/view.h"
#include "util/buf.h"

struct op_html_profile {
	const char *name;   /* the file, as given */
	const char *format; /* "pprof", "OTLP" ... */
	uint64_t time_ns;
	uint64_t duration_ns;
	int64_t period;
	const char *period_type; /* "cpu/nanoseconds" or "" */
};

struct op_html_opts {
	const char *title;
	bool diff;			    /* two profiles: base and new */
	bool absolute;			    /* diff: compare absolute values, not shares */
	struct op_html_profile profiles[2]; /* one, or two for a diff */
};

/* 0 or -ENOMEM. */
int op_html_write(const struct op_view *v, const struct op_html_opts *o, struct op_buf *out);

#endif

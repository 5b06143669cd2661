/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The terminal side of a diff: a view holding two profiles (base = 0, new = 1) printed as
 * two tables, functions and stacks, ordered by how much they changed. A change is in
 * percentage points of each profile's own total (shares), or in the values themselves
 * (absolute).
 */
#ifndef OTELPROF_REPORT_DIFF_H
#define OTELPROF_REPORT_DIFF_H

#include <stdbool.h>

#include "report/view.h"
#include "util/buf.h"

struct op_diff_opts {
	bool absolute;
	unsigned top;	  /* rows per table */
	const char *type; /* of the value: "samples", "cpu" ... */
	const char *unit; /* "nanoseconds", "count", "bytes" */
	const char *names[2];
};

/* 0 or -ENOMEM. */
int op_diff_text(const struct op_view *v, const struct op_diff_opts *o, struct op_buf *out);

#endif

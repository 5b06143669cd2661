/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Folded stacks ("root;caller;leaf COUNT" per line; flamegraph.pl and speedscope read them):
 * one line per distinct stack of frame names, the value of sample type @type summed over
 * samples. A ';' inside a name becomes ':' and a line break a space, so a line stays one
 * stack. Frame names as in view.h; samples without a value are left out.
 */
#ifndef OTELPROF_REPORT_FOLDED_H
#define OTELPROF_REPORT_FOLDED_H

#include "profile/data.h"
#include "util/buf.h"

/* 0 or -ENOMEM. */
int op_write_folded(struct op_data *d, uint32_t type, struct op_buf *out);

#endif

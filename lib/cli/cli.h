/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by the otelprof subcommands (lib/cli/). */
#ifndef OTELPROF_CLI_H
#define OTELPROF_CLI_H

#include <stddef.h>

#include "profile/data.h"
#include "profile/read.h"

#define EXIT_RUNTIME 1
#define EXIT_USAGE   2

extern const char *prog;

/*
 * Write @len bytes to @path through a temporary file in the same directory, renamed over
 * @path once complete: a failure leaves nothing behind, never a partial file. "-" = stdout.
 * Prints the error line itself; returns 0 or EXIT_RUNTIME.
 */
int cli_write_file(const char *path, const void *buf, size_t len);

/* Read a profile, printing "PROG: cannot read FILE: REASON" on failure. */
struct op_data *cli_read_profile(const char *path, enum op_format *fmt);

/* The sample type chosen by name ("cpu", "samples", "alloc_space"...), else the first. */
int cli_value_type(const struct op_data *d, const char *name, const char *file, uint32_t *type);

int cmd_convert(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_diff(int argc, char **argv);

#endif

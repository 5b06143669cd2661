/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Profile readers: a file or buffer in any format we read, recognised by its content (never
 * its name), decoded into a struct op_data (data.h).
 *
 *   pprof          perftools.profiles.Profile, gzipped or not
 *   OTLP           a serialized ExportProfilesServiceRequest (profiles v1development), gzipped
 *                  or not
 *   OTLP/JSON      the collector file exporter's output: one ExportProfilesServiceRequest
 *                  (ProfilesData) JSON document per line (or several documents one after the
 *                  other, however laid out)
 *   folded stacks  "root;caller;leaf COUNT" per line (flamegraph.pl, speedscope, perf script
 *                  through stackcollapse)
 *
 * Bad input gets one lower-case sentence in @err naming what is wrong ("truncated gzip data",
 * "sample 3 refers to location 99, which the file does not define"); the caller adds the
 * file name. Nothing a file says is trusted: every index is checked, every size bounded.
 */
#ifndef OTELPROF_PROFILE_READ_H
#define OTELPROF_PROFILE_READ_H

#include <stddef.h>
#include <stdint.h>

#include "profile/data.h"

enum op_format {
	OP_FORMAT_UNKNOWN = 0,
	OP_FORMAT_PPROF,
	OP_FORMAT_OTLP,
	OP_FORMAT_OTLP_JSON,
	OP_FORMAT_FOLDED,
};

#define OP_READ_ERR_LEN 256

/* Most bytes a file may decompress to (a gzip bomb is an error, not an allocation). */
extern size_t op_read_max_bytes;

const char *op_format_name(enum op_format f);

/*
 * Decode @buf (@len bytes). Returns the profile, or NULL with the reason in @err. *@fmt (may
 * be NULL) is set to the format found, also on a decoding error after detection.
 */
struct op_data *op_read_buf(const uint8_t *buf, size_t len, enum op_format *fmt, char *err,
			    size_t errlen);

/* The same for a file ("-" = standard input). */
struct op_data *op_read_file(const char *path, enum op_format *fmt, char *err, size_t errlen);

/* The format readers, on undecorated data (no gzip); 0 or -1 with @err set. */
int op_read_pprof(struct op_data *d, const uint8_t *buf, size_t len, char *err, size_t errlen);
int op_read_otlp(struct op_data *d, const uint8_t *buf, size_t len, char *err, size_t errlen);
int op_read_otlp_json(struct op_data *d, const uint8_t *buf, size_t len, char *err, size_t errlen);
int op_read_folded(struct op_data *d, const uint8_t *buf, size_t len, char *err, size_t errlen);

#endif

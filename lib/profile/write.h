/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Writers of a decoded profile (data.h): pprof (gzipped) and OTLP protobuf. What they keep
 * and what they cannot (both ways between pprof and OTLP):
 *
 *   kept      every sample and value, stacks, locations (address, lines, inlined frames),
 *             functions (name, system name, file, start line), mappings (range, offset, file,
 *             build ids), labels/attributes (semconv.c maps the names), period, time
 *   pprof     gets one extra value column cpu/nanoseconds (count x period) when the profile
 *             has a single samples/count type and a cpu/nanoseconds period, as go tool pprof
 *             and our recorder show CPU profiles; OTLP drops that column again
 *   lost      timestamps and links in pprof (it has no place for them); profile.frame.type in
 *             pprof; pprof's comments, drop/keep_frames and mapping has_* flags in OTLP (the
 *             flags are derived again from the frames: named, with lines, inlined)
 *
 * On success *out is malloc()ed and *len its size; 0 or -ENOMEM.
 */
#ifndef OTELPROF_PROFILE_WRITE_H
#define OTELPROF_PROFILE_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "profile/data.h"

int op_write_pprof(const struct op_data *d, uint8_t **out, size_t *len);
/* Adds the strings and attributes OTLP needs (frame types, build id keys) to @d. */
int op_write_otlp(struct op_data *d, uint8_t **out, size_t *len);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A process's environment as resource attributes: the variables an OpenTelemetry SDK reads to
 * name its service (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES), read once from
 * /proc/PID/environ (bounded), so a profile carries the same service.name as the process's
 * traces.
 */
#ifndef OTELPROF_ENVIRON_H
#define OTELPROF_ENVIRON_H

#include <stdbool.h>
#include <stddef.h>

/* Bounds: bytes of /proc/PID/environ read, attributes kept, key and value lengths. */
#define OP_ENVIRON_MAX_BYTES  (256u << 10)
#define OP_RESOURCE_MAX_ATTRS 32
#define OP_RESOURCE_MAX_KEY   128
#define OP_RESOURCE_MAX_VALUE 256

/* Resource attributes: n pairs, kv[2i] the key and kv[2i+1] the value (malloc()ed). */
struct op_resource {
	char **kv;
	size_t n;
};

void op_resource_free(struct op_resource *r);
/* The value of @key in @r, or NULL. */
const char *op_resource_get(const struct op_resource *r, const char *key);

/*
 * Parse an environment block (@len bytes of NUL-separated NAME=VALUE entries, as
 * /proc/PID/environ holds) into @out: OTEL_RESOURCE_ATTRIBUTES (comma-separated key=value,
 * values percent-decoded), then OTEL_SERVICE_NAME, which wins for service.name, as the SDKs
 * do. Malformed entries are skipped; keys and values beyond the bounds are dropped. Pure;
 * fuzzed. Returns 0 or -ENOMEM.
 */
int op_resource_from_environ(const char *env, size_t len, struct op_resource *out);

/* Read /proc/@pid/environ and parse it (op_resource_from_environ). 0, -errno. */
int op_resource_read(int pid, struct op_resource *out);

/* The prefix of an included environment variable's resource attribute (upstream's key). */
#define OP_ENV_VAR_ATTR_PREFIX "process.environment_variable."

/*
 * Add the variables of @env (as op_resource_from_environ) whose names are listed in @names
 * (comma-separated, blanks around names ignored) to @out as OP_ENV_VAR_ATTR_PREFIX<NAME> =
 * value - the upstream receiver's include_env_vars. Names or values beyond the bounds are
 * skipped. Pure; fuzzed. Returns 0 or -ENOMEM (@out keeps what was added).
 */
int op_resource_env_vars(const char *env, size_t len, const char *names, struct op_resource *out);

/*
 * Read /proc/@pid/environ once into @out: OpenTelemetry attributes if @otel, the variables
 * listed in @names (NULL: none). 0, -errno.
 */
int op_resource_read_vars(int pid, bool otel, const char *names, struct op_resource *out);

#endif

// SPDX-License-Identifier: Apache-2.0
/*
 * pprof labels <-> OTLP attributes: one table, used by the pprof reader (labels in) and the
 * pprof writer (labels out), so pprof -> OTLP -> pprof gives back the labels it started with.
 *
 * The names are those our own encoders write (profile/pprof.c, profile/otlp.c):
 *
 *   pprof label                      OTLP
 *   pid (num, unit "id")             resource process.pid
 *   tid (num, unit "id")             sample thread.id
 *   cpu (num, unit "id")             sample cpu.logical_number
 *   thread.name                      sample thread.name
 *   service.*, process.*, host.*,    resource, same key (what OTEL_RESOURCE_ATTRIBUTES carries,
 *   k8s.*, container.* ...           which our pprof encoder writes as labels)
 *   KEY without a dot (Go pprof      sample process.context.label.KEY (the upstream eBPF
 *   labels, custom labels)           profiler's keys for thread labels)
 *   any other dotted key             sample, same key
 */
#include <string.h>

#include "profile/read_internal.h"

static const struct {
	const char *label;
	const char *attr;
	bool resource;
} renames[] = {
	{ "pid", "process.pid", true },
	{ "tid", "thread.id", false },
	{ "cpu", "cpu.logical_number", false },
};

/* Namespaces of resource attributes (OpenTelemetry semantic conventions). */
static const char *const resource_ns[] = {
	"service.", "process.", "host.", "k8s.",    "container.", "deployment.",
	"cloud.",   "os.",	"faas.", "device.", "telemetry.", "webengine.",
};

static const char label_prefix[] = "process.context.label.";

static bool is_resource_key(const char *key)
{
	for (size_t i = 0; i < sizeof(resource_ns) / sizeof(resource_ns[0]); i++)
		if (!strncmp(key, resource_ns[i], strlen(resource_ns[i])))
			return strncmp(key, label_prefix, sizeof(label_prefix) - 1) != 0;
	return false;
}

uint32_t op_label_to_attr(struct op_data *d, const char *key, const char *str, int64_t num,
			  const char *unit, bool is_num, bool *resource)
{
	char buf[512];
	const char *k = key;
	size_t i;

	*resource = false;
	for (i = 0; i < sizeof(renames) / sizeof(renames[0]); i++) {
		if (!strcmp(key, renames[i].label) && is_num) {
			*resource = renames[i].resource;
			/* the unit our encoder gives them is implied by the key */
			return op_data_attr_int(d, renames[i].attr, num,
						unit && strcmp(unit, "id") ? unit : NULL);
		}
	}
	if (!strchr(key, '.')) {
		snprintf(buf, sizeof(buf), "%s%s", label_prefix, key);
		k = buf;
	} else {
		*resource = is_resource_key(key);
	}
	if (is_num)
		return op_data_attr_int(d, k, num, unit);
	return op_data_attr_str(d, k, str);
}

const char *op_label_key(const char *attr_key, const char **num_unit)
{
	size_t i;

	*num_unit = NULL;
	for (i = 0; i < sizeof(renames) / sizeof(renames[0]); i++) {
		if (!strcmp(attr_key, renames[i].attr)) {
			*num_unit = "id";
			return renames[i].label;
		}
	}
	if (!strncmp(attr_key, label_prefix, sizeof(label_prefix) - 1) &&
	    attr_key[sizeof(label_prefix) - 1])
		return attr_key + sizeof(label_prefix) - 1;
	return attr_key;
}

/*
 * pprof has one build id string per mapping. otelprof writes the GNU build id there, else the
 * htlhash (16 bytes, 32 hex digits), else the Go build id ("a/b/c/d", not hex). GNU build ids
 * are 20 bytes by default (8 with lld's fast hash); a 16-byte GNU id (--build-id=md5/uuid)
 * is taken for an htlhash, which changes the OTLP key it travels under, not its value.
 */
const char *op_build_id_kind(const char *s)
{
	size_t n = 0;

	for (; s[n]; n++)
		if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f') ||
		      (s[n] >= 'A' && s[n] <= 'F')))
			return "go";
	return n == 32 ? "htlhash" : "gnu";
}

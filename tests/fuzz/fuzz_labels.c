// SPDX-License-Identifier: Apache-2.0
/*
 * Fuzz trace correlation's parsers of outside input: a process's environment block
 * (lib/sample/environ.c: OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, include_env_vars), the
 * .go.buildinfo version (lib/binary/filecache.c) and trace/span ids in label values
 * (lib/profile/links.c). The input is used whole for each. Invariants: no crash; at most
 * OP_RESOURCE_MAX_ATTRS attributes with non-empty keys and values within the bounds; a Go version
 * is "" or starts with "go1."; an id is accepted only when not all zero.
 */
#include "binary/file.h"
#include "fuzz.h"
#include "profile/links.h"
#include "sample/environ.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct op_resource r;
	char v[24], *s;
	uint8_t id[16];
	size_t klen;

	if (op_resource_from_environ((const char *)data, size, &r) == 0) {
		FUZZ_ASSERT(r.n <= OP_RESOURCE_MAX_ATTRS);
		for (size_t i = 0; i < r.n; i++) {
			FUZZ_ASSERT(r.kv[2 * i][0]);
			FUZZ_ASSERT(strlen(r.kv[2 * i]) <= OP_RESOURCE_MAX_KEY);
			FUZZ_ASSERT(strlen(r.kv[2 * i + 1]) <= OP_RESOURCE_MAX_VALUE);
		}
		op_resource_free(&r);
	}

	/* include_env_vars: the first entry of the input names the variables, the rest is the block
	 */
	{
		size_t nl = strnlen((const char *)data, size);
		char *names = strndup((const char *)data, nl);

		FUZZ_ASSERT(names);
		memset(&r, 0, sizeof(r));
		if (op_resource_env_vars((const char *)data + nl + (nl < size),
					 size - nl - (nl < size), names, &r) == 0) {
			FUZZ_ASSERT(r.n <= OP_RESOURCE_MAX_ATTRS);
			for (size_t i = 0; i < r.n; i++) {
				FUZZ_ASSERT(!strncmp(r.kv[2 * i], OP_ENV_VAR_ATTR_PREFIX,
						     sizeof(OP_ENV_VAR_ATTR_PREFIX) - 1));
				FUZZ_ASSERT(strlen(r.kv[2 * i]) <= OP_RESOURCE_MAX_KEY);
			}
		}
		op_resource_free(&r);
		free(names);
	}

	op_go_buildinfo_version(data, size, v, sizeof(v));
	FUZZ_ASSERT(!v[0] || !strncmp(v, "go1.", 4));

	/* key NUL value */
	s = malloc(size + 2);
	FUZZ_ASSERT(s);
	memcpy(s, data, size);
	s[size] = s[size + 1] = '\0';
	klen = strlen(s);
	if (op_label_trace_id(s, s + klen + (klen < size), id) == 0) {
		int nz = 0;

		for (int i = 0; i < 16; i++)
			nz |= id[i];
		FUZZ_ASSERT(nz);
	}
	if (op_label_span_id(s, s + klen + (klen < size), id) == 0) {
		int nz = 0;

		for (int i = 0; i < 8; i++)
			nz |= id[i];
		FUZZ_ASSERT(nz);
	}
	free(s);
	return 0;
}

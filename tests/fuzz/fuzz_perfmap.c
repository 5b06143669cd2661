// SPDX-License-Identifier: Apache-2.0
/*
 * Fuzz the perf map parser (lib/symbol/perfmap.c): the input is a /tmp/perf-PID.map text, parsed
 * in two pieces (as a growing file is). Invariants: no crash; every line kept has start < end
 * and a name within OP_PERFMAP_MAX_NAME; a lookup of each kept line's start finds a line that
 * covers it.
 */
#include "fuzz.h"
#include "symbol/perfmap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct op_perfmap m = { 0 };
	size_t cut = size ? data[0] % (size + 1) : 0;

	FUZZ_ASSERT(op_perfmap_parse(&m, (const char *)data, cut) == 0);
	FUZZ_ASSERT(op_perfmap_parse(&m, (const char *)data + cut, size - cut) == 0);
	for (size_t i = 0; i < m.n; i++) {
		FUZZ_ASSERT(m.ents[i].start < m.ents[i].end);
		FUZZ_ASSERT(strlen(m.names + m.ents[i].name) <= OP_PERFMAP_MAX_NAME);
	}
	for (size_t i = 0; i < m.n && i < 64; i++) {
		uint64_t addr = m.ents[i].start, start = 0;
		const char *name = op_perfmap_find(&m, addr, &start);

		FUZZ_ASSERT(name);
		FUZZ_ASSERT(start <= addr);
	}
	op_perfmap_clear(&m);
	return 0;
}

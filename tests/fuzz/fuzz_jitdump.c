// SPDX-License-Identifier: Apache-2.0
/*
 * Fuzz the jitdump parser (lib/symbol/perfmap.c, op_jitdump_parse): the input is a jitdump
 * file, parsed in two pieces from where the first parse ended (as a growing file is read).
 * Invariants: no crash; the bytes used never exceed those given; every entry kept has start <
 * end and a name within OP_PERFMAP_MAX_NAME; a lookup of each entry's start finds an entry
 * that covers it.
 */
#include "fuzz.h"
#include "symbol/perfmap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct op_perfmap m = { 0 };
	struct op_jitdump j = { 0 };
	size_t cut = size > 41 ? 40 + data[size - 1] % (size - 40) : size;
	long used = op_jitdump_parse(&m, &j, data, cut);

	FUZZ_ASSERT(used == -EINVAL || (used >= 0 && (size_t)used <= cut));
	if (used >= 0) {
		long more = op_jitdump_parse(&m, &j, data + used, size - (size_t)used);

		FUZZ_ASSERT(more == -EINVAL || (more >= 0 && (size_t)more <= size - (size_t)used));
	}
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

// SPDX-License-Identifier: Apache-2.0
/*
 * Fuzz the /proc/PID/maps line parser and the cgroup container-id reader (lib/sample/proc.c): the
 * input is text, each line parsed on its own, the whole text read as /proc/PID/cgroup.
 * Invariants: no crash; a parsed entry has end >= start and a terminated path without the
 * newline; a container id is 64 lower-case hex digits.
 */
#include "fuzz.h"
#include "sample/proc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct op_maps_entry e;
	char *text = malloc(size + 1), *line, *next, *id;

	FUZZ_ASSERT(text);
	memcpy(text, data, size);
	text[size] = '\0';

	id = op_container_id_from_cgroup(text);
	if (id) {
		FUZZ_ASSERT(strlen(id) == 64);
		for (int i = 0; i < 64; i++)
			FUZZ_ASSERT((id[i] >= '0' && id[i] <= '9') ||
				    (id[i] >= 'a' && id[i] <= 'f'));
		free(id);
	}

	for (line = text; line; line = next) {
		char *nl = strchr(line, '\n');
		char saved = 0;

		next = nl ? nl + 1 : NULL;
		/* half the lines keep their newline, as fgets() hands them over */
		if (nl && (nl - line) % 2) {
			saved = nl[1];
			nl[1] = '\0';
		} else if (nl) {
			*nl = '\0';
		}
		if (op_parse_maps_line(line, &e) == 0) {
			FUZZ_ASSERT(e.end >= e.start);
			FUZZ_ASSERT(memchr(e.path, '\0', sizeof(e.path)));
			FUZZ_ASSERT(!strchr(e.path, '\n'));
		}
		if (nl && (nl - line) % 2)
			nl[1] = saved;
	}
	free(text);
	return 0;
}

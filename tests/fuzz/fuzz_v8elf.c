// SPDX-License-Identifier: Apache-2.0
/*
 * Fuzz the V8 detection (lib/runtime/v8/v8.c) as a profiled process's binary reaches it: the
 * input is written to a file and its v8dbg_* constants, V8 version and embedded builtins are
 * read. Invariants: no crash, no sanitizer report; the answer is one of its three.
 */
#include "fuzz.h"
#include "runtime/v8/v8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = fuzz_write_file(data, size);
	int fd, major = 0, minor = 0, st;

	fd = open(path, O_RDONLY);
	FUZZ_ASSERT(fd >= 0);
	st = op_v8_probe_fd(fd, &major, &minor);
	FUZZ_ASSERT(st == 1 || st == 0 || st == -ENOTSUP);
	if (st == 1)
		FUZZ_ASSERT(op_v8_version_known(major, minor));
	close(fd);
	return 0;
}

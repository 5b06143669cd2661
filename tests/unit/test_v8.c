// SPDX-License-Identifier: Apache-2.0
/*
 * V8 detection (lib/runtime/v8/v8.c): /usr/bin/node (V8 11.3) is a V8 whose layout is known;
 * a binary without v8dbg_ constants is none; the release table answers for known and unknown
 * releases; the naming decision for a frame whose function moved under the walk (a marker,
 * never the name of what lives at the address now).
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "bpf/types.h"
#include "check.h"
#include "runtime/v8/v8.h"

static int probe(const char *path, int *major, int *minor)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), st;

	if (fd < 0)
		return -errno;
	st = op_v8_probe_fd(fd, major, minor);
	close(fd);
	return st;
}

int main(void)
{
	int major = 0, minor = 0;

	CHECK_EQ(probe("/bin/sh", &major, &minor), 0);
	CHECK(op_v8_version_known(10, 2));
	CHECK(op_v8_version_known(11, 3));
	CHECK(op_v8_version_known(12, 4));
	CHECK(!op_v8_version_known(12, 8));
	CHECK(!op_v8_version_known(9, 4));
	{
		/* a name word as V8 tags it, and the payload the BPF walk records for it */
		uint64_t sfi = 0x3c5e00012345ull, word = 0x3c5e00098761ull;
		uint64_t payload = sfi | (uint64_t)OP_V8_CHECK(word) << OP_V8_ADDR_BITS;

		CHECK(op_v8_same_function(true, word, payload));
		/* the GC put another function's SharedFunctionInfo there: its name word differs */
		CHECK(!op_v8_same_function(true, word + 8, payload));
		CHECK(!op_v8_same_function(true, word ^ (1ull << 12), payload));
		/* not a SharedFunctionInfo any more (or unreadable), whatever its words say */
		CHECK(!op_v8_same_function(false, word, payload));
		CHECK_STR(OP_V8_MOVED, "[v8: function moved]");
	}
	if (access("/usr/bin/node", R_OK) == 0) {
		CHECK_EQ(probe("/usr/bin/node", &major, &minor), 1);
		CHECK_EQ(major, 11);
		CHECK_EQ(minor, 3);
	} else {
		printf("no /usr/bin/node: its detection not checked\n");
	}
	return check_done();
}

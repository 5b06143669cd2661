// SPDX-License-Identifier: Apache-2.0
/*
 * V8 detection (lib/runtime/v8/v8.c): /usr/bin/node (V8 11.3) is a V8 whose layout is known;
 * a binary without v8dbg_ constants is none; the release table answers for known and unknown
 * releases.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

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
	if (access("/usr/bin/node", R_OK) == 0) {
		CHECK_EQ(probe("/usr/bin/node", &major, &minor), 1);
		CHECK_EQ(major, 11);
		CHECK_EQ(minor, 3);
	} else {
		printf("no /usr/bin/node: its detection not checked\n");
	}
	return check_done();
}

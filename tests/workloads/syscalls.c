// SPDX-License-Identifier: Apache-2.0
/*
 * Syscall-heavy workload: most of its CPU time is in the kernel (reading /dev/zero into a
 * large buffer, writing it to /dev/null), so kernel frames must show up under read_zero /
 * write_null in a profile. Thread named "sys-worker".
 *
 * usage: syscalls [SECONDS]
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static char buf[1 << 20];

__attribute__((noinline)) void read_zero(int fd)
{
	if (read(fd, buf, sizeof(buf)) < 0)
		exit(1);
}

__attribute__((noinline)) void write_null(int fd)
{
	if (write(fd, buf, sizeof(buf)) < 0)
		exit(1);
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 10;
	int zero = open("/dev/zero", O_RDONLY), null = open("/dev/null", O_WRONLY);
	struct timespec t0, now;

	if (zero < 0 || null < 0)
		return 1;
	pthread_setname_np(pthread_self(), "sys-worker");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		read_zero(zero);
		write_null(null);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while ((now.tv_sec - t0.tv_sec) + (now.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
	return 0;
}

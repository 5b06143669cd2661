// SPDX-License-Identifier: Apache-2.0
/*
 * CFI workload: a recursion exactly 100 frames deep (recurse, depth 99..0) whose bottom
 * burns thread CPU time in leaf_a and leaf_b in the ratio 70:30. A complete stack is
 * leaf_x, 100 x recurse, main. Built with and without frame pointers (-nofp).
 *
 * usage: cfi_recurse [SECONDS]   (default 10)
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define DEPTH 100

static unsigned long long thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static inline __attribute__((always_inline)) void burn(unsigned long long ns)
{
	unsigned long long end = thread_cpu_ns() + ns;
	volatile unsigned long x = 0;

	while (thread_cpu_ns() < end)
		for (int i = 0; i < 50000; i++)
			x += i;
}

__attribute__((noinline)) void leaf_a(void)
{
	burn(3500000);
}

__attribute__((noinline)) void leaf_b(void)
{
	burn(1500000);
}

__attribute__((noinline)) int recurse(int depth)
{
	int r;

	if (depth == 0) {
		leaf_a();
		leaf_b();
		return 0;
	}
	r = recurse(depth - 1);
	__asm__ volatile("" ::: "memory"); /* no tail call: every level keeps its frame */
	return r + 1;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 10;
	struct timespec t0, t;
	int sum = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		sum += recurse(DEPTH - 1);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (t.tv_sec - t0.tv_sec + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
	printf("%d\n", sum);
	return 0;
}

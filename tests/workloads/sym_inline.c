// SPDX-License-Identifier: Apache-2.0
/*
 * sym_inline: a -O2 -g workload whose hot function, sym_hot_inner(), is always inlined into
 * sym_outer_caller(). A profile must show both functions for the same address, innermost
 * first, with file and line. The tests find the lines by the marker comments.
 *
 *   sym_inline [SECONDS]     spin for SECONDS (default 5), print a checksum
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static inline __attribute__((always_inline)) unsigned long sym_hot_inner(unsigned long x)
{
	unsigned long s = x;
	int i;

	for (i = 0; i < 4096; i++)
		s = (s * 6364136223846793005ul + 1442695040888963407ul) ^ (s >> 17); /* HOT_LINE */
	return s;
}

__attribute__((noinline)) unsigned long sym_outer_caller(unsigned long x)
{
	return sym_hot_inner(x) + 1; /* CALL_LINE */
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 5.0, end = now() + secs;
	volatile unsigned long sink = 0;

	do {
		int k;

		for (k = 0; k < 256; k++)
			sink += sym_outer_caller(sink + (unsigned long)k);
	} while (now() < end);
	printf("%lu\n", (unsigned long)sink);
	return 0;
}

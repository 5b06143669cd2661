// SPDX-License-Identifier: Apache-2.0
/*
 * Benchmark workload: deep recursion. main -> deep_start -> recurse x DEPTH -> deep_leaf,
 * where deep_leaf burns CPU. A complete stack has DEPTH recurse frames and reaches main.
 * Each recurse frame holds a 64-byte local buffer, like ordinary code with locals.
 *
 * usage: bench_deep [SECONDS] [DEPTH]   (default 5 s, depth 100)
 * prints: depth=D rounds=N seconds=S
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile uint64_t sink;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void deep_leaf(void)
{
	uint64_t x = sink;

	for (int i = 0; i < 2000000; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		__asm__ volatile("" : "+r"(x));
	}
	sink = x;
}

__attribute__((noinline)) int recurse(int depth)
{
	volatile char local[64];
	int r;

	local[depth % 64] = (char)depth;
	if (depth <= 1)
		deep_leaf();
	else
		recurse(depth - 1);
	r = local[depth % 64]; /* use after the call: no tail call */
	return r;
}

__attribute__((noinline)) void deep_start(int depth, double seconds)
{
	double end = now_s() + seconds;
	unsigned long rounds = 0;

	do {
		recurse(depth);
		rounds++;
	} while (now_s() < end);
	printf("depth=%d rounds=%lu seconds=%.3f\n", depth, rounds, seconds);
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 5;
	int depth = argc > 2 ? atoi(argv[2]) : 100;

	deep_start(depth < 1 ? 1 : depth, seconds);
	return 0;
}

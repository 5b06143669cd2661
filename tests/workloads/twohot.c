// SPDX-License-Identifier: Apache-2.0
/*
 * Two hot leaf functions at a chosen ratio, for the report and diff tests: each round calls
 * hot_x with X and hot_y with Y iterations of the same loop body (the same cost per
 * iteration), so they take X:Y of the thread's CPU time, as leaf frames.
 *
 * usage: twohot [SECONDS] [X] [Y]   (default 10 s, 2:1)
 */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

/* different sinks keep identical code folding from merging the two functions */
static volatile uint64_t sink_x, sink_y;

#define SPIN(n, sink)                                                                        \
	do {                                                                                 \
		uint64_t v = (sink);                                                         \
		for (uint64_t i = 0; i < (n); i++) {                                         \
			v = v * 6364136223846793005ull + 1442695040888963407ull;             \
			__asm__ volatile("" : "+r"(v));                                      \
		}                                                                            \
		(sink) = v;                                                                  \
	} while (0)

__attribute__((noinline)) void hot_x(uint64_t n)
{
	SPIN(n, sink_x);
}

__attribute__((noinline)) void hot_y(uint64_t n)
{
	SPIN(n, sink_y);
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 10;
	uint64_t x = argc > 2 ? strtoull(argv[2], NULL, 10) : 2;
	uint64_t y = argc > 3 ? strtoull(argv[3], NULL, 10) : 1;
	uint64_t r = 0x9e3779b97f4a7c15ull; /* xorshift state: each round's unit */
	struct timespec t0, now;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		/*
		 * ~1 ms per unit of the ratio: a sample lands in one or the other. The unit varies
		 * from round to round (0.5-1.5x, the same for both): a round of a fixed length beside
		 * a sampling period of a fixed length aliases (a 2:1 round of ~3 ms sampled every
		 * 2 ms came out 57:43 on a slower host).
		 */
		uint64_t unit;

		r ^= r << 13;
		r ^= r >> 7;
		r ^= r << 17;
		unit = 100000 + r % 200000;
		hot_x(x * unit);
		hot_y(y * unit);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while ((now.tv_sec - t0.tv_sec) + (now.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
	return 0;
}

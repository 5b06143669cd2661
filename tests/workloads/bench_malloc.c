// SPDX-License-Identifier: Apache-2.0
/*
 * Malloc-heavy benchmark workload: one thread allocates blocks of 16 bytes to 4 KiB and frees
 * each after 64 others (a ring of live blocks), for SECONDS; prints the allocations (each
 * with its free) per second of wall-clock time and per second of its own CPU time.
 *
 *   bench_malloc SECONDS [wait]   ->   allocs=N secs=S allocs_per_s=R allocs_per_cpu_s=C
 *
 * With "wait" it prints "ready" and starts on SIGUSR1 (after the profiler attached).
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double clock_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 5, t0, c0, t1, c1;
	static void *ring[64];
	uint64_t rng = 88172645463325252ull, n = 0;
	sigset_t set;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	if (argc > 2 && !strcmp(argv[2], "wait")) {
		printf("ready\n");
		fflush(stdout);
		sigwait(&set, &sig);
	}
	t0 = clock_s(CLOCK_MONOTONIC);
	c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
	do {
		for (int i = 0; i < 1024; i++, n++) {
			size_t slot = n % 64;

			rng ^= rng << 13;
			rng ^= rng >> 7;
			rng ^= rng << 17;
			free(ring[slot]);
			ring[slot] = malloc(16 + rng % 4080);
			if (!ring[slot])
				abort();
			*(volatile char *)ring[slot] = 1;
		}
		t1 = clock_s(CLOCK_MONOTONIC);
	} while (t1 - t0 < secs);
	c1 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
	printf("allocs=%llu secs=%.3f allocs_per_s=%.0f allocs_per_cpu_s=%.0f\n",
	       (unsigned long long)n, t1 - t0, (double)n / (t1 - t0), (double)n / (c1 - c0));
	return 0;
}

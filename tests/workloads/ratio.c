// SPDX-License-Identifier: Apache-2.0
/*
 * Known-ratio CPU workload: hot_a, hot_b and hot_c burn thread CPU time in the ratio
 * 50:30:20, in small interleaved slices, so a correct profiler attributes 50/30/20% of the
 * samples of this process to them (leaf frames).
 *
 * usage: ratio [SECONDS] [THREADS]   (default 10 s, 1 thread, named "ratio-worker-N")
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double seconds = 10;

static unsigned long long thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/*
 * Spin until this thread has used @ns more CPU time; inlined into each hot_*. The clock is
 * a syscall, so it is read only every ~25 us to keep kernel time out of the ratio.
 */
static inline __attribute__((always_inline)) void burn(unsigned long long ns)
{
	unsigned long long end = thread_cpu_ns() + ns;
	volatile unsigned long x = 0;

	while (thread_cpu_ns() < end)
		for (int i = 0; i < 50000; i++)
			x += i;
}

__attribute__((noinline)) void hot_a(void)
{
	burn(5000000);
}

__attribute__((noinline)) void hot_b(void)
{
	burn(3000000);
}

__attribute__((noinline)) void hot_c(void)
{
	burn(2000000);
}

__attribute__((noinline)) void run_ratio(void)
{
	struct timespec t0, now;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		hot_a();
		hot_b();
		hot_c();
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while ((now.tv_sec - t0.tv_sec) + (now.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
}

static void *worker(void *arg)
{
	char name[16];

	snprintf(name, sizeof(name), "ratio-worker-%ld", (long)arg);
	pthread_setname_np(pthread_self(), name);
	run_ratio();
	return NULL;
}

int main(int argc, char **argv)
{
	long threads = 1;
	pthread_t tids[64];

	if (argc > 1)
		seconds = atof(argv[1]);
	if (argc > 2)
		threads = atol(argv[2]);
	if (threads < 1 || threads > 64)
		threads = 1;
	for (long i = 0; i < threads; i++)
		pthread_create(&tids[i], NULL, worker, (void *)i);
	for (long i = 0; i < threads; i++)
		pthread_join(tids[i], NULL);
	return 0;
}

// SPDX-License-Identifier: Apache-2.0
/*
 * CFI workload, multithreaded and through libc: THREADS threads (named cfi-mt-N) each run
 * worker -> stage -> {hot_x | sort_stage -> qsort (libc) -> cmp -> hot_y}, with hot_x and
 * sort_stage taking thread CPU time in the ratio 60:40. A complete stack reaches worker
 * (the thread start routine) through libc's own frames when sorting.
 *
 * usage: cfi_mt [SECONDS] [THREADS]   (default 10 s, 2 threads)
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

__attribute__((noinline)) void hot_x(void)
{
	unsigned long long end = thread_cpu_ns() + 6000000;
	volatile unsigned long x = 0;

	while (thread_cpu_ns() < end)
		for (int i = 0; i < 50000; i++)
			x += i;
}

__attribute__((noinline)) int hot_y(int a, int b)
{
	volatile unsigned long x = 0;

	for (int i = 0; i < 200; i++)
		x += i;
	return (a > b) - (a < b);
}

static int cmp(const void *a, const void *b)
{
	int r = hot_y(*(const int *)a, *(const int *)b);

	__asm__ volatile("" ::: "memory"); /* a real call, not a tail jump: cmp keeps a frame */
	return r;
}

__attribute__((noinline)) void sort_stage(unsigned int *seed)
{
	unsigned long long end = thread_cpu_ns() + 4000000;
	int v[64]; /* small sorts: the deadline is overshot by a fraction of one */

	while (thread_cpu_ns() < end) {
		for (int i = 0; i < 64; i++)
			v[i] = rand_r(seed);
		qsort(v, 64, sizeof(v[0]), cmp);
	}
}

__attribute__((noinline)) void stage(unsigned int *seed)
{
	hot_x();
	sort_stage(seed);
	__asm__ volatile("" ::: "memory");
}

static void *worker(void *arg)
{
	unsigned int seed = (unsigned int)(unsigned long)arg;
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		stage(&seed);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (t.tv_sec - t0.tv_sec + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 2 ? atoi(argv[2]) : 2;
	pthread_t th[64];
	char name[16];

	if (argc > 1)
		seconds = atof(argv[1]);
	if (n < 1 || n > 64)
		n = 2;
	for (int i = 0; i < n; i++) {
		pthread_create(&th[i], NULL, worker, (void *)(unsigned long)(i + 1));
		snprintf(name, sizeof(name), "cfi-mt-%d", i);
		pthread_setname_np(th[i], name);
	}
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	return 0;
}

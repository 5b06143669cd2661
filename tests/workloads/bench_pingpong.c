// SPDX-License-Identifier: Apache-2.0
/*
 * Context-switch-heavy benchmark workload: two threads pass a byte back and forth over two
 * pipes, each blocking in read() for the other, for SECONDS; prints round trips per second
 * (each round trip is two switches at least).
 *
 *   bench_pingpong SECONDS   ->   rounds=N secs=S rounds_per_s=R
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int ab[2], ba[2];
static volatile int done;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *pong(void *arg)
{
	char c;

	pthread_setname_np(pthread_self(), "pong");
	while (read(ab[0], &c, 1) == 1 && c)
		if (write(ba[1], &c, 1) != 1)
			break;
	return NULL;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 5, t0, t;
	uint64_t rounds = 0;
	pthread_t th;
	char c = 1;

	if (pipe(ab) || pipe(ba))
		return 1;
	pthread_create(&th, NULL, pong, NULL);
	t0 = now();
	do {
		for (int i = 0; i < 1000; i++) {
			if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1)
				return 1;
		}
		rounds += 1000;
		t = now();
	} while (t - t0 < secs);
	c = 0;
	if (write(ab[1], &c, 1) != 1)
		return 1;
	pthread_join(th, NULL);
	printf("rounds=%llu secs=%.3f rounds_per_s=%.0f\n", (unsigned long long)rounds, t - t0,
	       (double)rounds / (t - t0));
	return 0;
}

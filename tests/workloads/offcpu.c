// SPDX-License-Identifier: Apache-2.0
/*
 * Off-CPU workload: thread "waiter" alternates a 30 ms sleep (nanosleep) and a blocking pipe
 * read that thread "feeder" satisfies 10 ms later (a write every 40 ms on an absolute clock),
 * so it waits 3:1 in do_nanosleep and pipe_read; thread "burner" spins on the CPU all along.
 *
 *   offcpu SECONDS     prints, at the end: waiter_cpu_ns=N wall_ns=N reads=N
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int pipefd[2];
static volatile int done;
static uint64_t waiter_cpu_ns, reads;

static uint64_t ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void __attribute__((noinline)) wait_sleep(void)
{
	struct timespec d = { 0, 30 * 1000000 };

	nanosleep(&d, NULL);
}

static int __attribute__((noinline)) wait_pipe(void)
{
	char c;

	return (int)read(pipefd[0], &c, 1);
}

static void *waiter(void *arg)
{
	pthread_setname_np(pthread_self(), "waiter");
	while (!done) {
		wait_sleep();
		if (wait_pipe() == 1)
			reads++;
	}
	waiter_cpu_ns = ns(CLOCK_THREAD_CPUTIME_ID);
	return NULL;
}

static void *feeder(void *arg)
{
	struct timespec next;

	pthread_setname_np(pthread_self(), "feeder");
	clock_gettime(CLOCK_MONOTONIC, &next);
	while (!done) {
		next.tv_nsec += 40 * 1000000;
		if (next.tv_nsec >= 1000000000) {
			next.tv_nsec -= 1000000000;
			next.tv_sec++;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
		if (write(pipefd[1], "x", 1) != 1)
			break;
	}
	return NULL;
}

static volatile uint64_t sink;

static void __attribute__((noinline)) burn(void)
{
	uint64_t x = sink;

	for (int i = 0; i < 1000000; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	sink = x;
}

static void *burner(void *arg)
{
	pthread_setname_np(pthread_self(), "burner");
	while (!done)
		burn();
	return NULL;
}

int main(int argc, char **argv)
{
	int secs = argc > 1 ? atoi(argv[1]) : 10;
	pthread_t w, f, b;
	uint64_t t0 = ns(CLOCK_MONOTONIC);

	if (pipe(pipefd))
		return 1;
	pthread_create(&w, NULL, waiter, NULL);
	pthread_create(&f, NULL, feeder, NULL);
	pthread_create(&b, NULL, burner, NULL);
	sleep(secs);
	done = 1;
	if (write(pipefd[1], "x", 1) != 1) /* a waiter blocked in read must see done */
		return 1;
	pthread_join(w, NULL);
	pthread_join(f, NULL);
	pthread_join(b, NULL);
	printf("waiter_cpu_ns=%llu wall_ns=%llu reads=%llu\n", (unsigned long long)waiter_cpu_ns,
	       (unsigned long long)(ns(CLOCK_MONOTONIC) - t0), (unsigned long long)reads);
	return 0;
}

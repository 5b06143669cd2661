// SPDX-License-Identifier: Apache-2.0
/*
 * Benchmark workload with a known truth and a throughput figure. Each round calls hot_a,
 * hot_b and hot_c with 5:3:2 iterations of the same loop body (identical cost per iteration),
 * so they take 50/30/20% of the thread's CPU time. The truth is measured, not assumed: each
 * call is bracketed by CLOCK_THREAD_CPUTIME_ID reads and the shares of the process's CPU
 * time are printed at exit, with the throughput (rounds per second).
 *
 * usage: bench_ratio [SECONDS] [THREADS] [ITERS_PER_ROUND]
 * prints one line: rounds=N seconds=S rate=R threads=T truth_hot_a=F truth_hot_b=F truth_hot_c=F
 * Stacks: main -> run_ratio -> hot_*, or start_thread -> ratio_thread -> run_ratio -> hot_*.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static double seconds = 5;
static uint64_t iters = 200000; /* per round: hot_a 5/10, hot_b 3/10, hot_c 2/10 */
/* different sinks keep gcc's identical code folding from merging the three functions */
static volatile uint64_t sink_a, sink_b, sink_c;

struct tally {
	uint64_t rounds;
	uint64_t ns_a, ns_b, ns_c;
};

#define SPIN(n, sink)                                                                        \
	do {                                                                                 \
		uint64_t x = (sink);                                                         \
		for (uint64_t i = 0; i < (n); i++) {                                         \
			x = x * 6364136223846793005ull + 1442695040888963407ull;             \
			__asm__ volatile("" : "+r"(x));                                      \
		}                                                                            \
		(sink) = x;                                                                  \
	} while (0)

__attribute__((noinline)) void hot_a(uint64_t n)
{
	SPIN(n, sink_a);
}

__attribute__((noinline)) void hot_b(uint64_t n)
{
	SPIN(n, sink_b);
}

__attribute__((noinline)) void hot_c(uint64_t n)
{
	SPIN(n, sink_c);
}

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void run_ratio(struct tally *t)
{
	double end = now_s() + seconds;
	uint64_t t0, t1, t2, t3;

	do {
		t0 = cpu_ns();
		hot_a(iters / 10 * 5);
		t1 = cpu_ns();
		hot_b(iters / 10 * 3);
		t2 = cpu_ns();
		hot_c(iters / 10 * 2);
		t3 = cpu_ns();
		t->ns_a += t1 - t0;
		t->ns_b += t2 - t1;
		t->ns_c += t3 - t2;
		t->rounds++;
	} while (now_s() < end);
}

__attribute__((noinline)) void *ratio_thread(void *arg)
{
	run_ratio(arg);
	return NULL;
}

int main(int argc, char **argv)
{
	long threads = 1;
	pthread_t tids[256];
	struct tally tally[256] = { 0 }, sum = { 0 };
	struct rusage ru;
	double t0, cpu;

	if (argc > 1)
		seconds = atof(argv[1]);
	if (argc > 2)
		threads = atol(argv[2]);
	if (argc > 3)
		iters = strtoull(argv[3], NULL, 10);
	if (threads < 1 || threads > 256)
		threads = 1;
	t0 = now_s();
	if (threads == 1) {
		run_ratio(&tally[0]);
	} else {
		for (long i = 0; i < threads; i++)
			pthread_create(&tids[i], NULL, ratio_thread, &tally[i]);
		for (long i = 0; i < threads; i++)
			pthread_join(tids[i], NULL);
	}
	t0 = now_s() - t0;
	for (long i = 0; i < threads; i++) {
		sum.rounds += tally[i].rounds;
		sum.ns_a += tally[i].ns_a;
		sum.ns_b += tally[i].ns_b;
		sum.ns_c += tally[i].ns_c;
	}
	getrusage(RUSAGE_SELF, &ru);
	cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
	      ru.ru_stime.tv_usec / 1e6;
	printf("rounds=%llu seconds=%.3f rate=%.2f threads=%ld cpu=%.3f truth_hot_a=%.5f "
	       "truth_hot_b=%.5f truth_hot_c=%.5f\n",
	       (unsigned long long)sum.rounds, t0, sum.rounds / t0, threads, cpu,
	       sum.ns_a / 1e9 / cpu, sum.ns_b / 1e9 / cpu, sum.ns_c / 1e9 / cpu);
	return 0;
}

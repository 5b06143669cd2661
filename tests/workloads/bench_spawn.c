// SPDX-License-Identifier: Apache-2.0
/*
 * Benchmark workload: many short-lived processes. The parent fork+execs itself as a child
 * that burns about CHILD_MS of CPU in child_work (main -> child_work) and exits, two at a
 * time, for SECONDS. Profilers have to discover each new process, read its mappings and
 * symbolize it before or after it is gone.
 *
 * With PRE_MS, each forked child first burns PRE_MS of CPU in pre_exec_work (main ->
 * pre_exec_work) before its exec: the parent's program, in the child's pid.
 *
 * usage: bench_spawn [SECONDS] [CHILD_MS] [PRE_MS]     (default 5 s, 20 ms, 0 ms)
 * prints: children=N child_cpu=S seconds=S
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile uint64_t sink;

static double clock_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void burn(double ms)
{
	double end = clock_s(CLOCK_PROCESS_CPUTIME_ID) + ms / 1000;
	uint64_t x = sink;

	while (clock_s(CLOCK_PROCESS_CPUTIME_ID) < end) {
		for (int i = 0; i < 20000; i++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			__asm__ volatile("" : "+r"(x));
		}
	}
	sink = x;
}

__attribute__((noinline)) void child_work(double ms)
{
	burn(ms);
	__asm__ volatile("");
}

__attribute__((noinline)) void pre_exec_work(double ms)
{
	burn(ms);
	__asm__ volatile("");
}

int main(int argc, char **argv)
{
	double seconds, end, ms, pre_ms;
	unsigned long children = 0;
	int running = 0;
	struct rusage ru;
	char self[4096];
	ssize_t n;

	if (argc > 2 && !strcmp(argv[1], "child")) {
		child_work(atof(argv[2]));
		return 0;
	}
	seconds = argc > 1 ? atof(argv[1]) : 5;
	ms = argc > 2 ? atof(argv[2]) : 20;
	pre_ms = argc > 3 ? atof(argv[3]) : 0;
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0)
		return 1;
	self[n] = 0;
	end = clock_s(CLOCK_MONOTONIC) + seconds;
	char msarg[32];

	snprintf(msarg, sizeof(msarg), "%g", ms);
	while (clock_s(CLOCK_MONOTONIC) < end || running) {
		if (running < 2 && clock_s(CLOCK_MONOTONIC) < end) {
			pid_t pid = fork();

			if (pid == 0) {
				if (pre_ms > 0)
					pre_exec_work(pre_ms);
				execl(self, self, "child", msarg, (char *)NULL);
				_exit(127);
			}
			if (pid > 0) {
				running++;
				children++;
			}
			continue;
		}
		if (wait(NULL) > 0)
			running--;
		else
			running = 0;
	}
	getrusage(RUSAGE_CHILDREN, &ru);
	printf("children=%lu child_cpu=%.3f seconds=%.3f\n", children,
	       ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
		       ru.ru_stime.tv_usec / 1e6,
	       seconds);
	return 0;
}

// SPDX-License-Identifier: Apache-2.0
/*
 * Reliability workload: an exec storm. The parent starts RATE short-lived processes a second
 * (posix_spawn of itself as "rel_storm child MS", up to 64 alive at once) for SECONDS; each
 * child burns about MS of CPU in rel_storm_burn and exits. The profiler has to discover each
 * process, symbolize it, and keep attributing samples after the process is gone.
 *
 * usage: rel_storm RATE SECONDS [MS]        (MS default 2)
 * prints on exit: spawned=N seconds=S rate=R/s
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;
static volatile uint64_t sink;

static double clock_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void rel_storm_burn(double ms)
{
	double end = clock_s(CLOCK_PROCESS_CPUTIME_ID) + ms / 1000;
	uint64_t x = sink;

	while (clock_s(CLOCK_PROCESS_CPUTIME_ID) < end) {
		for (int i = 0; i < 5000; i++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			__asm__ volatile("" : "+r"(x));
		}
	}
	sink = x;
}

int main(int argc, char **argv)
{
	double rate, secs, t0, next, now;
	unsigned long spawned = 0, failed = 0;
	int alive = 0;
	char self[4096];
	ssize_t n;

	if (argc >= 3 && !strcmp(argv[1], "child")) {
		rel_storm_burn(atof(argv[2]));
		return 0;
	}
	if (argc < 3) {
		fprintf(stderr, "usage: rel_storm RATE SECONDS [MS]\n");
		return 2;
	}
	rate = atof(argv[1]);
	secs = atof(argv[2]);
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0 || rate <= 0)
		return 2;
	self[n] = '\0';
	char *child_argv[] = { self, "child", argc > 3 ? argv[3] : "2", NULL };

	t0 = next = clock_s(CLOCK_MONOTONIC);
	while ((now = clock_s(CLOCK_MONOTONIC)) < t0 + secs) {
		pid_t pid;

		while (alive > 0 && waitpid(-1, NULL, WNOHANG) > 0)
			alive--;
		if (now < next) {
			struct timespec ts = { 0, (long)((next - now) * 1e9) };

			nanosleep(&ts, NULL);
			continue;
		}
		next += 1.0 / rate;
		if (alive >= 64) {
			if (waitpid(-1, NULL, 0) > 0)
				alive--;
		}
		if (posix_spawn(&pid, self, NULL, NULL, child_argv, environ) == 0) {
			spawned++;
			alive++;
		} else {
			failed++;
		}
	}
	while (alive > 0 && waitpid(-1, NULL, 0) > 0)
		alive--;
	now = clock_s(CLOCK_MONOTONIC);
	printf("spawned=%lu failed=%lu seconds=%.2f rate=%.1f/s\n", spawned, failed, now - t0,
	       spawned / (now - t0));
	return 0;
}

// SPDX-License-Identifier: Apache-2.0
/*
 * Reliability workload: N mostly-sleeping processes, for the profiler's load test. Forks N
 * children that block in pause() (every 256th wakes once a second for 10 ms of CPU), prints
 * "ready N" when all exist, and ends them all on SIGTERM/SIGINT or after SECONDS.
 *
 * usage: rel_sleepers N SECONDS
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop;
static volatile uint64_t sink;

static void on_signal(int sig)
{
	stop = 1;
}

/* about 10 ms of CPU */
__attribute__((noinline)) static void rel_sleeper_tick(void)
{
	struct timespec a, b;
	uint64_t x = sink;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	do {
		for (int i = 0; i < 10000; i++)
			x = x * 6364136223846793005ull + 1;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
	} while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < 10000000L);
	sink = x;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000, made = 0;
	int secs = argc > 2 ? atoi(argv[2]) : 60;
	pid_t *pids = calloc(n > 0 ? n : 1, sizeof(pid_t));

	if (!pids)
		return 1;
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	for (long i = 0; i < n && !stop; i++) {
		pid_t pid = fork();

		if (pid == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			signal(SIGTERM, SIG_DFL);
			for (;;) {
				if (i % 256 == 0) {
					rel_sleeper_tick();
					sleep(1);
				} else {
					pause();
				}
			}
		}
		if (pid < 0) {
			fprintf(stderr, "rel_sleepers: fork %ld failed\n", i);
			break;
		}
		pids[made++] = pid;
	}
	printf("ready %ld\n", made);
	fflush(stdout);
	for (int s = 0; s < secs * 10 && !stop; s++)
		usleep(100000);
	for (long i = 0; i < made; i++)
		kill(pids[i], SIGKILL);
	while (wait(NULL) > 0)
		;
	return 0;
}

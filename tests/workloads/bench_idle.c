// SPDX-License-Identifier: Apache-2.0
/*
 * Benchmark workload: an idle-ish host. Forks N processes that sleep (each with a couple of
 * threads, like daemons), waits SECONDS or until SIGTERM, then kills them all.
 *
 * usage: bench_idle [SECONDS] [N]   (default 30 s, 300 processes)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	stop = 1;
}

static void *sleeper(void *arg)
{
	for (;;)
		pause();
	return NULL;
}

__attribute__((noinline)) void idle_child(void)
{
	pthread_t t;

	pthread_create(&t, NULL, sleeper, NULL);
	for (;;)
		pause();
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 30;
	int n = argc > 2 ? atoi(argv[2]) : 300;
	pid_t *pids = calloc(n > 0 ? n : 1, sizeof(*pids));
	int started = 0;

	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	for (int i = 0; i < n; i++) {
		pid_t pid = fork();

		if (pid == 0) {
			signal(SIGTERM, SIG_DFL);
			idle_child();
		}
		if (pid > 0)
			pids[started++] = pid;
	}
	printf("sleepers=%d\n", started);
	fflush(stdout);
	for (double t = 0; !stop && t < seconds; t += 0.1)
		usleep(100000);
	for (int i = 0; i < started; i++)
		kill(pids[i], SIGKILL);
	while (wait(NULL) > 0)
		;
	return 0;
}

// SPDX-License-Identifier: Apache-2.0
/*
 * Allocation workload: three functions allocate 3:1:1 by bytes - alloc_hot and alloc_warm
 * free what they allocate, alloc_keep keeps it - in sizes spread from 16 bytes to 16 KiB,
 * through malloc, calloc, realloc, posix_memalign and aligned_alloc.
 *
 *   alloc [MIB [wait|loop|hostile]]   MIB: bytes allocated in all (default 64 MiB)
 *
 * With "wait" it blocks until SIGUSR1 before allocating (the test starts its recording in
 * between). When done it prints "done TOTAL HOT WARM KEEP" (bytes asked for) on stdout and
 * sleeps, holding alloc_keep's memory, until killed. With "loop" it starts again after each
 * run, first freeing what alloc_keep kept, until killed. With "hostile" it first does what
 * an allocation profiler must survive: sizes no allocator can give, calloc overflowing,
 * realloc(NULL, n) and realloc(p, 0), free(NULL), allocations in a signal handler, a child
 * that frees the parent's blocks and exits - then waits for SIGUSR1 and runs as "wait".
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

static uint64_t rng = 88172645463325252ull;

static size_t next_size(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	/* log-uniform-ish: 16 B .. 16 KiB */
	return (size_t)16 << (rng % 11) | (rng >> 32) % 16;
}

static void *volatile sink;
static void **kept;
static size_t n_kept, cap_kept;

/* One allocation of @size bytes, rotating through the allocator's entry points. */
static __attribute__((noinline)) void *one(size_t size, unsigned int how)
{
	void *p = NULL;

	switch (how % 5) {
	case 0:
	case 1:
		p = malloc(size);
		break;
	case 2:
		p = calloc(1, size);
		break;
	case 3:
		if (posix_memalign(&p, 64, size))
			p = NULL;
		break;
	case 4:
		p = aligned_alloc(64, (size + 63) & ~(size_t)63);
		break;
	}
	if (!p)
		abort();
	memset(p, 1, size < 64 ? size : 64);
	return p;
}

static __attribute__((noinline)) size_t alloc_hot(size_t budget)
{
	size_t done = 0;

	for (unsigned int i = 0; done < budget; i++) {
		size_t s = next_size();
		void *p = one(s, i);

		done += i % 5 == 4 ? (s + 63) & ~(size_t)63 : s;
		sink = p;
		free(p);
	}
	return done;
}

static __attribute__((noinline)) size_t alloc_warm(size_t budget)
{
	size_t done = 0;

	for (unsigned int i = 0; done < budget; i++) {
		/* grown by realloc: the first block is freed by it, the second one by free */
		size_t s = next_size(), s2 = s + next_size();
		void *p = malloc(s), *q;

		if (!p)
			abort();
		q = realloc(p, s2);
		if (!q)
			abort();
		done += s + s2;
		sink = q;
		free(q);
	}
	return done;
}

static __attribute__((noinline)) size_t alloc_keep(size_t budget)
{
	size_t done = 0;

	for (unsigned int i = 0; done < budget; i++) {
		size_t s = next_size();
		void *p = one(s, i);

		done += i % 5 == 4 ? (s + 63) & ~(size_t)63 : s;
		if (n_kept == cap_kept) {
			/* the list itself is not counted: a few KiB, outside the three functions */
			cap_kept = cap_kept ? cap_kept * 2 : 4096;
			kept = realloc(kept, cap_kept * sizeof(*kept));
			if (!kept)
				abort();
		}
		kept[n_kept++] = p;
	}
	return done;
}

static void on_alarm(int sig)
{
	/* not async-signal-safe by POSIX, done by real programs anyway */
	free(malloc(4096 + sig));
}

static void hostile(void)
{
	void *blocks[256];
	struct sigaction sa = { .sa_handler = on_alarm };
	pid_t child;

	volatile size_t huge = (size_t)1 << 62, max = SIZE_MAX, n = (size_t)1 << 40;

	sink = malloc(huge);	   /* fails */
	sink = calloc(n, 1 << 30); /* overflows: fails */
	sink = malloc(max);
	free(NULL);
	sink = realloc(NULL, 1000);
	sink = realloc(sink, 0); /* frees */
	sigaction(SIGALRM, &sa, NULL);
	for (int i = 0; i < 256; i++) {
		blocks[i] = malloc(1 << 16);
		ualarm(100, 0);
		for (volatile int j = 0; j < 20000; j++)
			;
	}
	child = fork();
	if (child == 0) {
		for (int i = 0; i < 256; i++)
			free(blocks[i]);
		_exit(0);
	}
	waitpid(child, NULL, 0);
	for (int i = 0; i < 256; i++)
		free(blocks[i]);
}

int main(int argc, char **argv)
{
	size_t total = (argc > 1 ? strtoull(argv[1], NULL, 10) : 64) << 20, hot = 0, warm = 0,
	       keep = 0;
	sigset_t set;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	if (argc > 2 && !strcmp(argv[2], "hostile")) {
		printf("ready\n");
		fflush(stdout);
		sigwait(&set, &sig);
		hostile();
		printf("hostile done\n");
		fflush(stdout);
	}
	if (argc > 2 && (!strcmp(argv[2], "wait") || !strcmp(argv[2], "hostile"))) {
		printf("ready\n");
		fflush(stdout);
		sigwait(&set, &sig);
	}
again:
	/* in rounds, so that the three run interleaved over the whole run */
	for (int round = 0; round < 50; round++) {
		hot += alloc_hot(total * 3 / 5 / 50);
		warm += alloc_warm(total / 5 / 50);
		keep += alloc_keep(total / 5 / 50);
	}
	printf("done %zu %zu %zu %zu\n", hot + warm + keep, hot, warm, keep);
	fflush(stdout);
	if (argc > 2 && !strcmp(argv[2], "loop")) {
		usleep(100000);
		while (n_kept)
			free(kept[--n_kept]);
		hot = warm = keep = 0;
		goto again;
	}
	for (;;)
		pause();
}

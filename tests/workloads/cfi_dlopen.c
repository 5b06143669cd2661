// SPDX-License-Identifier: Apache-2.0
/*
 * CFI workload with a library loaded late: spins in before_load for DELAY seconds, then
 * dlopen()s libcfi_plugin.so (libcfi_plugin-nofp.so when this binary's name ends in -nofp)
 * from its own directory and spends the rest of the time in call_plugin -> plugin_hot ->
 * plugin_inner. A profiler that read the process's mappings at start must notice the new
 * mapping to unwind through the library.
 *
 * usage: cfi_dlopen [SECONDS] [DELAY]   (default 10 s, 1 s)
 */
#include <dlfcn.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

__attribute__((noinline)) void before_load(double until)
{
	volatile unsigned long x = 0;

	while (now() < until)
		for (int i = 0; i < 50000; i++)
			x += i;
}

__attribute__((noinline)) void call_plugin(void (*fn)(double), double until)
{
	fn(until);
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 10;
	double delay = argc > 2 ? atof(argv[2]) : 1;
	double t0 = now();
	char exe[4096], path[4200];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	void *h;
	void (*fn)(double);

	if (n <= 0)
		return 1;
	exe[n] = 0;
	before_load(t0 + delay);
	snprintf(path, sizeof(path), "%s/libcfi_plugin%s.so", dirname(strdup(exe)),
		 n > 5 && !strcmp(exe + n - 5, "-nofp") ? "-nofp" : "");
	h = dlopen(path, RTLD_NOW);
	if (!h) {
		fprintf(stderr, "cfi_dlopen: cannot load %s: %s\n", path, dlerror());
		return 1;
	}
	fn = (void (*)(double))dlsym(h, "plugin_hot");
	if (!fn)
		return 1;
	call_plugin(fn, t0 + seconds);
	return 0;
}

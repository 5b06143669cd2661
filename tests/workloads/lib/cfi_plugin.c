// SPDX-License-Identifier: Apache-2.0
/* Shared library cfi_dlopen loads after start: plugin_hot -> plugin_inner burn CPU. */
#include <time.h>

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

__attribute__((noinline)) void plugin_inner(void)
{
	volatile unsigned long x = 0;

	for (int i = 0; i < 200000; i++)
		x += i;
}

__attribute__((visibility("default"))) void plugin_hot(double until)
{
	while (now() < until) {
		plugin_inner();
		__asm__ volatile("" ::: "memory");
	}
}

// SPDX-License-Identifier: Apache-2.0
/*
 * libotelprof_alloc.so: allocation sampling inside the process, for `otelprof record --alloc`
 * (README "Memory allocations"). Preloaded (LD_PRELOAD) over glibc's allocator, it decides
 * the samples itself - per thread, one after an exponentially distributed number of bytes of
 * mean OTELPROF_ALLOC_MEAN (default 524288), as Go and tcmalloc do - and calls
 * otelprof_alloc_sampled() only for a sampled allocation and otelprof_alloc_freed() only for
 * the free of one. The profiler's uprobes sit on those two functions: the process traps on
 * sampled calls only, where uprobes on malloc and free trap on every call.
 *
 * Self-contained: glibc's own entry points (__libc_malloc...) underneath, no dlsym (which
 * allocates), no libm. The addresses of live sampled blocks are kept in a lock-free table so
 * that free() of any other block costs one atomic load when none is live, a short probe
 * otherwise. A full table still reports the sample, marked untracked (no in-use entry).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *ptr, size_t size);
extern void __libc_free(void *ptr);
extern void *__libc_memalign(size_t align, size_t size);
extern void *__libc_valloc(size_t size);
extern void *__libc_pvalloc(size_t size);

#define API __attribute__((visibility("default")))
#define TLS __thread __attribute__((tls_model("initial-exec")))

/* ---------------------------------------------------------------- the profiler's markers */

/*
 * otelprof_alloc_sampled(addr, size, mean, tracked): a sampled allocation - @addr, @size bytes
 * asked for, drawn at @mean bytes; @tracked: its free will be reported. The uprobe takes the
 * stack here. otelprof_alloc_freed(addr): a sampled allocation is freed.
 *
 * Written in assembly so that each starts with a 5-byte nop, the instruction the kernel
 * probes cheapest (emulated, no single step; on kernels that optimize uprobes, a call instead
 * of a trap), and stays a function of its own (with its CFI for the stack walk).
 */
#define MARKER(name)                                   \
	__asm__(".text\n"                              \
		".globl " #name "\n"                   \
		".type " #name ", @function\n"         \
		".p2align 4\n" #name ":\n"             \
		".cfi_startproc\n"                     \
		".byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n" \
		"ret\n"                                \
		".cfi_endproc\n"                       \
		".size " #name ", . - " #name "\n")

MARKER(otelprof_alloc_sampled);
MARKER(otelprof_alloc_freed);
API void otelprof_alloc_sampled(void *addr, size_t size, size_t mean, int tracked);
API void otelprof_alloc_freed(void *addr);

/* ---------------------------------------------------------------- sampling */

static size_t mean = 512 << 10;

static TLS int64_t left;
static TLS uint64_t rng;

static double ln01(double x) /* ln(x), 0 < x <= 1 */
{
	double z, z2, term, sum = 0;
	int e = 0;

	while (x < 0.5) {
		x *= 2;
		e++;
	}
	z = (x - 1) / (x + 1);
	z2 = z * z;
	term = z;
	for (int k = 1; k < 60; k += 2) {
		sum += term / k;
		term *= z2;
	}
	return 2 * sum - e * 0.69314718055994530942;
}

static int64_t draw(void)
{
	double u;

	if (!rng) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		rng = (((uint64_t)ts.tv_nsec << 20) ^ (uintptr_t)&left ^ (uint64_t)gettid()) | 1;
	}
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	u = ((double)(rng >> 11) + 0.5) * 0x1p-53;
	return (int64_t)(-ln01(u) * (double)mean) + 1;
}

/* ---------------------------------------------------------------- live sampled blocks */

#define SLOTS (1u << 16)
#define TOMB  ((uintptr_t)1)

static _Atomic uintptr_t slots[SLOTS];
static atomic_long live;

static uint32_t slot_of(uintptr_t a)
{
	return (uint32_t)(((a >> 4) * 0x9e3779b97f4a7c15ull) >> 48) & (SLOTS - 1);
}

static int remember(uintptr_t a)
{
	for (uint32_t i = 0, s = slot_of(a); i < 256; i++, s = (s + 1) & (SLOTS - 1)) {
		uintptr_t cur = atomic_load_explicit(&slots[s], memory_order_relaxed);

		if ((cur == 0 || cur == TOMB) &&
		    atomic_compare_exchange_strong(&slots[s], &cur, a)) {
			atomic_fetch_add(&live, 1);
			return 1;
		}
	}
	return 0;
}

static int forget(uintptr_t a)
{
	for (uint32_t i = 0, s = slot_of(a); i < 256; i++, s = (s + 1) & (SLOTS - 1)) {
		uintptr_t cur = atomic_load_explicit(&slots[s], memory_order_relaxed);

		if (cur == 0)
			return 0;
		if (cur == a && atomic_compare_exchange_strong(&slots[s], &cur, TOMB)) {
			atomic_fetch_sub(&live, 1);
			return 1;
		}
	}
	return 0;
}

/* ---------------------------------------------------------------- the allocator's API */

static inline void *sampled(void *p, size_t size)
{
	if (!p || !size)
		return p;
	if (!left)
		left = draw();
	if (left > 0 && size < (uint64_t)left) {
		left -= (int64_t)size;
		return p;
	}
	left = draw();
	otelprof_alloc_sampled(p, size, mean, remember((uintptr_t)p));
	return p;
}

static inline void released(void *p)
{
	if (p && atomic_load_explicit(&live, memory_order_relaxed) && forget((uintptr_t)p))
		otelprof_alloc_freed(p);
}

API void *malloc(size_t size)
{
	return sampled(__libc_malloc(size), size);
}

API void *calloc(size_t n, size_t size)
{
	return sampled(__libc_calloc(n, size), n * size); /* NULL on overflow: not sampled */
}

API void *realloc(void *ptr, size_t size)
{
	void *p = __libc_realloc(ptr, size);

	if (p || !size)
		released(ptr); /* the old block ends (realloc(p, 0) frees it) */
	return size ? sampled(p, size) : p;
}

API void free(void *ptr)
{
	released(ptr);
	__libc_free(ptr);
}

API void *memalign(size_t align, size_t size)
{
	return sampled(__libc_memalign(align, size), size);
}

API void *aligned_alloc(size_t align, size_t size)
{
	return sampled(__libc_memalign(align, size), size);
}

API int posix_memalign(void **out, size_t align, size_t size)
{
	void *p;

	if (align < sizeof(void *) || (align & (align - 1)))
		return EINVAL;
	p = __libc_memalign(align, size);
	if (!p)
		return ENOMEM;
	*out = sampled(p, size);
	return 0;
}

API void *valloc(size_t size)
{
	return sampled(__libc_valloc(size), size);
}

API void *pvalloc(size_t size)
{
	return sampled(__libc_pvalloc(size), size);
}

__attribute__((constructor)) static void init(void)
{
	const char *v = getenv("OTELPROF_ALLOC_MEAN");
	char *end;
	unsigned long long m;

	if (!v || !*v)
		return;
	m = strtoull(v, &end, 10);
	if (*end == 'k' || *end == 'K')
		m <<= 10, end++;
	else if (*end == 'm' || *end == 'M')
		m <<= 20, end++;
	if (!*end && m > 0 && m <= (1ull << 40))
		mean = (size_t)m;
	else {
		static const char msg[] = "libotelprof_alloc: OTELPROF_ALLOC_MEAN is not a byte "
					  "count (e.g. 524288, 512k): using 524288\n";

		if (write(2, msg, sizeof(msg) - 1) < 0)
			return;
	}
}

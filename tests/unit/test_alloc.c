// SPDX-License-Identifier: Apache-2.0
/*
 * Allocation sampling (lib/sample/alloc.c): the sampling probability the weights divide by,
 * and the allocator functions found by symbol in real libraries (glibc's aliases once, the
 * in-process sampler's markers absent from its list) and in bad images.
 */
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "sample/alloc.h"

/* 1 - exp(-x) another way (no libm here): a short series at x / 2^k, squared back k times. */
static double ref_prob(double x)
{
	long double y = x, e;
	int k = 0;

	while (y > 1e-4L) {
		y /= 2;
		k++;
	}
	e = 1 - y + y * y / 2 - y * y * y / 6 + y * y * y * y / 24;
	while (k--)
		e *= e;
	return x < 1e-4 ? (double)(y - y * y / 2 + y * y * y / 6) : (double)(1 - e);
}

static int sym_index(const char *name)
{
	for (size_t i = 0; i < OP_ALLOC_NSYMS; i++)
		if (!strcmp(op_alloc_sym_name(i), name))
			return (int)i;
	return -1;
}

/* The allocator functions of the file at @path; -1 when it cannot be read. */
static int syms_of_file(const char *path, uint64_t *off)
{
	struct stat st;
	void *m;
	int fd = open(path, O_RDONLY), n;

	if (fd < 0 || fstat(fd, &st)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	m = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return -1;
	n = op_alloc_syms_mem(m, st.st_size, off);
	munmap(m, st.st_size);
	return n;
}

int main(void)
{
	uint64_t off[OP_ALLOC_NSYMS];
	char libc[4096];
	int n;

	/* 1 - exp(-s/m), against libm, small and large sizes */
	for (double s = 1; s < 1e9; s *= 3.7) {
		uint64_t sz = (uint64_t)s;
		double want = ref_prob((double)sz / 524288), got = op_alloc_probability(sz, 524288);

		CHECK(got - want <= 1e-9 * want && want - got <= 1e-9 * want);
	}
	CHECK(op_alloc_probability(100, 0) == 1.0);
	CHECK(op_alloc_probability(1ull << 40, 512) == 1.0);

	/* glibc: malloc, free and the rest, the memalign/aligned_alloc alias at one address */
	CHECK(check_run("gcc -print-file-name=libc.so.6", libc, sizeof(libc)) == 0);
	if (libc[0] != '/')
		snprintf(libc, sizeof(libc), "/lib/x86_64-linux-gnu/libc.so.6");
	n = syms_of_file(libc, off);
	if (n < 0)
		SKIP("cannot read %s", libc);
	CHECK(n >= 9);
	for (const char *const *f =
		     (const char *const[]){ "malloc", "calloc", "realloc", "free", "posix_memalign",
					    "memalign", "valloc", NULL };
	     *f; f++)
		CHECK(sym_index(*f) >= 0 && off[sym_index(*f)] != 0);
	CHECK(off[sym_index("mallocx")] == 0); /* jemalloc's only */

	/* the in-process sampler: its own malloc, and no free of the markers in the list */
	n = syms_of_file("build/libotelprof_alloc.so", off);
	if (n >= 0) {
		CHECK(off[sym_index("malloc")] != 0 && off[sym_index("free")] != 0);
		CHECK(off[sym_index("malloc")] != off[sym_index("free")]);
	}

	/* not ELF, truncated ELF: nothing found, no crash */
	CHECK(op_alloc_syms_mem("not an elf file", 15, off) < 0);
	CHECK(op_alloc_syms_mem("\x7f"
				"ELF\2\1\1",
				7, off) < 0);
	return check_done();
}

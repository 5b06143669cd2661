// SPDX-License-Identifier: Apache-2.0
/*
 * Perf maps (lib/symbol/perfmap.c): the line formats JITs write (Node, Python -X perf, jcmd's
 * 0x-prefixed columns, CRLF), malformed lines counted, reused code space named by the later
 * line; then a live map of this process (/tmp/perf-PID.map) read as it grows, a line still
 * being written left for later. Jitdump files: a synthetic one in both byte orders, parsed
 * whole and a byte at a time (a record being written is left for later), code moved, records
 * whose size lies (too short for their name or code: skipped and counted; shorter than a
 * record header: nothing further read); then one this process maps, found and read.
 * `test_perfmap --seed FILE` writes the synthetic jitdump as the jitdump fuzzer's seed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "symbol/perfmap.h"

static void append(const char *path, const char *text)
{
	FILE *f = fopen(path, "a");

	REQUIRE(f);
	fputs(text, f);
	fclose(f);
}

/* A jitdump being written, in either byte order. */
struct jd {
	uint8_t b[4096];
	size_t n;
	bool swap;
};

static void put32(struct jd *d, uint32_t v)
{
	v = d->swap ? __builtin_bswap32(v) : v;
	memcpy(d->b + d->n, &v, 4);
	d->n += 4;
}

static void put64(struct jd *d, uint64_t v)
{
	v = d->swap ? __builtin_bswap64(v) : v;
	memcpy(d->b + d->n, &v, 8);
	d->n += 8;
}

static void jd_header(struct jd *d)
{
	put32(d, 0x4A695444); /* JiTD */
	put32(d, 1);	      /* version */
	put32(d, 40);	      /* header size */
	put32(d, 62);	      /* EM_X86_64 */
	put32(d, 0);
	put32(d, 4242); /* pid */
	put64(d, 1);	/* timestamp */
	put64(d, 0);	/* flags */
}

/* A code load record; @lie: added to its total_size. */
static void jd_load(struct jd *d, uint64_t addr, uint64_t size, const char *name, int lie)
{
	size_t len = strlen(name) + 1, total = 16 + 40 + len + size;

	put32(d, 0);
	put32(d, (uint32_t)((long)total + lie));
	put64(d, 2);
	put32(d, 4242);
	put32(d, 4243);
	put64(d, addr);
	put64(d, addr);
	put64(d, size);
	put64(d, 7);
	memcpy(d->b + d->n, name, len);
	d->n += len;
	memset(d->b + d->n, 0xcc, size); /* the code */
	d->n += size;
}

static void jd_move(struct jd *d, uint64_t from, uint64_t to, uint64_t size)
{
	put32(d, 1);
	put32(d, 16 + 48);
	put64(d, 3);
	put32(d, 4242);
	put32(d, 4243);
	put64(d, to);
	put64(d, from);
	put64(d, to);
	put64(d, size);
	put64(d, 8);
}

static void jd_other(struct jd *d, uint32_t id)
{
	put32(d, id);
	put32(d, 16 + 8);
	put64(d, 4);
	put64(d, 0xdeadbeef);
}

static void jd_build(struct jd *d, bool swap)
{
	memset(d, 0, sizeof(*d));
	d->swap = swap;
	jd_header(d);
	jd_load(d, 0x1000, 0x40, "JS:*heavyWork /x.js:9", 0);
	jd_other(d, 2); /* debug info */
	jd_load(d, 0x2000, 0x20, "JS:*lightWork /x.js:15", 0);
	jd_move(d, 0x2000, 0x8000, 0x20);
	jd_other(d, 4);	 /* unwinding info */
	jd_other(d, 99); /* an id to come */
	/* total_size lies: too short for the code it announces (the next record is intact) */
	jd_load(d, 0x3000, 0x10, "short", -8);
	d->n -= 8;
	jd_move(d, 0x5000, 0x6000, 0x10); /* code never loaded */
	jd_load(d, 0x4000, 0x10, "last", 0);
}

static void check_jitdump(bool swap)
{
	static struct jd d;
	struct op_perfmap m = { 0 };
	struct op_jitdump j = { 0 };
	size_t used = 0;

	jd_build(&d, swap);
	CHECK_EQ(op_jitdump_parse(&m, &j, d.b, d.n), (long)d.n);
	CHECK_EQ(j.swap, swap);
	CHECK_STR(op_perfmap_find(&m, 0x1000 + 0x3f, NULL), "JS:*heavyWork /x.js:9");
	CHECK(!op_perfmap_find(&m, 0x1040, NULL));
	CHECK_STR(op_perfmap_find(&m, 0x8010, NULL), "JS:*lightWork /x.js:15");
	CHECK(!op_perfmap_find(&m, 0x3000, NULL));
	CHECK(!op_perfmap_find(&m, 0x6000, NULL));
	CHECK_STR(op_perfmap_find(&m, 0x4000, NULL), "last");
	CHECK_EQ(m.n, 4);
	CHECK_EQ(m.bad_lines, 2);
	op_perfmap_clear(&m);

	/* a byte at a time, as a file being written: the same, header and records whole */
	j = (struct op_jitdump){ 0 };
	for (size_t end = 1; end <= d.n; end++) {
		long got = op_jitdump_parse(&m, &j, d.b + used, end - used);

		REQUIRE(got >= 0);
		used += (size_t)got;
	}
	CHECK_EQ(used, d.n);
	CHECK_EQ(m.n, 4);
	CHECK_STR(op_perfmap_find(&m, 0x8000, NULL), "JS:*lightWork /x.js:15");
	op_perfmap_clear(&m);

	/* a record whose size is shorter than a record header: sync lost, nothing further */
	j = (struct op_jitdump){ 0 };
	d.n = 0;
	jd_header(&d);
	jd_load(&d, 0x1000, 0x40, "kept", 0);
	jd_load(&d, 0x2000, 0x40, "lost sync", -(int)(16 + 40 + 10 + 0x40) + 8);
	jd_load(&d, 0x3000, 0x40, "after", 0);
	CHECK_EQ(op_jitdump_parse(&m, &j, d.b, d.n), -EINVAL);
	CHECK_STR(op_perfmap_find(&m, 0x1000, NULL), "kept");
	CHECK(!op_perfmap_find(&m, 0x3000, NULL));
	CHECK_EQ(op_jitdump_parse(&m, &j, d.b, d.n), -EINVAL);
	op_perfmap_clear(&m);

	/* not a jitdump */
	j = (struct op_jitdump){ 0 };
	memcpy(d.b, "5000 100 a perf map line\n", 25);
	CHECK_EQ(op_jitdump_parse(&m, &j, d.b, 64), -EINVAL);
	CHECK_EQ(m.n, 0);
	op_perfmap_clear(&m);
}

/* A jitdump this process writes and maps, as node --perf-prof does: found and read. */
static void check_live_jitdump(void)
{
	static struct jd d;
	struct timespec wait = { 0, 250 * 1000000 };
	struct op_perfmaps *c = op_perfmaps_new();
	char path[64];
	size_t half;
	void *mark;
	FILE *f;

	REQUIRE(c);
	snprintf(path, sizeof(path), "/tmp/jit-%d.dump", (int)getpid());
	jd_build(&d, false);
	half = d.n - 20; /* the last record still being written */
	f = fopen(path, "w+");
	REQUIRE(f);
	REQUIRE(fwrite(d.b, 1, half, f) == half);
	fflush(f);
	mark = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fileno(f), 0);
	REQUIRE(mark != MAP_FAILED);
	CHECK_STR(op_perfmaps_lookup(c, getpid(), 0x1010), "JS:*heavyWork /x.js:9");
	CHECK_STR(op_perfmaps_lookup(c, getpid(), 0x8000), "JS:*lightWork /x.js:15");
	CHECK(!op_perfmaps_lookup(c, getpid(), 0x4000));
	REQUIRE(fwrite(d.b + half, 1, d.n - half, f) == d.n - half);
	fflush(f);
	nanosleep(&wait, NULL);
	CHECK_STR(op_perfmaps_lookup(c, getpid(), 0x4000), "last");
	munmap(mark, 4096);
	fclose(f);
	unlink(path);
	op_perfmaps_free(c);
}

int main(int argc, char **argv)
{
	static const char text[] =
		"2046ed98aae6 2a JS:~fib /tmp/busy.js:1:13\n"
		"ce06040 180 JS:*fib /tmp/busy.js:1:13\n"
		"0x00007f3358ec7600 0x0000000000000258 long Busy.work(int)\r\n"
		"7f0000001000 100 py::main:/tmp/x.py\n"
		"7f0000001000 40 py::reused:/tmp/x.py\n" /* code space reused: later line wins */
		"bad line\n"
		"1000 0 zero-size\n"
		"ffffffffffffffff 10 wraps\n"
		"\n"
		"12345678901234567 10 too-many-digits\n";
	struct op_perfmap m = { 0 };
	struct op_perfmaps *c;
	uint64_t start = 0;
	char path[64];
	struct timespec wait = { 0, 250 * 1000000 };

	if (argc == 3 && !strcmp(argv[1], "--seed")) {
		/* the synthetic jitdump in the other byte order, as the jitdump fuzzer's seed */
		static struct jd d;
		FILE *f = fopen(argv[2], "w");

		jd_build(&d, true);
		return !f || fwrite(d.b, 1, d.n, f) != d.n || fclose(f);
	}
	CHECK_EQ(op_perfmap_parse(&m, text, sizeof(text) - 1), 0);
	CHECK_EQ(m.n, 5);
	CHECK_EQ(m.bad_lines, 4);
	CHECK_STR(op_perfmap_find(&m, 0x2046ed98aae6, &start), "JS:~fib /tmp/busy.js:1:13");
	CHECK_EQ(start, 0x2046ed98aae6);
	CHECK_STR(op_perfmap_find(&m, 0xce06040 + 0x17f, NULL), "JS:*fib /tmp/busy.js:1:13");
	CHECK(!op_perfmap_find(&m, 0xce06040 + 0x180, NULL));
	CHECK_STR(op_perfmap_find(&m, 0x7f3358ec7600 + 0x100, NULL), "long Busy.work(int)");
	CHECK_STR(op_perfmap_find(&m, 0x7f0000001010, NULL), "py::reused:/tmp/x.py");
	/* past the newer, shorter line: the older one still covers it */
	CHECK_STR(op_perfmap_find(&m, 0x7f0000001080, NULL), "py::main:/tmp/x.py");
	CHECK(!op_perfmap_find(&m, 0x10, NULL));
	op_perfmap_clear(&m);

	/* this process's own map, as a JIT would write it */
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	unlink(path);
	c = op_perfmaps_new();
	REQUIRE(c);
	CHECK(!op_perfmaps_lookup(c, getpid(), 0x5000)); /* no map yet */
	append(path, "5000 100 first\n6000 10 half");
	nanosleep(&wait, NULL);
	CHECK_STR(op_perfmaps_lookup(c, getpid(), 0x5010), "first");
	CHECK(!op_perfmaps_lookup(c, getpid(), 0x6000)); /* its line is not complete yet */
	append(path, "-written\n");
	nanosleep(&wait, NULL);
	CHECK_STR(op_perfmaps_lookup(c, getpid(), 0x6000), "half-written");
	{
		struct op_perfmaps_stats st;

		op_perfmaps_stats(c, &st);
		CHECK_EQ(st.processes, 1);
		CHECK_EQ(st.entries, 2);
		CHECK_EQ(st.named, 2);
	}
	op_perfmaps_forget(c, getpid());
	unlink(path);
	CHECK(!op_perfmaps_lookup(c, getpid(), 0x5010));
	op_perfmaps_free(c);
	check_jitdump(false);
	check_jitdump(true);
	check_live_jitdump();
	return check_done();
}

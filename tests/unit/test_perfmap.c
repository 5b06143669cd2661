// SPDX-License-Identifier: Apache-2.0
/*
 * Perf maps (lib/symbol/perfmap.c): the line formats JITs write (Node, Python -X perf, jcmd's
 * 0x-prefixed columns, CRLF), malformed lines counted, reused code space named by the later
 * line; then a live map of this process (/tmp/perf-PID.map) read as it grows, a line still
 * being written left for later.
 */
#include <errno.h>
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

int main(void)
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
	return check_done();
}

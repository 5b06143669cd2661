// SPDX-License-Identifier: Apache-2.0
/* Profile builder: deduplication, index 0, sample merging, scale. */
#include <errno.h>
#include <time.h>

#include "check.h"
#include "profile/profile_internal.h"
#include "profile/read.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void test_strings(void)
{
	struct op_profile *p = op_profile_new(NULL);
	char buf[32];
	uint32_t a, b, c;

	REQUIRE(p);
	CHECK_EQ(op_profile_string(p, NULL), 0);
	CHECK_EQ(op_profile_string(p, ""), 0);
	CHECK_STR(op_profile_str(p, 0), "");
	a = op_profile_string(p, "main");
	snprintf(buf, sizeof(buf), "%s", "main"); /* equal content, different pointer */
	b = op_profile_string(p, buf);
	c = op_profile_string(p, "mainx");
	CHECK(a != 0 && a != OP_PROFILE_ERR);
	CHECK_EQ(a, b);
	CHECK(c != a && c != 0);
	CHECK_STR(op_profile_str(p, a), "main");
	CHECK_STR(op_profile_str(p, c), "mainx");
	/* a prefix is a different string */
	CHECK(op_profile_string(p, "mai") != a);
	op_profile_free(p);
}

static void test_dictionary_dedup(void)
{
	struct op_profile *p = op_profile_new(NULL);
	struct op_mapping_desc md = {
		.memory_start = 0x400000,
		.memory_limit = 0x500000,
		.file_offset = 0x1000,
		.filename = "/usr/bin/app",
		.build_id_gnu = "abcdef",
		.has_functions = 1,
	};
	struct op_function_desc fd = {
		.name = "work", .system_name = "_Z4workv", .filename = "app.c", .start_line = 10
	};
	struct op_line_desc lines[2];
	uint32_t m1, m2, m3, f1, f2, f3, l1, l2, l3, l4, l5, k1, k2, s1, s2, s3, s4;
	uint32_t locs[3];

	REQUIRE(p);
	m1 = op_profile_mapping(p, &md);
	md.has_functions = 0; /* a frame that did not symbolize: same mapping, flags kept */
	md.has_inline_frames = 1;
	m2 = op_profile_mapping(p, &md);
	md.file_offset = 0x2000;
	m3 = op_profile_mapping(p, &md);
	CHECK(m1 != 0 && m1 != OP_PROFILE_ERR);
	CHECK_EQ(m1, m2);
	CHECK(m3 != m1);
	CHECK(p->mappings[m1].has_functions && p->mappings[m1].has_inline_frames);
	CHECK(!p->mappings[m1].has_line_numbers);
	/* build ids become mapping attributes, shared between equal ids */
	CHECK_EQ(p->mappings[m1].n_attrs, 1);
	CHECK_EQ(p->mappings[m1].attrs[0], p->mappings[m3].attrs[0]);
	CHECK_STR(op_profile_str(p, p->attrs[p->mappings[m1].attrs[0]].key),
		  "process.executable.build_id.gnu");

	f1 = op_profile_function(p, &fd);
	f2 = op_profile_function(p, &fd);
	fd.start_line = 11;
	f3 = op_profile_function(p, &fd);
	CHECK(f1 != 0);
	CHECK_EQ(f1, f2);
	CHECK(f3 != f1);

	lines[0] = (struct op_line_desc){ .function = f3, .line = 12 }; /* inlined callee */
	lines[1] = (struct op_line_desc){ .function = f1, .line = 20 }; /* its caller */
	l1 = op_profile_location(p, m1, 0x401000, lines, 2, OP_FRAME_NATIVE);
	l2 = op_profile_location(p, m1, 0x401000, lines, 2, OP_FRAME_NATIVE);
	l3 = op_profile_location(p, m1, 0x401000, lines, 1, OP_FRAME_NATIVE);
	l4 = op_profile_location(p, m1, 0x401004, lines, 2, OP_FRAME_NATIVE);
	lines[1].line = 21;
	l5 = op_profile_location(p, m1, 0x401000, lines, 2, OP_FRAME_NATIVE);
	CHECK(l1 != 0);
	CHECK_EQ(l1, l2);
	CHECK(l3 != l1 && l4 != l1 && l5 != l1 && l3 != l4);
	CHECK_EQ(p->locations[l1].n_lines, 2);
	CHECK_EQ(p->lines[p->locations[l1].first_line].function, f3);
	CHECK_EQ(p->lines[p->locations[l1].first_line + 1].line, 20);

	/* kernel frames without a mapping share one [kernel.kallsyms] mapping */
	k1 = op_profile_location(p, 0, 0xffffffff81000000ull, NULL, 0, OP_FRAME_KERNEL);
	k2 = op_profile_location(p, 0, 0xffffffff81000010ull, NULL, 0, OP_FRAME_KERNEL);
	CHECK(k1 != k2);
	CHECK(p->locations[k1].mapping != 0);
	CHECK_EQ(p->locations[k1].mapping, p->locations[k2].mapping);
	CHECK_STR(op_profile_str(p, p->mappings[p->locations[k1].mapping].filename),
		  "[kernel.kallsyms]");
	CHECK_STR(op_profile_str(p, p->attrs[p->locations[k1].attr].str), "kernel");
	CHECK_STR(op_profile_str(p, p->attrs[p->locations[l1].attr].str), "native");
	/* same address, different frame type: different location */
	CHECK(op_profile_location(p, m1, 0x401000, lines, 2, OP_FRAME_GO) != l5);

	locs[0] = l1;
	locs[1] = l4;
	locs[2] = k1;
	s1 = op_profile_stack(p, locs, 3);
	s2 = op_profile_stack(p, locs, 3);
	s3 = op_profile_stack(p, locs, 2);
	locs[0] = l4;
	locs[1] = l1;
	s4 = op_profile_stack(p, locs, 2);
	CHECK(s1 != 0);
	CHECK_EQ(s1, s2);
	CHECK(s3 != s1 && s4 != s3);
	CHECK_EQ(op_profile_stack(p, NULL, 0), 0); /* the empty stack is the zero entry */

	/* invalid references are refused, not stored */
	errno = 0;
	CHECK_EQ(op_profile_location(p, 999, 1, NULL, 0, OP_FRAME_NATIVE), OP_PROFILE_ERR);
	CHECK_EQ(errno, EINVAL);
	lines[0].function = 999;
	CHECK_EQ(op_profile_location(p, m1, 1, lines, 1, OP_FRAME_NATIVE), OP_PROFILE_ERR);
	locs[0] = 999;
	CHECK_EQ(op_profile_stack(p, locs, 1), OP_PROFILE_ERR);
	locs[0] = 0;
	CHECK_EQ(op_profile_stack(p, locs, 1), OP_PROFILE_ERR);

	/* index 0 of every table is the zero entry */
	CHECK_EQ(p->mappings[0].filename, 0);
	CHECK_EQ(p->mappings[0].memory_start, 0);
	CHECK_EQ(p->functions[0].name, 0);
	CHECK_EQ(p->locations[0].n_lines, 0);
	CHECK_EQ(p->locations[0].mapping, 0);
	CHECK_EQ(p->stacks[0].n, 0);
	CHECK_EQ(p->attrs[0].key, 0);
	op_profile_free(p);
}

static void test_samples(void)
{
	struct op_profile_opts o = { .period_ns = 50000000, .start_ns = 1000 };
	struct op_profile *p = op_profile_new(&o);
	struct op_process_desc pa = { .pid = 10, .executable_name = "a", .executable_path = "/a" };
	struct op_process_desc pb = { .pid = 20, .executable_name = "b" };
	struct op_function_desc fd = { .name = "f" };
	struct op_line_desc ln;
	struct op_sample_desc s;
	struct op_grouped g;
	uint32_t loc, st;

	REQUIRE(p);
	ln = (struct op_line_desc){ .function = op_profile_function(p, &fd) };
	loc = op_profile_location(p, 0, 0, &ln, 1, OP_FRAME_ABORT);
	st = op_profile_stack(p, &loc, 1);
	REQUIRE(st && st != OP_PROFILE_ERR);
	CHECK_EQ(p->locations[loc].mapping, 0); /* abort markers have no mapping */

	s = (struct op_sample_desc){ .stack = st,
				     .process = &pa,
				     .tid = 11,
				     .thread_name = "w",
				     .cpu = 1,
				     .timestamp_ns = 2000 };
	CHECK_EQ(op_profile_add_sample(p, &s), 0);
	s.timestamp_ns = 3000;
	CHECK_EQ(op_profile_add_sample(p, &s), 0); /* merged */
	s.cpu = 0;
	s.timestamp_ns = 2500;
	CHECK_EQ(op_profile_add_sample(p, &s), 0); /* other cpu: new sample */
	s.cpu = 1;
	s.thread_name = "w2";
	CHECK_EQ(op_profile_add_sample(p, &s), 0); /* other thread name */
	s.thread_name = "w";
	s.tid = 12;
	CHECK_EQ(op_profile_add_sample(p, &s), 0); /* other tid */
	s.tid = 11;
	s.process = &pb;
	s.timestamp_ns = 4000;
	CHECK_EQ(op_profile_add_sample(p, &s), 0); /* other process, same thread */
	s.stack = 0;
	s.process = &pa;
	CHECK_EQ(op_profile_add_sample(p, &s), 0); /* empty stack is allowed */
	s.stack = 12345;
	CHECK_EQ(op_profile_add_sample(p, &s), -EINVAL);
	s.stack = st;
	s.process = NULL;
	CHECK_EQ(op_profile_add_sample(p, &s), -EINVAL);

	CHECK_EQ(op_profile_sample_count(p), 7);
	CHECK_EQ(p->n_samples - 1, 6);
	CHECK_EQ(p->samples[1].count, 2);
	CHECK_EQ(p->n_processes - 1, 2);
	CHECK_EQ(p->processes[1].pid, 10);
	CHECK_EQ(p->processes[1].events, 6);
	CHECK_STR(op_profile_str(p, p->processes[1].exe_path), "/a");
	CHECK_EQ(p->processes[2].exe_path, 0);
	/* a later description fills in what the first one lacked */
	pb.executable_path = "/b";
	s.process = &pb;
	CHECK_EQ(op_profile_add_sample(p, &s), 0);
	CHECK_STR(op_profile_str(p, p->processes[2].exe_path), "/b");
	CHECK_EQ(p->samples[5].count, 2); /* merged with the earlier sample of pid 20 */

	/* sample attributes: thread.name, thread.id, cpu.logical_number */
	CHECK_STR(op_profile_str(p, p->attrs[p->samples[1].attrs[0]].key), "thread.name");
	CHECK_STR(op_profile_str(p, p->attrs[p->samples[1].attrs[0]].str), "w");
	CHECK_STR(op_profile_str(p, p->attrs[p->samples[1].attrs[1]].key), "thread.id");
	CHECK_EQ(p->attrs[p->samples[1].attrs[1]].num, 11);
	CHECK_STR(op_profile_str(p, p->attrs[p->samples[1].attrs[2]].key), "cpu.logical_number");
	CHECK_EQ(p->attrs[p->samples[1].attrs[2]].num, 1);
	/* equal attributes are one entry */
	CHECK_EQ(p->samples[1].attrs[1], p->samples[2].attrs[1]);

	/* grouping: per process, each sample's timestamps in arrival order */
	REQUIRE(op_profile_group(p, &g) == 0);
	CHECK_EQ(g.proc_n[1], 5);
	CHECK_EQ(g.proc_n[2], 1);
	CHECK_EQ(g.order[g.proc_first[2]], 5);
	CHECK_EQ(g.ts_off[2] - g.ts_off[1], 2);
	CHECK_EQ(g.ts[g.ts_off[1]], 2000);
	CHECK_EQ(g.ts[g.ts_off[1] + 1], 3000);
	op_grouped_free(&g);

	CHECK_EQ(op_profile_duration(p), 4000 - 1000); /* last timestamp when no end is set */
	op_profile_set_end(p, 11000);
	CHECK_EQ(op_profile_duration(p), 10000);
	op_profile_free(p);
}

/* The value of type/unit summed over @d's samples; -1 if @d has no such type. */
static int64_t type_total(const struct op_data *d, const char *type, const char *unit)
{
	int64_t sum = 0;

	for (uint32_t t = 0; t < d->n_types; t++) {
		if (strcmp(op_data_s(d, d->types[t].type), type) ||
		    strcmp(op_data_s(d, d->types[t].unit), unit))
			continue;
		for (uint32_t i = 0; i < d->samples.n; i++)
			sum += d->values[(size_t)i * d->n_types + t];
		return sum;
	}
	return -1;
}

/*
 * Probe hits (issue 22, probe_links): their own kind, merged per stack and thread with their
 * number as value, written as events/count beside the CPU samples in OTLP and pprof.
 */
static void test_probe_kind(void)
{
	struct op_profile_opts o = { .period_ns = 50000000, .start_ns = 1000 };
	struct op_profile *p = op_profile_new(&o);
	struct op_process_desc pa = { .pid = 10, .executable_name = "a" };
	struct op_function_desc fd = { .name = "traced" };
	struct op_line_desc ln;
	struct op_sample_desc s;
	uint32_t loc, st;
	uint8_t *buf;
	size_t len;
	char err[128];

	REQUIRE(p);
	ln = (struct op_line_desc){ .function = op_profile_function(p, &fd) };
	loc = op_profile_location(p, 0, 0x1000, &ln, 1, OP_FRAME_NATIVE);
	st = op_profile_stack(p, &loc, 1);
	s = (struct op_sample_desc){ .stack = st,
				     .process = &pa,
				     .tid = 11,
				     .thread_name = "w",
				     .cpu = 1,
				     .timestamp_ns = 2000 };
	CHECK_EQ(op_profile_add_sample(p, &s), 0); /* one CPU sample */
	s.kind = OP_SAMPLE_PROBE;
	s.value = 1;
	for (int i = 0; i < 3; i++) {
		s.timestamp_ns = 3000 + i;
		CHECK_EQ(op_profile_add_sample(p, &s), 0);
	}
	CHECK_EQ(p->n_samples - 1, 2); /* the probe hits are one sample, apart from the CPU one */
	CHECK_EQ(p->samples[2].kind, OP_SAMPLE_PROBE);
	CHECK_EQ(p->samples[2].value, 3);
	CHECK_EQ(p->samples[2].count, 3);

	for (int f = 0; f < 2; f++) {
		struct op_data *d;
		enum op_format fmt;

		REQUIRE((f ? op_encode_pprof(p, &buf, &len) : op_encode_otlp(p, &buf, &len)) == 0);
		d = op_read_buf(buf, len, &fmt, err, sizeof(err));
		REQUIRE(d);
		CHECK_EQ(type_total(d, "events", "count"), 3);
		CHECK_EQ(type_total(d, "samples", "count"), 1);
		op_data_free(d);
		free(buf);
	}
	op_profile_free(p);
}

/* Many entries: nothing quadratic, everything still deduplicated. */
static void test_scale(void)
{
	enum { N = 200000 };
	struct op_profile *p = op_profile_new(NULL);
	struct op_process_desc pr = { .pid = 1, .executable_name = "x" };
	struct op_mapping_desc md = { .filename = "/lib/x.so", .memory_limit = 1 << 30 };
	uint32_t m, *locs = malloc(N * sizeof(*locs));
	double t0, t1;
	char name[32];
	int i, bad = 0;

	REQUIRE(p && locs);
	m = op_profile_mapping(p, &md);
	t0 = now_s();
	for (i = 0; i < N; i++) {
		struct op_function_desc fd = { .name = name };
		struct op_line_desc ln;

		snprintf(name, sizeof(name), "fn_%d", i % (N / 2));
		ln.function = op_profile_function(p, &fd);
		ln.line = i % 7;
		ln.column = 0;
		locs[i] = op_profile_location(p, m, 0x1000 + (uint64_t)(i % (N / 2)) * 16, &ln, 1,
					      OP_FRAME_NATIVE);
		bad += locs[i] == OP_PROFILE_ERR;
	}
	for (i = 0; i + 8 <= N; i += 4) {
		struct op_sample_desc s = {
			.process = &pr, .tid = i % 13, .cpu = i % 2, .timestamp_ns = 1 + (uint64_t)i
		};

		s.stack = op_profile_stack(p, &locs[i], 8);
		bad += s.stack == OP_PROFILE_ERR;
		bad += op_profile_add_sample(p, &s) != 0;
	}
	t1 = now_s();
	CHECK_EQ(bad, 0);
	CHECK_EQ(p->n_functions - 1, N / 2);
	/* (i % N/2, i % 7) pairs: locations repeat once lcm(N/2, 7) is passed */
	CHECK(p->n_locations - 1 <= N);
	CHECK_EQ(op_profile_string(p, "fn_7"), op_profile_string(p, "fn_7"));
	CHECK_EQ(op_profile_sample_count(p), N / 4 - 1);
	printf("scale: %d functions, %u locations, %u stacks, %u samples in %.3f s, %zu KiB\n",
	       N / 2, p->n_locations - 1, p->n_stacks - 1, p->n_samples - 1, t1 - t0,
	       op_profile_memory(p) / 1024);
	CHECK(t1 - t0 < 2.0); /* about 0.1 s here; a quadratic table would take minutes */
	free(locs);
	op_profile_free(p);
}

int main(void)
{
	test_strings();
	test_dictionary_dedup();
	test_samples();
	test_probe_kind();
	test_scale();
	return check_done();
}

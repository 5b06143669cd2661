// SPDX-License-Identifier: Apache-2.0
/*
 * fixture_bigprofile [--samples N] [--stacks N] PPROF_FILE
 *
 * A large synthetic CPU profile for the report benchmark (bench/capabilities/report.py):
 * by default 1,000,000 samples over 100,000 distinct stacks, built with the recorder's own
 * profile builder (profile/profile.h) and written as gzipped pprof, as `otelprof record`
 * writes it. The shape is that of a busy whole-system profile: 6 processes, 48 threads on
 * 4 CPUs, 6,000 functions in 12 binaries, stacks 6 to 60 frames deep that share prefixes
 * (each new stack branches off an earlier one), and samples spread unevenly over the stacks
 * (every stack has one, the rest go to a hot tenth). Deterministic: same output each run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"

#define N_FUNCS	  6000
#define N_BINS	  12
#define N_PROCS	  6
#define N_THREADS 48
#define MAX_DEPTH 60
#define PERIOD_NS 10000000ull /* 100 Hz */
#define START_NS  1700000000000000000ull

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)((rng >> 11) % n);
}

int main(int argc, char **argv)
{
	struct op_profile_opts o = { .period_ns = PERIOD_NS, .start_ns = START_NS };
	uint32_t maps[N_BINS], funcs[N_FUNCS], *locs, (*stacks)[MAX_DEPTH], *depth, *ids;
	struct op_process_desc procs[N_PROCS];
	char names[N_PROCS][32], paths[N_PROCS][64], tnames[N_THREADS][32];
	long n_samples = 1000000, n_stacks = 100000;
	const char *out = NULL;
	struct op_profile *p;
	uint8_t *buf;
	size_t len;
	FILE *f;
	uint32_t last_new = 0;
	long i;

	for (int a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "--samples") && a + 1 < argc)
			n_samples = atol(argv[++a]);
		else if (!strcmp(argv[a], "--stacks") && a + 1 < argc)
			n_stacks = atol(argv[++a]);
		else
			out = argv[a];
	}
	if (!out || n_stacks < 1 || n_samples < n_stacks) {
		fprintf(stderr, "usage: fixture_bigprofile [--samples N] [--stacks N] PPROF_FILE "
				"(samples >= stacks >= 1)\n");
		return 2;
	}
	p = op_profile_new(&o);
	locs = calloc(N_FUNCS, sizeof(*locs));
	stacks = calloc((size_t)n_stacks, sizeof(*stacks));
	depth = calloc((size_t)n_stacks, sizeof(*depth));
	ids = calloc((size_t)n_stacks, sizeof(*ids));
	if (!p || !locs || !stacks || !depth || !ids)
		return 1;
	for (i = 0; i < N_BINS; i++) {
		char file[64], bid[48];
		struct op_mapping_desc m = {
			.memory_start = 0x400000 + (uint64_t)i * 0x10000000,
			.memory_limit = 0x400000 + (uint64_t)i * 0x10000000 + 0x8000000,
			.filename = file,
			.build_id_gnu = bid,
			.has_functions = 1,
		};

		snprintf(file, sizeof(file), "/usr/lib/synthetic/libbench%ld.so", i);
		snprintf(bid, sizeof(bid), "%040lx", 0xb0000000 + i);
		maps[i] = op_profile_mapping(p, &m);
	}
	for (i = 0; i < N_FUNCS; i++) {
		char name[96];
		struct op_function_desc fd = { .name = name, .system_name = name };
		struct op_line_desc ln = { .line = 10 + i % 500 };

		snprintf(name, sizeof(name), "bench::module%ld::Component%ld::operation_%ld",
			 i / 300, i / 20, i);
		funcs[i] = op_profile_function(p, &fd);
		ln.function = funcs[i];
		locs[i] = op_profile_location(p, maps[i % N_BINS], 0x401000 + (uint64_t)i * 64, &ln,
					      1, OP_FRAME_NATIVE);
	}
	/* distinct stacks: each branches off an earlier one (shared prefixes, like real ones) */
	for (i = 0; i < n_stacks;) {
		uint32_t d = 0, leaf[MAX_DEPTH], k;

		if (i > 0) {
			long j = i - 1 - (long)rnd((uint32_t)(i < 2000 ? i : 2000));

			d = 1 + rnd(depth[j]);
			memcpy(stacks[i], stacks[j], d * sizeof(uint32_t));
		}
		for (k = d + 1 + rnd(4); d < k && d < MAX_DEPTH; d++)
			stacks[i][d] = rnd(N_FUNCS);
		if (d < 6) {
			for (; d < 6; d++)
				stacks[i][d] = rnd(N_FUNCS);
		}
		depth[i] = d;
		/* builder stacks are leaf first */
		for (k = 0; k < d; k++)
			leaf[k] = locs[stacks[i][d - 1 - k]];
		ids[i] = op_profile_stack(p, leaf, d);
		/* the builder numbers new stacks upwards: an equal one is tried again */
		if (ids[i] != UINT32_MAX && ids[i] > last_new) {
			last_new = ids[i];
			i++;
		}
	}
	for (i = 0; i < N_PROCS; i++) {
		snprintf(names[i], sizeof(names[i]), "service%ld", i);
		snprintf(paths[i], sizeof(paths[i]), "/usr/bin/service%ld", i);
		procs[i] = (struct op_process_desc){ .pid = 1000 + (int)i,
						     .executable_name = names[i],
						     .executable_path = paths[i] };
	}
	for (i = 0; i < N_THREADS; i++)
		snprintf(tnames[i], sizeof(tnames[i]), "worker-%ld", i);
	for (i = 0; i < n_samples; i++) {
		long s = i < n_stacks ? i : (long)rnd((uint32_t)(n_stacks / 10 + 1));
		uint32_t th = (uint32_t)(s % N_THREADS);
		struct op_sample_desc sd = {
			.stack = ids[s],
			.process = &procs[th % N_PROCS],
			.tid = 2000 + (int)th,
			.thread_name = tnames[th],
			.cpu = (int)rnd(4),
			.timestamp_ns = START_NS + (uint64_t)i * 1000,
		};

		if (op_profile_add_sample(p, &sd)) {
			fprintf(stderr, "fixture_bigprofile: out of memory\n");
			return 1;
		}
	}
	op_profile_set_end(p, START_NS + (uint64_t)n_samples * 1000);
	if (op_encode_pprof(p, &buf, &len)) {
		fprintf(stderr, "fixture_bigprofile: cannot encode\n");
		return 1;
	}
	f = fopen(out, "wb");
	if (!f || fwrite(buf, 1, len, f) != len || fclose(f)) {
		perror(out);
		return 1;
	}
	printf("samples=%llu stacks=%ld bytes=%zu\n",
	       (unsigned long long)op_profile_sample_count(p), n_stacks, len);
	free(buf);
	free(ids);
	free(depth);
	free(stacks);
	free(locs);
	op_profile_free(p);
	return 0;
}

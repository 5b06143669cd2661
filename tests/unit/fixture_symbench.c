// SPDX-License-Identifier: Apache-2.0
/*
 * fixture_symbench: cold symbolization of a large binary (python3 with its Debian debug file
 * from python3.11-dbg, when installed), for `make bench`.
 *
 *   fixture_symbench [BINARY] [ADDRESSES]    defaults: /usr/bin/python3, 20000
 *
 * Measures, in a fresh file cache (the page cache may be warm): opening the ELF (symbols,
 * build id, htlhash), the first symbolization (finding the debug file, the DWARF CU index),
 * ADDRESSES random addresses in executable segments (each parsing its CU on first touch), the
 * same addresses again (warm), the bytes the cache accounts and the process's peak RSS.
 * Prints readable lines, then one JSON line starting with "symbench " for the harness.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "symbol/symbolize.h"
#include "binary/file.h"

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static long status_kb(const char *key)
{
	char line[256];
	long v = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key)))
			v = atol(line + strlen(key) + 1);
	fclose(f);
	return v;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

int main(int argc, char **argv)
{
	const char *bin = argc > 1 ? argv[1] : "/usr/bin/python3";
	long n = argc > 2 ? atol(argv[2]) : 20000, i, found = 0, with_line = 0, inlined = 0;
	long rss_before = status_kb("VmRSS:");
	struct op_filecache *c = op_filecache_new(0);
	struct op_sym_result r;
	uint64_t *addrs, text_total = 0;
	double t0, t_open, t_first, t_cold, t_warm;
	struct op_file *f;
	size_t k;

	if (!c || n <= 0)
		return 1;
	t0 = now_ms();
	f = op_filecache_get_path(c, bin);
	t_open = now_ms() - t0;
	if (!f) {
		fprintf(stderr, "cannot open %s\n", bin);
		return 1;
	}
	for (k = 0; k < f->n_loads; k++)
		if (f->loads[k].flags & 1 /* PF_X */)
			text_total += f->loads[k].memsz;
	if (!text_total) {
		fprintf(stderr, "%s has no executable segment\n", bin);
		return 1;
	}
	addrs = calloc((size_t)n, sizeof(*addrs));
	for (i = 0; addrs && i < n; i++) {
		uint64_t off = next_rand() % text_total;

		for (k = 0; k < f->n_loads; k++) {
			if (!(f->loads[k].flags & 1))
				continue;
			if (off < f->loads[k].memsz) {
				addrs[i] = f->loads[k].vaddr + off;
				break;
			}
			off -= f->loads[k].memsz;
		}
	}
	if (!addrs)
		return 1;

	t0 = now_ms();
	op_file_symbolize(f, addrs[0], &r);
	t_first = now_ms() - t0;

	t0 = now_ms();
	for (i = 0; i < n; i++) {
		if (op_file_symbolize(f, addrs[i], &r) != 0)
			continue;
		found++;
		if (r.lines[0].file && r.lines[0].line)
			with_line++;
		if (r.n > 1)
			inlined++;
	}
	t_cold = now_ms() - t0;

	t0 = now_ms();
	for (i = 0; i < n; i++)
		op_file_symbolize(f, addrs[i], &r);
	t_warm = now_ms() - t0;

	printf("binary            %s (build id %s)\n", bin,
	       op_file_build_id_gnu(f) ? op_file_build_id_gnu(f) : "-");
	printf("DWARF             %s\n", op_file_has_inline_frames(f) ? "yes" : "no");
	printf("open (ELF)        %.2f ms\n", t_open);
	printf("first address     %.2f ms (debug file, CU index)\n", t_first);
	printf("%ld addresses     %.1f ms cold (%.1f us each), %.1f ms warm (%.2f us each)\n", n,
	       t_cold, t_cold * 1e3 / (double)n, t_warm, t_warm * 1e3 / (double)n);
	printf("symbolized        %ld (%.1f%%), with file:line %ld, with inline frames %ld\n",
	       found, 100.0 * (double)found / (double)n, with_line, inlined);
	printf("cache bytes       %.1f MiB\n", (double)op_filecache_bytes(c) / (1 << 20));
	printf("rss               %.1f MiB (before %.1f MiB, peak %.1f MiB)\n",
	       (double)status_kb("VmRSS:") / 1024, (double)rss_before / 1024,
	       (double)status_kb("VmHWM:") / 1024);
	printf("symbench {\"binary\":\"%s\",\"dwarf\":%s,\"open_ms\":%.2f,\"first_ms\":%.2f,"
	       "\"addresses\":%ld,\"cold_ms\":%.1f,\"warm_ms\":%.1f,\"symbolized\":%ld,"
	       "\"with_line\":%ld,\"inlined\":%ld,\"cache_bytes\":%zu,\"rss_kb\":%ld,"
	       "\"peak_rss_kb\":%ld}\n",
	       bin, op_file_has_inline_frames(f) ? "true" : "false", t_open, t_first, n, t_cold,
	       t_warm, found, with_line, inlined, op_filecache_bytes(c), status_kb("VmRSS:"),
	       status_kb("VmHWM:"));
	op_file_put(f);
	op_filecache_free(c);
	free(addrs);
	return 0;
}

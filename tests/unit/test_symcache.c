// SPDX-License-Identifier: Apache-2.0
/*
 * The symbolizer's memory bounds: libdwarf instances closed by the global budget or when idle
 * and re-opened on demand, and the per-file result cache, must not change what an address
 * symbolizes to. Two programs this test compiles (one with compressed DWARF, -gz) are
 * symbolized with a one-byte instance budget, alternating between the files so each new CU
 * re-opens its file's instance and closes the other's, and compared with a run under the
 * default budget. Compressed sections are inflated once per file and their copies reused by
 * every re-open, unless the inflated budget frees them (then inflated again, same results).
 *
 * Also: op_filecache_get_mapped() finds a referenced file by device and inode only.
 *
 * Needs gcc and binutils (nm).
 */
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "symbol/dwarf.h"
#include "symbol/symbolize.h"

static char tmp[] = "/tmp/otelprof-symcache-XXXXXX";

#define N_FUNCS 24
#define N_ADDRS (2 * N_FUNCS * 3)

struct expect {
	uint64_t addr;
	int ret;
	size_t n;
	char name[128], file[256];
	int64_t line;
};

/* Six compile units of four functions each: lookups move between CUs. */
#define N_UNITS 6

static const char fn_src[] = "#define F(n) __attribute__((noinline)) int f##n(int x) { \\\n"
			     "	int y = x * n; \\\n"
			     "	if (y & 1) \\\n"
			     "		y += 3; \\\n"
			     "	return y ^ n; }\n";

static void write_sources(void)
{
	char p[PATH_MAX];
	int u, i;

	for (u = 0; u < N_UNITS; u++) {
		FILE *s;

		snprintf(p, sizeof(p), "%s/unit%d.c", tmp, u);
		s = fopen(p, "w");
		CHECK(s);
		if (!s)
			return;
		fputs(fn_src, s);
		for (i = 0; i < N_FUNCS / N_UNITS; i++)
			fprintf(s, "F(%d)\n", u * (N_FUNCS / N_UNITS) + i);
		if (u == 0)
			fputs("int f23(int);\nint main(int c, char **v) { return f0(c) + f23(c); "
			      "}\n",
			      s);
		fclose(s);
	}
}

/* Addresses of f0..f23 in @bin (entry, +4, +9). */
static int func_addrs(const char *bin, uint64_t *out)
{
	char cmd[512], line[256];
	int n = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "nm '%s' | grep -E ' T f[0-9]+$'", bin);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (fgets(line, sizeof(line), p) && n + 3 <= N_ADDRS / 2) {
		unsigned long long a = strtoull(line, NULL, 16);

		out[n++] = a;
		out[n++] = a + 4;
		out[n++] = a + 9;
	}
	pclose(p);
	return n;
}

static void lookup(struct op_file *f, uint64_t addr, struct expect *e)
{
	struct op_sym_result r;

	memset(e, 0, sizeof(*e));
	e->addr = addr;
	e->ret = op_file_symbolize(f, addr, &r);
	e->n = r.n;
	if (r.n) {
		snprintf(e->name, sizeof(e->name), "%s", r.lines[0].name ? r.lines[0].name : "");
		snprintf(e->file, sizeof(e->file), "%s", r.lines[0].file ? r.lines[0].file : "");
		e->line = r.lines[0].line;
	}
}

/* Symbolize both programs' addresses, alternating between the files. */
static void run(const char *bin[2], uint64_t addrs[2][N_ADDRS / 2], int n[2],
		struct expect out[2][N_ADDRS / 2])
{
	struct op_filecache *c = op_filecache_new(0);
	struct op_file *f[2];
	int i, k;

	REQUIRE(c);
	f[0] = op_filecache_get_path(c, bin[0]);
	f[1] = op_filecache_get_path(c, bin[1]);
	REQUIRE(f[0] && f[1]);
	CHECK(op_file_has_inline_frames(f[0]) && op_file_has_inline_frames(f[1]));
	for (i = 0; i < N_ADDRS / 2; i++)
		for (k = 0; k < 2; k++)
			if (i < n[k])
				lookup(f[k], addrs[k][i], &out[k][i]);
	op_file_put(f[0]);
	op_file_put(f[1]);
	op_filecache_free(c);
}

int main(void)
{
	char path[2][PATH_MAX], cmd[2 * PATH_MAX];
	const char *bin[2] = { path[0], path[1] };
	uint64_t addrs[2][N_ADDRS / 2];
	static struct expect want[2][N_ADDRS / 2], got[2][N_ADDRS / 2];
	size_t open_handles = 99, bytes = 99;
	struct op_dwarf_inflated_stats z0, z1;
	uint64_t ref_inflations;
	struct op_filecache *c;
	struct op_file *f;
	struct op_sym_result r1, r2;
	int n[2], i, k;

	if (!mkdtemp(tmp))
		SKIP("cannot create a temporary directory");
	snprintf(path[0], sizeof(path[0]), "%s/plain", tmp);
	snprintf(path[1], sizeof(path[1]), "%s/gz", tmp);
	write_sources();
	if (check_failures)
		return check_done();
	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && gcc -O1 -g -o plain unit*.c && gcc -O1 -g -gz=zlib -o gz unit*.c",
		 tmp);
	REQUIRE(system(cmd) == 0);
	for (k = 0; k < 2; k++) {
		n[k] = func_addrs(path[k], addrs[k]);
		REQUIRE(n[k] == N_ADDRS / 2);
	}

	/* reference: the default budget */
	op_dwarf_inflated_stats(&z0);
	run(bin, addrs, n, want);
	op_dwarf_inflated_stats(&z1);
	ref_inflations = z1.inflations - z0.inflations;
	CHECK(ref_inflations >= 3); /* the -gz copy: at least info, abbrev, line */
	CHECK_EQ(z1.bytes, 0);	    /* its file freed: the copies went with it */
	for (k = 0; k < 2; k++)
		for (i = 0; i < n[k]; i++) {
			CHECK_EQ(want[k][i].ret, 0);
			CHECK(!strncmp(want[k][i].name, "f", 1));
			CHECK(strstr(want[k][i].file, "/unit") != NULL);
			CHECK(want[k][i].line >= 1 && want[k][i].line <= 12); /* the F(n) lines */
		}
	/* the compressed-DWARF copy reads the same */
	for (i = 0; i < n[0]; i++) {
		CHECK_STR(want[0][i].name, want[1][i].name);
		CHECK_EQ(want[0][i].line, want[1][i].line);
	}

	/*
	 * one byte for all instances: every switch of file closes the other one; the compressed
	 * file's re-opens reuse its inflated sections instead of inflating them again
	 */
	op_dwarf_set_handle_budget(1);
	op_dwarf_inflated_stats(&z0);
	run(bin, addrs, n, got);
	op_dwarf_inflated_stats(&z1);
	CHECK_EQ(z1.inflations - z0.inflations, ref_inflations);
	CHECK(z1.reused - z0.reused >= ref_inflations); /* re-opened at least once */
	for (k = 0; k < 2; k++)
		for (i = 0; i < n[k]; i++) {
			CHECK_EQ(got[k][i].ret, want[k][i].ret);
			CHECK_EQ(got[k][i].n, want[k][i].n);
			CHECK_STR(got[k][i].name, want[k][i].name);
			CHECK_STR(got[k][i].file, want[k][i].file);
			CHECK_EQ(got[k][i].line, want[k][i].line);
		}
	op_dwarf_handle_stats(&open_handles, &bytes);
	CHECK_EQ(open_handles, 0); /* both files were freed */

	/*
	 * an inflated budget one byte short of what the file's sections take: copies freed
	 * when a handle closes over it, inflated again on the next open, same names
	 */
	c = op_filecache_new(0);
	REQUIRE(c);
	f = op_filecache_get_path(c, path[1]);
	REQUIRE(f);
	for (i = 0; i < n[1]; i++)
		lookup(f, addrs[1][i], &got[1][i]);
	op_dwarf_inflated_stats(&z0);
	op_file_put(f);
	op_filecache_free(c);
	REQUIRE(z0.bytes > 1);
	op_dwarf_set_inflated_budget(z0.bytes - 1);
	op_dwarf_inflated_stats(&z0);
	run(bin, addrs, n, got);
	op_dwarf_inflated_stats(&z1);
	CHECK(z1.inflations - z0.inflations > ref_inflations);
	for (k = 0; k < 2; k++)
		for (i = 0; i < n[k]; i++) {
			CHECK_EQ(got[k][i].ret, want[k][i].ret);
			CHECK_STR(got[k][i].name, want[k][i].name);
			CHECK_STR(got[k][i].file, want[k][i].file);
			CHECK_EQ(got[k][i].line, want[k][i].line);
		}
	CHECK_EQ(z1.bytes, 0);

	/* a budget smaller than any section: nothing kept, libelf inflates into the handle */
	op_dwarf_set_inflated_budget(1);
	op_dwarf_inflated_stats(&z0);
	run(bin, addrs, n, got);
	op_dwarf_inflated_stats(&z1);
	CHECK_EQ(z1.inflations, z0.inflations);
	CHECK_EQ(z1.reused, z0.reused);
	for (k = 0; k < 2; k++)
		for (i = 0; i < n[k]; i++) {
			CHECK_EQ(got[k][i].ret, want[k][i].ret);
			CHECK_STR(got[k][i].name, want[k][i].name);
			CHECK_EQ(got[k][i].line, want[k][i].line);
		}
	op_dwarf_set_inflated_budget(24u << 20);
	op_dwarf_set_handle_budget(40u << 20);

	/* cached results: the same strings again; an instance idle for 3 s is closed */
	op_dwarf_set_handle_idle(3000000000ull);
	c = op_filecache_new(0);
	REQUIRE(c);
	f = op_filecache_get_path(c, path[1]);
	REQUIRE(f);
	CHECK_EQ(op_file_symbolize(f, addrs[1][0], &r1), 0);
	op_dwarf_handle_stats(&open_handles, NULL);
	CHECK_EQ(open_handles, 1);
	sleep(4);
	op_dwarf_inflated_stats(&z0);
	CHECK(z0.bytes > 0); /* the handle closed when idle; its inflated sections stay */
	CHECK_EQ(op_file_symbolize(f, addrs[1][0], &r2), 0); /* from the cache: no re-open */
	CHECK(r1.n == r2.n && r1.lines[0].name == r2.lines[0].name &&
	      r1.lines[0].file == r2.lines[0].file && r1.lines[0].line == r2.lines[0].line);
	op_dwarf_handle_stats(&open_handles, &bytes);
	CHECK_EQ(open_handles, 0);
	CHECK_EQ(bytes, 0);
	/* an address in a CU not parsed yet re-opens it and reads the same as before */
	lookup(f, addrs[1][n[1] - 1], &got[1][0]);
	CHECK_STR(got[1][0].name, want[1][n[1] - 1].name);
	CHECK_EQ(got[1][0].line, want[1][n[1] - 1].line);
	op_dwarf_inflated_stats(&z1);
	CHECK_EQ(z1.inflations, z0.inflations); /* without inflating anything again */
	CHECK(z1.reused > z0.reused);
	op_dwarf_handle_stats(&open_handles, NULL);
	CHECK_EQ(open_handles, 1);
	/* opened again after an idle close: it now stays twice as long (6 s) */
	sleep(4);
	op_dwarf_idle();
	op_dwarf_handle_stats(&open_handles, NULL);
	CHECK_EQ(open_handles, 1);
	sleep(3);
	op_dwarf_idle();
	op_dwarf_handle_stats(&open_handles, NULL);
	CHECK_EQ(open_handles, 0);
	op_file_put(f);
	op_filecache_free(c);

	/*
	 * A library of an exited process by the device and inode its maps line gave: the cached
	 * file while another reference holds it, nothing once none does or for another inode.
	 */
	{
		struct stat st;
		struct op_file *g;

		REQUIRE(stat(path[0], &st) == 0);
		c = op_filecache_new(0);
		REQUIRE(c);
		f = op_filecache_get_path(c, path[0]);
		REQUIRE(f);
		g = op_filecache_get_mapped(c, st.st_dev, st.st_ino);
		CHECK(g == f);
		op_file_put(g);
		CHECK(op_filecache_get_mapped(c, st.st_dev, st.st_ino + 1) == NULL);
		CHECK(op_filecache_get_mapped(c, st.st_dev + 1, st.st_ino) == NULL);
		op_file_put(f); /* idle in the cache now: no process maps it */
		CHECK(op_filecache_get_mapped(c, st.st_dev, st.st_ino) == NULL);
		op_filecache_free(c);
	}

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	if (system(cmd))
		fprintf(stderr, "cannot remove %s\n", tmp);
	return check_done();
}

// SPDX-License-Identifier: Apache-2.0
/*
 * Compressed DWARF waits (symbol/symbolize.h op_file_symbolize_frame): a file whose
 * .debug_info is compressed (-gz, as distributions' debug packages) is named from its symbol
 * table, without inflating anything, until its code has been the innermost frame of
 * OTELPROF_DWARF_AFTER samples (default 16); then its DWARF is read and the same addresses
 * get their inline chains, files and lines, under the same function names. Frames that are
 * callers (not innermost) never make it read. A file with uncompressed DWARF is read at its
 * first frame as before; OTELPROF_DWARF_AFTER=0 reads compressed DWARF at first sight too,
 * and a bad value is refused.
 *
 * Needs gcc and binutils (nm).
 */
#include <errno.h>
#include <limits.h>
#include <unistd.h>

#include "check.h"
#include "symbol/dwarf.h"
#include "symbol/symbolize.h"

static char tmp[] = "/tmp/otelprof-dwarfwait-XXXXXX";

static const char src[] = "static inline __attribute__((always_inline)) int leaf(int x)\n"
			  "{\n"
			  "	for (int i = 0; i < x; i++)\n"
			  "		x ^= i * 7;\n"
			  "	return x;\n"
			  "}\n"
			  "__attribute__((noinline)) int outer(int x)\n"
			  "{\n"
			  "	return leaf(x) + 1;\n"
			  "}\n"
			  "int main(int c, char **v) { (void)v; return outer(c); }\n";

/* An address of @bin's outer() where the lookup gives leaf() inlined into it, or 0. */
static uint64_t inlined_addr(const char *bin)
{
	struct op_filecache *c = op_filecache_new(0);
	struct op_file *f = c ? op_filecache_get_path(c, bin) : NULL;
	struct op_sym_result r;
	char cmd[PATH_MAX + 64], out[64];
	uint64_t a, found = 0;

	snprintf(cmd, sizeof(cmd), "nm '%s' | awk '$3 == \"outer\" { print $1 }'", bin);
	if (f && check_run(cmd, out, sizeof(out)) == 0 && *out)
		for (a = strtoull(out, NULL, 16); a < strtoull(out, NULL, 16) + 64 && !found; a++)
			if (op_file_symbolize(f, a, &r) == 0 && r.n == 2)
				found = a;
	op_file_put(f);
	op_filecache_free(c);
	return found;
}

int main(void)
{
	char plain[PATH_MAX], gz[PATH_MAX], cmd[3 * PATH_MAX];
	struct op_dwarf_inflated_stats z0, z1;
	struct op_filecache *c;
	struct op_file *f;
	struct op_sym_result r;
	uint64_t a;
	int i;

	if (!mkdtemp(tmp))
		SKIP("cannot create a temporary directory");
	snprintf(plain, sizeof(plain), "%s/plain", tmp);
	snprintf(gz, sizeof(gz), "%s/gz", tmp);
	snprintf(cmd, sizeof(cmd), "cat > '%s/s.c' <<'EOF'\n%sEOF\n", tmp, src);
	REQUIRE(system(cmd) == 0);
	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && gcc -O1 -g -o plain s.c && gcc -O1 -g -gz=zlib -o gz s.c", tmp);
	REQUIRE(system(cmd) == 0);
	unsetenv("OTELPROF_DWARF_AFTER");
	CHECK_EQ(op_symbolize_config(), 0);
	/* the address, found through op_file_symbolize (which reads DWARF at once) */
	a = inlined_addr(gz);
	REQUIRE(a != 0);
	CHECK_EQ(inlined_addr(plain), a);

	c = op_filecache_new(0);
	REQUIRE(c);
	f = op_filecache_get_path(c, gz);
	REQUIRE(f);
	/* callers' frames: named from .symtab, nothing inflated, however many */
	op_dwarf_inflated_stats(&z0);
	for (i = 0; i < 100; i++) {
		CHECK_EQ(op_file_symbolize_frame(f, a, false, &r), 0);
		CHECK(r.deferred);
		CHECK_EQ(r.n, 1);
	}
	CHECK_STR(r.lines[0].name, "outer");
	CHECK(r.lines[0].file == NULL);
	CHECK(op_file_dwarf_waits(f, false));
	/* the mapping says what its frames will have */
	CHECK(op_file_has_lines(f) && op_file_has_inline_frames(f));
	op_dwarf_inflated_stats(&z1);
	CHECK_EQ(z1.inflations, z0.inflations);
	/* innermost frames: 16 samples read it, the 16th named from DWARF */
	for (i = 0; i < 14; i++) {
		CHECK_EQ(op_file_symbolize_frame(f, a, true, &r), 0);
		CHECK(r.deferred);
	}
	CHECK(op_file_dwarf_waits(f, true)); /* the 15th, seen by the caller's cache */
	op_dwarf_inflated_stats(&z1);
	CHECK_EQ(z1.inflations, z0.inflations);
	CHECK_EQ(op_file_symbolize_frame(f, a, true, &r), 0);
	CHECK(!r.deferred);
	CHECK_EQ(r.n, 2);
	CHECK_STR(r.lines[0].name, "leaf");
	CHECK_STR(r.lines[1].name, "outer");
	CHECK(r.lines[0].file && strstr(r.lines[0].file, "s.c"));
	CHECK(r.lines[0].line >= 3 && r.lines[0].line <= 5);
	CHECK(!op_file_dwarf_waits(f, true));
	op_dwarf_inflated_stats(&z1);
	CHECK(z1.inflations > z0.inflations);
	/* and the callers' frames now too */
	CHECK_EQ(op_file_symbolize_frame(f, a, false, &r), 0);
	CHECK(!r.deferred && r.n == 2);
	op_file_put(f);
	op_filecache_free(c);

	/* uncompressed DWARF: read at the first frame, a caller's */
	c = op_filecache_new(0);
	REQUIRE(c);
	f = op_filecache_get_path(c, plain);
	REQUIRE(f);
	CHECK_EQ(op_file_symbolize_frame(f, a, false, &r), 0);
	CHECK(!r.deferred && r.n == 2);
	op_file_put(f);
	op_filecache_free(c);

	/* OTELPROF_DWARF_AFTER=0: compressed DWARF at first sight; bad values refused */
	setenv("OTELPROF_DWARF_AFTER", "0", 1);
	CHECK_EQ(op_symbolize_config(), 0);
	c = op_filecache_new(0);
	REQUIRE(c);
	f = op_filecache_get_path(c, gz);
	REQUIRE(f);
	CHECK_EQ(op_file_symbolize_frame(f, a, false, &r), 0);
	CHECK(!r.deferred && r.n == 2);
	op_file_put(f);
	op_filecache_free(c);
	setenv("OTELPROF_DWARF_AFTER", "2", 1);
	CHECK_EQ(op_symbolize_config(), 0);
	c = op_filecache_new(0);
	REQUIRE(c);
	f = op_filecache_get_path(c, gz);
	REQUIRE(f);
	CHECK_EQ(op_file_symbolize_frame(f, a, true, &r), 0);
	CHECK(r.deferred);
	CHECK_EQ(op_file_symbolize_frame(f, a, true, &r), 0);
	CHECK(!r.deferred && r.n == 2);
	op_file_put(f);
	op_filecache_free(c);
	setenv("OTELPROF_DWARF_AFTER", "lots", 1);
	CHECK_EQ(op_symbolize_config(), -EINVAL);
	setenv("OTELPROF_DWARF_AFTER", "-1", 1);
	CHECK_EQ(op_symbolize_config(), -EINVAL);

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmp);
	return check_done();
}

// SPDX-License-Identifier: Apache-2.0
/*
 * DWARF lines and inline chains, separate debug files, MiniDebugInfo, demangling and Go, on
 * programs this test compiles. Results are checked against binutils' addr2line (an
 * independent DWARF reader) and against the marker comments in the workload sources.
 *
 * Needs gcc, g++, binutils and xz (scripts/install-deps.sh); the Go part needs `go` and is
 * skipped with a note without it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <libgen.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "symbol/dwarf.h"
#include "symbol/symbolize.h"

/* symfile.h */
char *op_demangle(const char *raw);

static char tmp[] = "/tmp/otelprof-dwarftest-XXXXXX";
static char srcroot[PATH_MAX]; /* the repository */

static int runf(char *out, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int runf(char *out, size_t len, const char *fmt, ...)
{
	char cmd[16384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return check_run(cmd, out, len);
}

static bool ends_with(const char *s, const char *sfx)
{
	size_t a = s ? strlen(s) : 0, b = strlen(sfx);

	return s && a >= b && !strcmp(s + a - b, sfx);
}

/* Line number of the first line of @file containing @needle. */
static int line_of(const char *file, const char *needle)
{
	char out[64];

	if (runf(out, sizeof(out), "grep -nF '%s' '%s' | head -1 | cut -d: -f1", needle, file))
		return -1;
	return atoi(out);
}

static uint64_t nm_addr(const char *bin, const char *sym, uint64_t *size)
{
	char out[256];
	unsigned long long a = 0, s = 0;

	if (runf(out, sizeof(out), "nm -S '%s' | awk '$4==\"%s\" {print $1, $2}' | head -1", bin,
		 sym))
		return 0;
	if (sscanf(out, "%llx %llx", &a, &s) < 1)
		return 0;
	if (size)
		*size = s;
	return a;
}

/* addr2line's inline chain for one address. */
struct chain {
	uint64_t addr;
	int n;
	char func[8][1024];
	char file[8][1024];
	int line[8];
};

static int addr2line_chains(const char *bin, uint64_t lo, uint64_t hi, struct chain *c, int max)
{
	char cmd[8192], line[1024];
	int n = -1, len;
	uint64_t a;
	FILE *p;

	len = snprintf(cmd, sizeof(cmd), "addr2line -a -i -f -e '%s'", bin);
	for (a = lo; a < hi && a - lo < (uint64_t)max; a++)
		len += snprintf(cmd + len, sizeof(cmd) - (size_t)len, " %llx", (unsigned long long)a);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (fgets(line, sizeof(line), p)) {
		line[strcspn(line, "\n")] = '\0';
		if (!strncmp(line, "0x", 2)) {
			if (n + 1 >= max)
				break;
			n++;
			c[n].addr = strtoull(line, NULL, 16);
			c[n].n = 0;
			continue;
		}
		if (n < 0 || c[n].n >= 8)
			continue;
		/* function line, then file:line line */
		snprintf(c[n].func[c[n].n], sizeof(c[n].func[0]), "%s", line);
		if (!fgets(line, sizeof(line), p))
			break;
		line[strcspn(line, "\n")] = '\0';
		{
			char *colon = strrchr(line, ':');

			if (colon) {
				*colon = '\0';
				c[n].line[c[n].n] = atoi(colon + 1);
			}
			snprintf(c[n].file[c[n].n], sizeof(c[n].file[0]), "%s", line);
		}
		c[n].n++;
	}
	pclose(p);
	return n + 1;
}

struct inl_expect {
	int hot_line, call_line, hot_decl, outer_decl;
	uint64_t lo, hi;
	struct chain chains[256];
	int n_chains;
	int n_inlined; /* addresses where addr2line shows the inline pair */
};

/* Compare our frames with addr2line's over the whole of sym_outer_caller. */
static void check_inline(struct op_filecache *c, const char *bin, struct inl_expect *x,
			 const char *what)
{
	struct op_sym_result r;
	struct op_file *f = op_filecache_get_path(c, bin);
	int i, j, agree = 0, inl_ok = 0;

	REQUIRE(f);
	for (i = 0; i < x->n_chains; i++) {
		const struct chain *ch = &x->chains[i];
		bool same;

		if (op_file_symbolize(f, ch->addr, &r) != 0) {
			fprintf(stderr, "%s: %#llx not symbolized\n", what, (unsigned long long)ch->addr);
			continue;
		}
		same = (int)r.n == ch->n;
		for (j = 0; same && j < ch->n; j++)
			same = r.lines[j].name && !strcmp(r.lines[j].name, ch->func[j]) &&
			       r.lines[j].line == ch->line[j] &&
			       ends_with(r.lines[j].file, basename((char *)ch->file[j]));
		if (same)
			agree++;
		else
			fprintf(stderr, "%s: %#llx differs from addr2line: ours %zu frames [%s:%lld], "
					"addr2line %d [%s:%d]\n",
				what, (unsigned long long)ch->addr, r.n,
				r.n ? r.lines[0].name : "-", r.n ? (long long)r.lines[0].line : 0,
				ch->n, ch->func[0], ch->line[0]);
		if (ch->n >= 2 && !strcmp(ch->func[0], "sym_hot_inner") &&
		    ch->line[0] == x->hot_line) {
			CHECK(r.n >= 2);
			if (r.n < 2)
				continue;
			CHECK_STR(r.lines[0].name, "sym_hot_inner");
			CHECK_STR(r.lines[0].system_name, "sym_hot_inner");
			CHECK(ends_with(r.lines[0].file, "/sym_inline.c"));
			CHECK_EQ(r.lines[0].line, x->hot_line);
			CHECK_EQ(r.lines[0].start_line, x->hot_decl);
			CHECK_STR(r.lines[1].name, "sym_outer_caller");
			CHECK(ends_with(r.lines[1].file, "/sym_inline.c"));
			CHECK_EQ(r.lines[1].line, x->call_line);
			CHECK_EQ(r.lines[1].start_line, x->outer_decl);
			inl_ok++;
		}
	}
	printf("%s: %d of %d addresses agree with addr2line, %d inlined hot addresses checked\n",
	       what, agree, x->n_chains, inl_ok);
	CHECK_EQ(agree, x->n_chains);
	CHECK(inl_ok > 0);
	CHECK_EQ(inl_ok, x->n_inlined);
	CHECK(op_file_has_inline_frames(f));
	op_file_put(f);
}

static void test_inline(void)
{
	char src[PATH_MAX + 64], bin[PATH_MAX], path[PATH_MAX * 2], out[512];
	static struct inl_expect x;
	struct op_filecache *c;
	struct op_sym_result r;
	struct op_file *f;
	uint64_t size = 0;
	int i;

	snprintf(src, sizeof(src), "%s/tests/workloads/sym_inline.c", srcroot);
	snprintf(bin, sizeof(bin), "%s/inl", tmp);
	REQUIRE(runf(NULL, 0, "cc -O2 -g -o '%s' '%s'", bin, src) == 0);
	x.hot_line = line_of(src, "/* HOT_LINE */");
	x.call_line = line_of(src, "/* CALL_LINE */");
	x.hot_decl = line_of(src, "sym_hot_inner(unsigned long x)");
	x.outer_decl = line_of(src, "sym_outer_caller(unsigned long x)");
	REQUIRE(x.hot_line > 0 && x.call_line > 0 && x.hot_decl > 0 && x.outer_decl > 0);
	x.lo = nm_addr(bin, "sym_outer_caller", &size);
	REQUIRE(x.lo && size);
	x.hi = x.lo + size;
	x.n_chains = addr2line_chains(bin, x.lo, x.hi, x.chains, 256);
	REQUIRE(x.n_chains > 0);
	for (i = 0; i < x.n_chains; i++)
		if (x.chains[i].n >= 2 && !strcmp(x.chains[i].func[0], "sym_hot_inner") &&
		    x.chains[i].line[0] == x.hot_line)
			x.n_inlined++;
	REQUIRE(x.n_inlined > 0); /* the workload really inlines */

	/* 1. the binary with its DWARF */
	c = op_filecache_new(0);
	check_inline(c, bin, &x, "with -g");
	op_filecache_free(c);

	/* 2. stripped, debug file under a debug root's .build-id */
	REQUIRE(runf(NULL, 0,
		     "cd '%s' && objcopy --only-keep-debug inl inl.debug && "
		     "strip --strip-all -o inl.stripped inl && mkdir -p dbgroot/.build-id dbgempty",
		     tmp) == 0);
	REQUIRE(runf(out, sizeof(out), "readelf -n '%s' | awk '/Build ID/ {print $3}'", bin) == 0);
	REQUIRE(strlen(out) == 40);
	snprintf(path, sizeof(path), "mkdir -p '%s/dbgroot/.build-id/%.2s' && cp '%s/inl.debug' "
				     "'%s/dbgroot/.build-id/%.2s/%s.debug'",
		 tmp, out, tmp, tmp, out, out + 2);
	REQUIRE(check_run(path, NULL, 0) == 0);

	snprintf(path, sizeof(path), "%s/dbgempty", tmp);
	op_symbolize_set_debug_dirs(path);
	snprintf(bin, sizeof(bin), "%s/inl.stripped", tmp);
	c = op_filecache_new(0);
	f = op_filecache_get_path(c, bin);
	REQUIRE(f);
	/* without its debug file: no name for a non-exported function */
	CHECK_EQ(op_file_symbolize(f, x.chains[0].addr, &r), -ENOENT);
	CHECK(!op_file_has_lines(f));
	op_file_put(f);
	op_filecache_free(c);

	snprintf(path, sizeof(path), "%s/dbgempty:%s/dbgroot", tmp, tmp);
	op_symbolize_set_debug_dirs(path);
	c = op_filecache_new(0);
	check_inline(c, bin, &x, "stripped + .build-id debug file");
	op_filecache_free(c);

	/* the environment variable does the same */
	op_symbolize_set_debug_dirs(NULL);
	snprintf(path, sizeof(path), "%s/dbgroot", tmp);
	setenv("OTELPROF_DEBUG_ROOT", path, 1);
	c = op_filecache_new(0);
	check_inline(c, bin, &x, "stripped + OTELPROF_DEBUG_ROOT");
	op_filecache_free(c);
	unsetenv("OTELPROF_DEBUG_ROOT");

	/* a debug file of another build under this build id is refused */
	snprintf(path, sizeof(path),
		 "cd '%s' && cc -O2 -g -DOTHER -o other '%s' && objcopy --only-keep-debug other "
		 "other.debug && mkdir -p badroot && cp -r dbgroot/.build-id badroot/ && "
		 "cp other.debug badroot/.build-id/%.2s/%s.debug",
		 tmp, src, out, out + 2);
	REQUIRE(check_run(path, NULL, 0) == 0);
	{
		char other_id[64];

		REQUIRE(runf(other_id, sizeof(other_id),
			     "readelf -n '%s/other' | awk '/Build ID/ {print $3}'", tmp) == 0);
		if (!strcmp(other_id, out)) {
			printf("note: -DOTHER build has the same build id; mismatch check skipped\n");
		} else {
			snprintf(path, sizeof(path), "%s/badroot", tmp);
			op_symbolize_set_debug_dirs(path);
			c = op_filecache_new(0);
			f = op_filecache_get_path(c, bin);
			REQUIRE(f);
			CHECK_EQ(op_file_symbolize(f, x.chains[0].addr, &r), -ENOENT);
			op_file_put(f);
			op_filecache_free(c);
		}
	}

	/* 3. .gnu_debuglink: next to the binary, then in .debug/ */
	snprintf(path, sizeof(path), "%s/dbgempty", tmp);
	op_symbolize_set_debug_dirs(path);
	REQUIRE(runf(NULL, 0,
		     "cd '%s' && mkdir -p linked/.debug && objcopy --remove-section "
		     ".note.gnu.build-id --add-gnu-debuglink=inl.debug inl.stripped linked/inl && "
		     "objcopy --remove-section .note.gnu.build-id inl.debug linked/inl.debug",
		     tmp) == 0);
	snprintf(bin, sizeof(bin), "%s/linked/inl", tmp);
	c = op_filecache_new(0);
	f = op_filecache_get_path(c, bin);
	REQUIRE(f);
	CHECK(op_file_build_id_gnu(f) == NULL); /* only the CRC can match it */
	op_file_put(f);
	op_filecache_free(c);
	/* objcopy computed the CRC over inl.debug, which still has its build-id note: the copy
	 * without it has another CRC and must be refused */
	c = op_filecache_new(0);
	f = op_filecache_get_path(c, bin);
	CHECK_EQ(op_file_symbolize(f, x.chains[0].addr, &r), -ENOENT);
	op_file_put(f);
	op_filecache_free(c);
	REQUIRE(runf(NULL, 0, "cd '%s' && cp inl.debug linked/inl.debug", tmp) == 0);
	c = op_filecache_new(0);
	check_inline(c, bin, &x, "stripped + .gnu_debuglink");
	op_filecache_free(c);
	REQUIRE(runf(NULL, 0, "cd '%s/linked' && mv inl.debug .debug/", tmp) == 0);
	c = op_filecache_new(0);
	check_inline(c, bin, &x, "stripped + .debug/ debuglink");
	op_filecache_free(c);
	op_symbolize_set_debug_dirs(NULL);
}

/* MiniDebugInfo as GDB documents building it: an xz'd ELF with the static symbols. */
static void test_minidebuginfo(void)
{
	char src[PATH_MAX + 64], bin[PATH_MAX], path[PATH_MAX];
	struct op_filecache *c;
	struct op_sym_result r;
	struct op_file *f;
	uint64_t addr;

	snprintf(src, sizeof(src), "%s/tests/workloads/sym_inline.c", srcroot);
	snprintf(bin, sizeof(bin), "%s/mini", tmp);
	REQUIRE(runf(NULL, 0,
		     "cd '%s' && cc -O2 -g -o mini '%s' && "
		     "nm -D mini --format=posix --defined-only | awk '{print $1}' | sort > dyn && "
		     "nm mini --format=posix --defined-only | awk '$2==\"T\"||$2==\"t\" {print $1}' "
		     "| sort > funcs && comm -13 dyn funcs > keep && "
		     "objcopy --only-keep-debug mini mini.dbg && "
		     "objcopy -S --remove-section .gdb_index --remove-section .comment "
		     "--keep-symbols=keep mini.dbg && strip --strip-all -R .comment mini && "
		     "xz -f mini.dbg && objcopy --add-section .gnu_debugdata=mini.dbg.xz mini",
		     tmp, src) == 0);
	{
		char out[64];
		unsigned long long a;

		/* the address from the unstripped copy used to build it */
		REQUIRE(runf(out, sizeof(out),
			     "xz -dc '%s/mini.dbg.xz' > '%s/mini.dbg' && nm '%s/mini.dbg' | "
			     "awk '$3==\"sym_outer_caller\" {print $1}'",
			     tmp, tmp, tmp) == 0);
		REQUIRE(sscanf(out, "%llx", &a) == 1);
		addr = a;
	}
	snprintf(path, sizeof(path), "%s/dbgempty", tmp);
	op_symbolize_set_debug_dirs(path);
	c = op_filecache_new(0);
	f = op_filecache_get_path(c, bin);
	REQUIRE(f);
	CHECK_EQ(op_file_symbolize(f, addr + 2, &r), 0);
	CHECK_STR(r.n ? r.lines[0].name : NULL, "sym_outer_caller");
	CHECK(r.n && r.lines[0].file == NULL);
	op_file_put(f);
	op_filecache_free(c);
	op_symbolize_set_debug_dirs(NULL);
}

static void test_cpp(void)
{
	static const struct {
		const char *mangled, *want;
	} fns[] = {
		{ "_ZN6symcpp6detail11AccumulatorIiE3addEi", "symcpp::detail::Accumulator<int>::add" },
		{ "_ZN6symcpp6detail11AccumulatorIlE3addEl", "symcpp::detail::Accumulator<long>::add" },
		{ "_ZN6symcpp8run_workEi", "symcpp::run_work" },
	};
	char src[PATH_MAX + 64], bin[PATH_MAX];
	struct op_filecache *c = op_filecache_new(0);
	int variant;
	size_t i;

	snprintf(src, sizeof(src), "%s/tests/unit/data/sym_cpp.cc", srcroot);
	/* with DWARF; then stripped, exported (-rdynamic) so only .dynsym names it */
	for (variant = 0; variant < 2; variant++) {
		struct op_file *f;

		snprintf(bin, sizeof(bin), "%s/cpp%d", tmp, variant);
		REQUIRE(runf(NULL, 0, "g++ -O2 -g %s -o '%s' '%s'", variant ? "-rdynamic" : "", bin,
			     src) == 0);
		uint64_t addrs[sizeof(fns) / sizeof(fns[0])];

		for (i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
			addrs[i] = nm_addr(bin, fns[i].mangled, NULL);
			CHECK(addrs[i] != 0);
		}
		if (variant)
			REQUIRE(runf(NULL, 0, "strip --strip-all '%s'", bin) == 0);
		f = op_filecache_get_path(c, bin);
		REQUIRE(f);
		for (i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
			struct op_sym_result r;

			CHECK_EQ(op_file_symbolize(f, addrs[i] + 1, &r), 0);
			if (!r.n)
				continue;
			CHECK_STR(r.lines[r.n - 1].name, fns[i].want);
			CHECK_STR(r.lines[r.n - 1].system_name, fns[i].mangled);
			if (!variant)
				CHECK(ends_with(r.lines[r.n - 1].file, "sym_cpp.cc"));
		}
		op_file_put(f);
	}
	op_filecache_free(c);

	/* Rust symbols (legacy with hash, v0) and things that are not mangled */
	{
		char *d;

		d = op_demangle("_ZN4core3fmt5write17h0123456789abcdefE");
		CHECK_STR(d, "core::fmt::write");
		free(d);
		d = op_demangle("_RNvNtCs1234_7mycrate5inner9do_things");
		CHECK_STR(d, "mycrate::inner::do_things");
		free(d);
		d = op_demangle("_ZN3foo3barIiEEvT_");
		CHECK_STR(d, "foo::bar<int>");
		free(d);
		CHECK(op_demangle("main") == NULL);
		CHECK(op_demangle("_Z") == NULL);
		CHECK(op_demangle("runtime.main") == NULL);
	}
}

/*
 * Every address of symGoHotLoop (symGoSquare inlined into it): the chain the symbolizer gives
 * (the pclntab inline tree; Go binaries no longer open DWARF) must name the same functions,
 * files and lines as DWARF of the full build read directly, innermost first; the stripped
 * build must give the same chains.
 */
static void go_inline_agrees(const char *dir, uint64_t a_loop, uint64_t a_end)
{
	struct op_filecache *c = op_filecache_new(0);
	struct op_file *full, *stripped;
	struct op_dwarf *dw;
	char bin[PATH_MAX * 2];
	size_t addrs = 0, inlined = 0, differ = 0;
	int fd;

	snprintf(bin, sizeof(bin), "%s/gofull", dir);
	full = op_filecache_get_path(c, bin);
	fd = open(bin, O_RDONLY | O_CLOEXEC);
	REQUIRE(full && fd >= 0);
	dw = op_dwarf_open(fd, full);
	close(fd);
	REQUIRE(dw);
	snprintf(bin, sizeof(bin), "%s/gostripped", dir);
	stripped = op_filecache_get_path(c, bin);
	REQUIRE(stripped);
	for (uint64_t pc = a_loop; pc < a_end; pc++) {
		struct op_sym_result a, b, d;
		bool same;

		if (op_dwarf_lookup(dw, pc, &d) || op_file_symbolize(full, pc, &a) ||
		    op_file_symbolize(stripped, pc, &b))
			continue;
		if (!d.n || !d.lines[0].line)
			continue; /* alignment padding after the function: no line anywhere */
		addrs++;
		inlined += a.n > 1;
		same = d.n == a.n && a.n == b.n;
		for (size_t k = 0; same && k < a.n; k++)
			same = d.lines[k].name && a.lines[k].name && b.lines[k].name &&
			       !strcmp(d.lines[k].name, a.lines[k].name) &&
			       !strcmp(a.lines[k].name, b.lines[k].name) &&
			       d.lines[k].line == a.lines[k].line && a.lines[k].line == b.lines[k].line &&
			       d.lines[k].start_line == a.lines[k].start_line &&
			       a.lines[k].start_line == b.lines[k].start_line && d.lines[k].file &&
			       a.lines[k].file && b.lines[k].file &&
			       !strcmp(d.lines[k].file, a.lines[k].file) &&
			       !strcmp(a.lines[k].file, b.lines[k].file);
		if (!same && differ++ < 5)
			fprintf(stderr, "go %#llx: DWARF %zu frames (%s:%lld), pclntab %zu (%s:%lld)\n",
				(unsigned long long)pc, d.n, d.n ? d.lines[0].name : "-",
				d.n ? (long long)d.lines[0].line : 0, a.n, a.n ? a.lines[0].name : "-",
				a.n ? (long long)a.lines[0].line : 0);
	}
	printf("go inline: %zu addresses of symGoHotLoop, %zu with inlined frames, %zu differ "
	       "between DWARF and the pclntab inline tree (full and stripped builds)\n",
	       addrs, inlined, differ);
	CHECK(addrs > 10);
	CHECK(inlined > 0);
	CHECK_EQ(differ, 0);
	op_dwarf_free(dw);
	op_file_put(full);
	op_file_put(stripped);
	op_filecache_free(c);
}

static void test_go(void)
{
	char dir[PATH_MAX + 16], out[PATH_MAX + 64], src[PATH_MAX + 64];
	static const char *bins[] = { "gofull", "gostripped" };
	uint64_t a_loop, a_method;
	int decl_loop, decl_method;
	size_t i;

	if (check_run("command -v go", NULL, 0) != 0) {
		printf("note: no go toolchain, Go part skipped\n");
		return;
	}
	snprintf(src, sizeof(src), "%s/tests/unit/data/sym_go/main.go", srcroot);
	snprintf(dir, sizeof(dir), "%s/go", tmp);
	if (runf(out, sizeof(out),
		 "mkdir -p '%s' && cd '%s' && cp '%s' . && printf 'module symgo\\ngo 1.20\\n' > "
		 "go.mod && export GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0 && "
		 "{ [ -n \"$HOME\" ] || export HOME=%s GOCACHE=%s/cache; } && "
		 "go build -o gofull . && go build -ldflags='-s -w' -o gostripped . 2>&1",
		 dir, dir, src, tmp, tmp) != 0) {
		fprintf(stderr, "go build failed: %s\n", out);
		CHECK(!"go build");
		return;
	}
	/* -s -w leaves the code where it was; make sure before reusing addresses */
	REQUIRE(runf(out, sizeof(out),
		     "cd '%s' && a=$(readelf -SW gofull | awk '$2==\".text\"{print $4,$6}'); "
		     "b=$(readelf -SW gostripped | awk '$2==\".text\"{print $4,$6}'); "
		     "[ \"$a\" = \"$b\" ] && echo same",
		     dir) == 0);
	CHECK_STR(out, "same");
	REQUIRE(runf(out, sizeof(out),
		     "go tool nm '%s/gofull' | awk '$3==\"main.symGoHotLoop\"{print $1} "
		     "$3==\"main.(*worker).symGoMethod\"{print $1}' | sort",
		     dir) == 0);
	{
		unsigned long long x, y;

		REQUIRE(sscanf(out, "%llx\n%llx", &x, &y) == 2);
		a_loop = x < y ? x : y; /* symGoHotLoop comes first in the file */
		a_method = x < y ? y : x;
	}
	decl_loop = line_of(src, "func symGoHotLoop(");
	decl_method = line_of(src, "func (w *worker) symGoMethod(");
	for (i = 0; i < 2; i++) {
		struct op_filecache *c = op_filecache_new(0);
		struct op_sym_result r;
		struct op_file *f;
		char bin[PATH_MAX * 2];

		snprintf(bin, sizeof(bin), "%s/%s", dir, bins[i]);
		f = op_filecache_get_path(c, bin);
		REQUIRE(f);
		CHECK(op_file_is_go(f));
		CHECK(op_file_build_id_go(f) != NULL);
		CHECK_EQ(op_file_symbolize(f, a_loop + 4, &r), 0);
		CHECK_STR(r.n ? r.lines[r.n - 1].name : NULL, "main.symGoHotLoop");
		CHECK(r.n && ends_with(r.lines[r.n - 1].file, "/main.go"));
		CHECK_EQ(r.n ? r.lines[r.n - 1].start_line : 0, decl_loop);
		CHECK_EQ(op_file_symbolize(f, a_method + 4, &r), 0);
		CHECK_STR(r.n ? r.lines[r.n - 1].name : NULL, "main.(*worker).symGoMethod");
		CHECK_EQ(r.n ? r.lines[r.n - 1].line : 0, decl_method);
		printf("go %s: %s at %s:%lld\n", bins[i], r.n ? r.lines[r.n - 1].name : "-",
		       r.n && r.lines[r.n - 1].file ? r.lines[r.n - 1].file : "-",
		       r.n ? (long long)r.lines[r.n - 1].line : 0);
		op_file_put(f);
		op_filecache_free(c);
	}
	go_inline_agrees(dir, a_loop, a_method);
}

/*
 * A file read one unit at a time (its units all in .debug_aranges) names every address as
 * the same file read whole (.debug_aranges removed): 40 units, so the reading also moves to
 * the whole file past 32 of them, each function with an inlined helper.
 */
#define N_UNITS 40

static void test_units(void)
{
	char dir[PATH_MAX], a[PATH_MAX + 8], b[PATH_MAX + 8], path[PATH_MAX + 32], sym[32];
	struct op_filecache *c = op_filecache_new(0);
	struct op_file *fa, *fb;
	int k, addrs = 0, same = 0, inlined = 0, named = 0;
	FILE *o;

	REQUIRE(c);
	snprintf(dir, sizeof(dir), "%s/units", tmp);
	REQUIRE(mkdir(dir, 0700) == 0);
	for (k = 0; k < N_UNITS; k++) {
		snprintf(path, sizeof(path), "%s/u%d.c", dir, k);
		o = fopen(path, "w");
		REQUIRE(o);
		fprintf(o,
			"static inline __attribute__((always_inline)) int h%d(int x)\n"
			"{\n\treturn x * %d + (x >> 3);\n}\n"
			"int f%d(int x)\n{\n\tint s = 0;\n\n\tfor (int i = 0; i < x; i++)\n"
			"\t\ts += h%d(i ^ s);\n\treturn s;\n}\n",
			k, k + 3, k, k);
		fclose(o);
	}
	snprintf(path, sizeof(path), "%s/main.c", dir);
	o = fopen(path, "w");
	REQUIRE(o);
	for (k = 0; k < N_UNITS; k++)
		fprintf(o, "int f%d(int);\n", k);
	fprintf(o, "int main(int argc, char **argv)\n{\n\tint s = 0;\n\n\t(void)argv;\n");
	for (k = 0; k < N_UNITS; k++)
		fprintf(o, "\ts += f%d(argc);\n", k);
	fprintf(o, "\treturn s & 1;\n}\n");
	fclose(o);
	snprintf(a, sizeof(a), "%s/a", dir);
	snprintf(b, sizeof(b), "%s/b", dir);
	REQUIRE(runf(NULL, 0, "cd '%s' && cc -O2 -g -o a u*.c main.c && "
			      "objcopy --remove-section .debug_aranges a b", dir) == 0);
	fa = op_filecache_get_path(c, a);
	fb = op_filecache_get_path(c, b);
	REQUIRE(fa && fb);
	for (k = 0; k < N_UNITS; k++) {
		uint64_t size = 0, lo, x;
		bool hit = false;

		snprintf(sym, sizeof(sym), "f%d", k);
		lo = nm_addr(a, sym, &size);
		CHECK(lo && size);
		for (x = lo; x < lo + size; x++) {
			struct op_sym_result ra, rb;
			int ea = op_file_symbolize(fa, x, &ra), eb = op_file_symbolize(fb, x, &rb);
			bool eq = ea == eb && ra.n == rb.n;

			for (size_t i = 0; eq && i < ra.n; i++)
				eq = ra.lines[i].name && rb.lines[i].name &&
				     !strcmp(ra.lines[i].name, rb.lines[i].name) &&
				     ra.lines[i].line == rb.lines[i].line &&
				     ra.lines[i].start_line == rb.lines[i].start_line &&
				     (ra.lines[i].file == rb.lines[i].file ||
				      (ra.lines[i].file && rb.lines[i].file &&
				       !strcmp(ra.lines[i].file, rb.lines[i].file)));
			addrs++;
			same += eq;
			if (!eq)
				fprintf(stderr, "units: %#llx in %s differs read whole\n",
					(unsigned long long)x, sym);
			if (ea == 0 && ra.n && !strcmp(ra.lines[ra.n - 1].name, sym))
				named++;
			if (ea == 0 && ra.n == 2 && !strncmp(ra.lines[0].name, "h", 1) &&
			    !strcmp(ra.lines[0].name + 1, sym + 1) && !hit) {
				hit = true;
				inlined++;
			}
		}
	}
	printf("units: %d addresses in %d units named alike read one unit at a time and whole "
	       "(%d), %d with f<k> outermost, %d functions with h<k> inlined\n",
	       addrs, N_UNITS, same, named, inlined);
	CHECK(addrs > N_UNITS * 8);
	CHECK_EQ(same, addrs);
	CHECK_EQ(named, addrs);
	CHECK_EQ(inlined, N_UNITS);
	op_file_put(fa);
	op_file_put(fb);
	op_filecache_free(c);
}

int main(void)
{
	char here[PATH_MAX + 64], *d;

	if (check_run("command -v cc && command -v g++ && command -v addr2line && command -v objcopy "
		"&& command -v xz",
		NULL, 0) != 0)
		SKIP("needs gcc, g++, binutils and xz: run scripts/install-deps.sh");
	/* the repository: from the source path compiled in, else the working directory */
	snprintf(here, sizeof(here), "%s", __FILE__);
	d = strstr(here, "tests/unit/test_dwarf.c");
	if (d && d != here && (size_t)(d - here) < sizeof(srcroot)) {
		memcpy(srcroot, here, (size_t)(d - here));
		srcroot[d - here] = '\0';
	} else if (!getcwd(srcroot, sizeof(srcroot))) {
		SKIP("cannot tell where the repository is");
	}
	snprintf(here, sizeof(here), "%s/tests/workloads/sym_inline.c", srcroot);
	if (access(here, R_OK))
		SKIP("run from the repository root (no %s)", here);
	REQUIRE(mkdtemp(tmp));

	test_inline();
	test_units();
	test_minidebuginfo();
	test_cpp();
	test_go();

	if (!getenv("KEEP_TMP"))
		runf(NULL, 0, "rm -rf '%s'", tmp);
	return check_done();
}

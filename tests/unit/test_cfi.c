// SPDX-License-Identifier: Apache-2.0
/*
 * The CFI table compiler (lib/unwind/cfi.c) against binutils: for every row readelf
 * --debug-dump=frames-interp prints (CFA, rbp and return-address columns), the compiled
 * table must give the same rule at that address, and addresses outside every FDE must be
 * "not covered". Checked on binaries this test builds (gcc and clang, with and without frame
 * pointers, PLT calls, stack realignment, .debug_frame only) and on the system's libc.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "unwind/cfi.h"
#include "check.h"

struct fde_range {
	uint64_t start, end;
};

struct cmp_stats {
	size_t rows, fdes, mismatches, exp_cfa;
	struct fde_range *fde;
	size_t n_fde, cap_fde;
};

static int dwarf_reg(const char *name)
{
	static const char *names[] = { "rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp",
				       "r8",  "r9",  "r10", "r11", "r12", "r13", "r14", "r15" };

	for (int i = 0; i < 16; i++)
		if (!strcmp(names[i], name))
			return i;
	return -1;
}

/* Does our rule agree with readelf's CFA token ("rsp+8", "rbp+16", "r10+0", "exp")? */
static bool cfa_matches(const struct op_unwind_rule *r, const char *tok)
{
	char reg[16];
	long off;
	int n;

	if (!strcmp(tok, "exp"))
		return r->cfa_type == OP_CFA_PLT || r->cfa_type == OP_CFA_DEREF;
	if (sscanf(tok, "%15[a-z0-9]%ld%n", reg, &off, &n) != 2)
		return false;
	n = dwarf_reg(reg);
	if (n == OP_DWARF_RSP)
		return r->cfa_type == OP_CFA_RSP && r->cfa_off == off;
	if (n == OP_DWARF_RBP)
		return r->cfa_type == OP_CFA_RBP && r->cfa_off == off;
	return n >= 0 && r->cfa_type == OP_CFA_REG && r->cfa_reg == n && r->cfa_off == off;
}

/* Register column token: "u" (no rule / undefined), "s", "c-16", "exp", or absent (NULL). */
static bool reg_matches(uint8_t type, int32_t off, const char *tok, bool is_ra)
{
	long v;

	if (!tok)
		return is_ra ? false : type == OP_REG_SAME;
	if (!strcmp(tok, "u"))
		return is_ra ? type == OP_REG_UNDEF || type == OP_REG_UNSUPPORTED
			     : type == OP_REG_SAME || type == OP_REG_UNDEF;
	if (!strcmp(tok, "s"))
		return type == OP_REG_SAME;
	if (!strcmp(tok, "exp"))
		return type == OP_REG_AT_RSP || type == OP_REG_AT_RBP ||
		       (!is_ra && type == OP_REG_UNDEF);
	if (tok[0] == 'c' && sscanf(tok + 1, "%ld", &v) == 1)
		return type == OP_REG_AT_CFA && off == v;
	/* val_offset, register rules: rbp is given up, the return address unsupported */
	return is_ra ? type == OP_REG_UNSUPPORTED : type == OP_REG_UNDEF;
}

static void check_row(const struct op_cfi_table *t, uint64_t loc, const char *cfa, const char *rbp,
		      const char *ra, struct cmp_stats *st, const char *what)
{
	const struct op_unwind_rule *r = op_cfi_lookup(t, loc);

	st->rows++;
	if (!strcmp(cfa, "exp"))
		st->exp_cfa++;
	if (!r || !cfa_matches(r, cfa) || !reg_matches(r->rbp_type, r->rbp_off, rbp, false) ||
	    !reg_matches(r->ra_type, r->ra_off, ra, true)) {
		if (st->mismatches++ < 10)
			fprintf(stderr,
				"%s: %#llx: readelf cfa=%s rbp=%s ra=%s, compiled %s cfa_type=%d "
				"reg=%d off=%d rbp=%d/%d ra=%d/%d\n",
				what, (unsigned long long)loc, cfa, rbp ? rbp : "-", ra ? ra : "-",
				r ? "" : "(none)", r ? r->cfa_type : -1, r ? r->cfa_reg : -1,
				r ? r->cfa_off : 0, r ? r->rbp_type : -1, r ? r->rbp_off : 0,
				r ? r->ra_type : -1, r ? r->ra_off : 0);
	}
}

/*
 * Run readelf on @path and check every row of section @section (".eh_frame" or
 * ".debug_frame") against @t.
 */
static int compare_with_readelf(const char *path, const char *section, const struct op_cfi_table *t,
				struct cmp_stats *st)
{
	char cmd[4200], line[4096], want[64];
	/* initial rows of CIEs by offset, for FDEs that have no instructions of their own */
	struct {
		unsigned long off;
		char cfa[32], rbp[32], ra[32];
		bool has_rbp;
	} cies[64];
	int n_cies = 0, cur_cie = -1;
	bool in_section = false, in_fde = false, in_cie = false, fde_rows = false;
	int col_cfa = -1, col_rbp = -1, col_ra = -1;
	unsigned long long fde_start = 0, fde_end = 0;
	unsigned long fde_cie = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "readelf --debug-dump=frames-interp '%s' 2>/dev/null", path);
	snprintf(want, sizeof(want), "Contents of the %s section", section);
	f = popen(cmd, "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *tok[32];
		int nt = 0;

		line[strcspn(line, "\n")] = 0;
		if (!strncmp(line, "Contents of the ", 16)) {
			in_section = !strncmp(line, want, strlen(want));
			continue;
		}
		if (!in_section)
			continue;
		for (char *s = strtok(line, " \t"); s && nt < 32; s = strtok(NULL, " \t")) {
			if (s[0] == '(' && nt)
				continue; /* "r10 (r10)": register rule and its name */
			tok[nt++] = s;
		}
		if (nt == 0) {
			/* blank line ends an entry: an FDE without rows uses its CIE's row */
			if (in_fde && !fde_rows) {
				for (int i = 0; i < n_cies; i++) {
					if (cies[i].off != fde_cie)
						continue;
					check_row(t, fde_start, cies[i].cfa,
						  cies[i].has_rbp ? cies[i].rbp : NULL, cies[i].ra,
						  st, path);
				}
			}
			in_fde = in_cie = false;
			continue;
		}
		if (nt >= 4 && !strcmp(tok[3], "FDE")) {
			char *pc = NULL;

			for (int i = 4; i < nt; i++) {
				if (!strncmp(tok[i], "pc=", 3))
					pc = tok[i] + 3;
				if (!strncmp(tok[i], "cie=", 4))
					fde_cie = strtoul(tok[i] + 4, NULL, 16);
			}
			if (!pc || sscanf(pc, "%llx..%llx", &fde_start, &fde_end) != 2)
				continue;
			in_fde = fde_start != 0 && fde_end > fde_start;
			fde_rows = false;
			if (in_fde) {
				st->fdes++;
				if (st->n_fde == st->cap_fde) {
					st->cap_fde = st->cap_fde ? 2 * st->cap_fde : 1024;
					st->fde = realloc(st->fde, st->cap_fde * sizeof(*st->fde));
				}
				st->fde[st->n_fde++] = (struct fde_range){ fde_start, fde_end };
			}
			continue;
		}
		if (nt >= 4 && !strcmp(tok[3], "CIE")) {
			in_cie = n_cies < 64;
			if (in_cie) {
				cur_cie = n_cies++;
				cies[cur_cie].off = strtoul(tok[0], NULL, 16);
				strcpy(cies[cur_cie].cfa, "?");
			}
			continue;
		}
		if (!strcmp(tok[0], "LOC")) {
			col_cfa = col_rbp = col_ra = -1;
			for (int i = 0; i < nt; i++) {
				if (!strcmp(tok[i], "CFA"))
					col_cfa = i;
				else if (!strcmp(tok[i], "rbp"))
					col_rbp = i;
				else if (!strcmp(tok[i], "ra"))
					col_ra = i;
			}
			continue;
		}
		if (col_cfa < 0 || col_ra < 0 || nt <= col_ra)
			continue;
		if (in_cie && cur_cie >= 0) {
			snprintf(cies[cur_cie].cfa, 32, "%s", tok[col_cfa]);
			snprintf(cies[cur_cie].ra, 32, "%s", tok[col_ra]);
			cies[cur_cie].has_rbp = col_rbp >= 0;
			if (col_rbp >= 0)
				snprintf(cies[cur_cie].rbp, 32, "%s", tok[col_rbp]);
			continue;
		}
		if (!in_fde)
			continue;
		fde_rows = true;
		check_row(t, strtoull(tok[0], NULL, 16), tok[col_cfa],
			  col_rbp >= 0 ? tok[col_rbp] : NULL, tok[col_ra], st, path);
	}
	pclose(f); /* readelf exits 1 on some distribution libraries without saying why */
	return 0;
}

static int cmp_range(const void *a, const void *b)
{
	const struct fde_range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* The first byte after each FDE not covered by another must be "not covered". */
static void check_gaps(const struct op_cfi_table *t, struct cmp_stats *st, const char *what)
{
	size_t bad = 0, gaps = 0;
	uint64_t reach = 0;

	qsort(st->fde, st->n_fde, sizeof(*st->fde), cmp_range);
	for (size_t i = 0; i < st->n_fde; i++) {
		if (st->fde[i].end > reach)
			reach = st->fde[i].end;
		if (i + 1 < st->n_fde && st->fde[i + 1].start <= reach)
			continue;
		if (i + 1 < st->n_fde && st->fde[i].end != reach)
			continue;
		const struct op_unwind_rule *r = op_cfi_lookup(t, reach);

		gaps++;
		if (i + 1 == st->n_fde ? !!r && r->cfa_type != OP_CFA_NONE
				       : !r || r->cfa_type != OP_CFA_NONE)
			bad++;
	}
	if (bad)
		fprintf(stderr, "%s: %zu of %zu FDE ends not marked uncovered\n", what, bad, gaps);
	CHECK(bad == 0);
	/* below the first FDE: nothing */
	if (st->n_fde)
		CHECK(op_cfi_lookup(t, st->fde[0].start - 1) == NULL);
}

/*
 * The bucket index the BPF lookup narrows its search with (bpf/unwind/native.bpf.h, find_rule()):
 * for every row-relative address of the table, and past its end, the rows of the address's
 * bucket must hold the row op_cfi_lookup() finds; the index keeps to its share of the rows.
 */
static void check_index(const struct op_cfi_table *t, const char *what)
{
	unsigned int shift;
	size_t n = op_cfi_index_entries(t, &shift), bad = 0;
	uint32_t *idx, last = t->rows[t->n_rows - 1].pc;

	if (!n) {
		CHECK(t->n_rows < 2 * OP_UNWIND_ROWS_PER_INDEX_SLOT);
		return;
	}
	CHECK(n <= t->n_rows / OP_UNWIND_ROWS_PER_INDEX_SLOT * 2);
	CHECK(shift >= OP_UNWIND_MIN_BUCKET_SHIFT && shift <= OP_UNWIND_MAX_BUCKET_SHIFT);
	CHECK_EQ((size_t)(last >> shift) + 2, n);
	idx = malloc(n * sizeof(*idx));
	REQUIRE(idx);
	op_cfi_index_fill(t, shift, idx, n);
	for (uint64_t rel = 0; rel <= (uint64_t)last + 4096; rel++) {
		size_t b = rel >> shift, lo, hi;
		const struct op_unwind_rule *want = op_cfi_lookup(t, t->base + rel), *got;

		if (b >= n - 1)
			b = n - 2;
		lo = idx[b];
		hi = idx[b + 1] + 1;
		if (lo >= hi || hi > t->n_rows) {
			bad++;
			continue;
		}
		while (hi - lo > 1) { /* the BPF search, within the bucket */
			size_t mid = lo + (hi - lo) / 2;

			if (t->rows[mid].pc <= rel)
				lo = mid;
			else
				hi = mid;
		}
		got = t->rows[lo].pc <= rel ? &t->rules[t->rows[lo].rule] : NULL;
		bad += got != want;
	}
	if (bad)
		fprintf(stderr, "%s: %zu addresses found another row through the bucket index\n",
			what, bad);
	CHECK_EQ(bad, 0);
	free(idx);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Compile @path, compare against readelf, print figures. Returns the table (caller frees). */
static struct op_cfi_table *check_binary(const char *path, const char *section)
{
	struct op_cfi_table *t = NULL;
	struct cmp_stats st = { 0 };
	double t0 = now_ms(), ms;
	int err = op_cfi_compile_path(path, &t);

	ms = now_ms() - t0;
	if (err) {
		fprintf(stderr, "%s: compile failed: %s\n", path, strerror(-err));
		CHECK(err == 0);
		return NULL;
	}
	CHECK_EQ(t->source, strcmp(section, ".eh_frame") ? OP_CFI_DEBUG_FRAME : OP_CFI_EH_FRAME);
	CHECK_EQ(compare_with_readelf(path, section, t, &st), 0);
	CHECK(st.rows > 0);
	CHECK_EQ(st.mismatches, 0);
	CHECK_EQ(t->n_unsupported, 0);
	CHECK(t->n_fdes == st.fdes);
	check_gaps(t, &st, path);
	check_index(t, path);
	printf("%s (%s): %zu FDEs, %zu readelf rows, %zu raw rows -> %zu rows, %zu rules, "
	       "%zu bytes (%.2f bytes/row incl. rules), %.1f ms\n",
	       path, section, t->n_fdes, st.rows, t->n_raw_rows, t->n_rows, t->n_rules,
	       op_cfi_table_bytes(t), (double)op_cfi_table_bytes(t) / (double)t->n_rows, ms);
	free(st.fde);
	return t;
}

static const char *test_src =
	"#include <stdio.h>\n"
	"#include <stdlib.h>\n"
	"#include <string.h>\n"
	"__attribute__((noinline)) int leaf(int x) { return x * 3 + 1; }\n"
	"__attribute__((noinline)) int aligned(int n) {\n"
	"	char buf[n];\n"
	"	__attribute__((aligned(64))) char a[128];\n"
	"	memset(a, n, sizeof(a)); memset(buf, 1, n);\n"
	"	return a[n % 128] + buf[n - 1] + leaf(n);\n"
	"}\n"
	"__attribute__((noinline)) long big(int n) {\n"
	"	volatile char huge[70000];\n"
	"	huge[n] = 1;\n"
	"	return huge[n] + aligned(n);\n"
	"}\n"
	"int main(int argc, char **argv) {\n"
	"	printf(\"%ld\\n\", big(argc + 5) + (long)strlen(argv[0]) + atoi(\"3\"));\n"
	"	return 0;\n"
	"}\n";

static bool have(const char *tool)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", tool);
	return system(cmd) == 0;
}

static int run(const char *fmt, const char *a, const char *b, const char *c)
{
	char cmd[2048];

	snprintf(cmd, sizeof(cmd), fmt, a, b, c);
	return system(cmd);
}

static const char *libc_path(void)
{
	static char path[4096];
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4200];

	if (!f)
		return NULL;
	path[0] = 0;
	while (fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/');

		if (p && strstr(p, "/libc.so")) {
			p[strcspn(p, "\n")] = 0;
			snprintf(path, sizeof(path), "%s", p);
			break;
		}
	}
	fclose(f);
	return path[0] ? path : NULL;
}

static const char *go_src = "package main\n"
			    "\n"
			    "import \"fmt\"\n"
			    "\n"
			    "//go:noinline\n"
			    "func leaf(n int) int {\n"
			    "	s := 0\n"
			    "	for i := 0; i < n; i++ {\n"
			    "		s += i * i\n"
			    "	}\n"
			    "	return s\n"
			    "}\n"
			    "\n"
			    "func main() { fmt.Println(leaf(10)) }\n";

/* Same rows and rules, entry by entry. */
static bool same_table(const struct op_cfi_table *a, const struct op_cfi_table *b)
{
	return a->base == b->base && a->n_rows == b->n_rows && a->n_rules == b->n_rules &&
	       !memcmp(a->rows, b->rows, a->n_rows * sizeof(*a->rows)) &&
	       !memcmp(a->rules, b->rules, a->n_rules * sizeof(*a->rules));
}

/*
 * Go: rows from .gopclntab's SP-delta tables must say what Go's own .debug_frame says at
 * every row readelf prints; -s -w (no .debug_frame left) must give the very same table;
 * an externally linked cgo binary must be covered by .eh_frame (C) and .gopclntab (Go).
 */
static void check_go(const char *tmp)
{
	char cmd[2048], path[512], dir[300];
	struct op_cfi_table *full = NULL, *t = NULL;
	struct cmp_stats st = { 0 };
	FILE *f;

	if (!have("go")) {
		printf("note: no go toolchain, Go part skipped\n");
		return;
	}
	/* a directory of its own: go build refuses the C files next door */
	snprintf(dir, sizeof(dir), "%s/go", tmp);
	REQUIRE(mkdir(dir, 0755) == 0);
	snprintf(path, sizeof(path), "%s/main.go", dir);
	f = fopen(path, "w");
	REQUIRE(f);
	fputs(go_src, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && printf 'module cfigo\\ngo 1.20\\n' > go.mod && "
		 "export GOFLAGS=-mod=mod GOTOOLCHAIN=local && "
		 "{ [ -n \"$HOME\" ] || export HOME='%s' GOCACHE='%s/cache'; } && "
		 "CGO_ENABLED=0 go build -o gofull . && "
		 "CGO_ENABLED=0 go build -ldflags='-s -w' -o gostripped . && "
		 "CGO_ENABLED=1 go build -ldflags=-linkmode=external -o gocgo . >/dev/null 2>&1",
		 dir, tmp, tmp);
	if (system(cmd)) {
		fprintf(stderr, "go build failed: %s\n", cmd);
		CHECK(!"go build");
		return;
	}

	snprintf(path, sizeof(path), "%s/gofull", dir);
	REQUIRE(op_cfi_compile_path(path, &full) == 0);
	CHECK_EQ(full->source, OP_CFI_GOPCLNTAB);
	CHECK_EQ(compare_with_readelf(path, ".debug_frame", full, &st), 0);
	CHECK(st.rows > 1000);
	CHECK_EQ(st.mismatches, 0);
	CHECK_EQ(full->n_unsupported, 0);
	CHECK_EQ(full->n_fdes, st.fdes);
	check_gaps(full, &st, path);
	printf("%s (.gopclntab vs .debug_frame): %zu functions, %zu readelf rows, %zu rows, "
	       "%zu rules, %zu mismatches\n",
	       path, full->n_fdes, st.rows, full->n_rows, full->n_rules, st.mismatches);
	free(st.fde);

	snprintf(path, sizeof(path), "%s/gostripped", dir);
	REQUIRE(op_cfi_compile_path(path, &t) == 0);
	CHECK_EQ(t->source, OP_CFI_GOPCLNTAB);
	CHECK(same_table(full, t));
	op_cfi_table_free(t);

	memset(&st, 0, sizeof(st));
	snprintf(path, sizeof(path), "%s/gocgo", dir);
	REQUIRE(op_cfi_compile_path(path, &t) == 0);
	CHECK_EQ(t->source, OP_CFI_GOPCLNTAB);
	CHECK_EQ(compare_with_readelf(path, ".eh_frame", t, &st), 0);
	CHECK_EQ(compare_with_readelf(path, ".debug_frame", t, &st), 0);
	CHECK_EQ(st.mismatches, 0);
	check_gaps(t, &st, path);
	printf("%s (.eh_frame + .gopclntab vs .eh_frame + .debug_frame): %zu readelf rows, "
	       "%zu rows, %zu mismatches\n",
	       path, st.rows, t->n_rows, st.mismatches);
	free(st.fde);
	op_cfi_table_free(t);
	op_cfi_table_free(full);
}

int main(void)
{
	char dir[] = "/tmp/test_cfi.XXXXXX", src[256], bin[256];
	struct op_cfi_table *t;
	const char *compilers[] = { "gcc", "clang" };
	const char *libc;
	bool built = false;

	if (!have("readelf"))
		SKIP("readelf not installed (apt-get install binutils)");
	if (!mkdtemp(dir))
		SKIP("cannot create a temporary directory");
	snprintf(src, sizeof(src), "%s/prog.c", dir);
	FILE *f = fopen(src, "w");

	REQUIRE(f);
	fputs(test_src, f);
	fclose(f);

	for (size_t i = 0; i < 2; i++) {
		/* the last one (gcc only) makes the VLA function realign through DRAP (r10) */
		const char *flags[] = { "-O2 -fomit-frame-pointer", "-O2 -fno-omit-frame-pointer",
					"-O0",
					"-O2 -fomit-frame-pointer -mincoming-stack-boundary=3" };

		if (!have(compilers[i]))
			continue;
		for (size_t j = 0; j < (i == 0 ? 4 : 3); j++) {
			snprintf(bin, sizeof(bin), "%s/prog-%s-%zu", dir, compilers[i], j);
			char cmd[1024];

			snprintf(cmd, sizeof(cmd), "%s %s -o %s %s", compilers[i], flags[j], bin,
				 src);
			if (system(cmd)) {
				fprintf(stderr, "cannot build %s\n", bin);
				CHECK(0);
				continue;
			}
			built = true;
			t = check_binary(bin, ".eh_frame");
			if (t && i == 0 && j == 3) {
				/* gcc -O2 realigns aligned() through DRAP and PLT stubs use the
				 * rip-dependent expression: both forms must be recognised. */
				bool plt = false, deref = false, reg = false;

				for (size_t k = 0; k < t->n_rules; k++) {
					plt |= t->rules[k].cfa_type == OP_CFA_PLT;
					deref |= t->rules[k].cfa_type == OP_CFA_DEREF;
					reg |= t->rules[k].cfa_type == OP_CFA_REG;
				}
				CHECK(plt);
				CHECK(deref);
				CHECK(reg);
			}
			op_cfi_table_free(t);
		}
	}
	CHECK(built);

	/* .debug_frame only: built without unwind tables, .eh_frame removed */
	if (have("gcc") && have("objcopy")) {
		snprintf(bin, sizeof(bin), "%s/prog-debugframe", dir);
		char cmd[1024];

		snprintf(cmd, sizeof(cmd),
			 "gcc -O2 -g -fno-asynchronous-unwind-tables -fno-unwind-tables -o %s %s "
			 "&& objcopy --remove-section .eh_frame --remove-section .eh_frame_hdr %s",
			 bin, src, bin);
		if (system(cmd) == 0) {
			t = check_binary(bin, ".debug_frame");
			op_cfi_table_free(t);
		} else {
			fprintf(stderr, "note: could not build a .debug_frame-only binary\n");
		}
	}

	libc = libc_path();
	CHECK(libc != NULL);
	if (libc) {
		t = check_binary(libc, ".eh_frame");
		if (t) {
			/* __restore_rt: the signal trampoline's FDE carries the 'S' augmentation */
			bool signal = false;

			for (size_t k = 0; k < t->n_rules; k++)
				signal |= (t->rules[k].flags & OP_RULE_SIGNAL) &&
					  t->rules[k].cfa_type == OP_CFA_DEREF &&
					  t->rules[k].ra_type == OP_REG_AT_RSP;
			CHECK(signal);
			CHECK((double)op_cfi_table_bytes(t) / (double)t->n_rows <= 8.5);
		}
		op_cfi_table_free(t);
	}

	/* an interpreter, the other big binary the profiler must unwind through */
	if (access("/usr/bin/python3", R_OK) == 0) {
		char *py = realpath("/usr/bin/python3", NULL);

		t = py ? check_binary(py, ".eh_frame") : NULL;
		op_cfi_table_free(t);
		free(py);
	}

	check_go(dir);

	/* a file without CFI */
	snprintf(bin, sizeof(bin), "%s/prog.c", dir);
	CHECK_EQ(op_cfi_compile_path(bin, &t), -EINVAL);

	char id1[64], id2[64];
	int fd = open("/proc/self/exe", 0);

	CHECK_EQ(op_cfi_file_id(fd, id1, sizeof(id1)), 0);
	CHECK_EQ(op_cfi_file_id(fd, id2, sizeof(id2)), 0);
	CHECK_STR(id1, id2);
	CHECK(id1[0] == 'b' || id1[0] == 'h');
	close(fd);

	run("rm -rf %s%s%s", dir, "", "");
	return check_done();
}

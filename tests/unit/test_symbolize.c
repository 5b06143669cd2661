// SPDX-License-Identifier: Apache-2.0
/*
 * ELF side of the symbolizer, checked against binutils on files this test has at hand: its own
 * executable (PIE, with .symtab), libc, an lld-linked binary whose file offsets differ from its
 * virtual addresses, and truncated or garbage copies. Also SHA-256 test vectors and the
 * htlhash, recomputed here with sha256sum(1).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "sample/proc.h"
#include "util/sha256.h"
#include "symbol/symbolize.h"

/* Functions with distinctive names to look up; noinline so they exist as symbols. */
__attribute__((noinline)) int symtest_alpha(int x)
{
	__asm__ volatile("" ::: "memory");
	return x * 3 + 1;
}

__attribute__((noinline)) int symtest_beta(int x)
{
	__asm__ volatile("" ::: "memory");
	return symtest_alpha(x) ^ 0x55;
}

static char tmpdir[] = "/tmp/otelprof-symtest-XXXXXX";

static void hexs(const uint8_t *d, size_t n, char *out)
{
	size_t i;

	for (i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", d[i]);
}

static void test_sha256(void)
{
	static const struct {
		const char *in;
		const char *hex;
	} v[] = {
		{ "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
		{ "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" },
		{ "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
		  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1" },
		{ "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopq"
		  "klmnopqrlmnopqrsmnopqrstnopqrstu",
		  "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1" },
	};
	uint8_t d[32];
	char h[65];
	struct op_sha256 s;
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		op_sha256(v[i].in, strlen(v[i].in), d);
		hexs(d, 32, h);
		CHECK_STR(h, v[i].hex);
	}
	/* one million 'a', fed in odd-sized pieces to exercise buffering */
	op_sha256_init(&s);
	{
		char a[997];
		size_t left = 1000000;

		memset(a, 'a', sizeof(a));
		while (left) {
			size_t k = left < sizeof(a) ? left : sizeof(a);

			op_sha256_update(&s, a, k);
			left -= k;
		}
	}
	op_sha256_final(&s, d);
	hexs(d, 32, h);
	CHECK_STR(h, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

/* htlhash recomputed with coreutils: head/tail + the length as big-endian u64. */
static void expected_htlhash(const char *path, char out[33])
{
	char cmd[1024], res[128];
	struct stat st;
	uint64_t size;
	char lenesc[64] = "";
	int i;

	REQUIRE(stat(path, &st) == 0);
	size = (uint64_t)st.st_size;
	for (i = 0; i < 8; i++)
		sprintf(lenesc + strlen(lenesc), "\\%03o",
			(unsigned)((size >> (56 - 8 * i)) & 255));
	snprintf(cmd, sizeof(cmd),
		 "{ head -c 4096 '%s'; tail -c 4096 '%s'; printf '%s'; } | sha256sum", path, path,
		 lenesc);
	REQUIRE(check_run(cmd, res, sizeof(res)) == 0);
	memcpy(out, res, 32);
	out[32] = '\0';
}

static void test_self(struct op_filecache *c, const char *exe)
{
	struct op_sym_result r;
	struct op_file *f, *g;
	char cmd[8400], out[512], want[33];
	unsigned long long a_alpha = 0, a_beta = 0, a_main = 0;
	uint64_t v;
	int rc;

	f = op_filecache_get_path(c, exe);
	REQUIRE(f != NULL);

	/* build id as readelf -n prints it */
	snprintf(cmd, sizeof(cmd), "readelf -n '%s' | awk '/Build ID/ {print $3}'", exe);
	REQUIRE(check_run(cmd, out, sizeof(out)) == 0);
	CHECK(strlen(out) == 40);
	CHECK_STR(op_file_build_id_gnu(f), out);
	CHECK(op_file_build_id_go(f) == NULL);
	CHECK(!op_file_is_go(f));

	expected_htlhash(exe, want);
	CHECK_STR(op_file_htlhash(f), want);

	/* addresses as nm prints them */
	snprintf(cmd, sizeof(cmd),
		 "nm --defined-only '%s' | awk '$3==\"symtest_alpha\"||$3==\"symtest_beta\"||"
		 "$3==\"main\" {print $3, $1}' | sort",
		 exe);
	REQUIRE(check_run(cmd, out, sizeof(out)) == 0);
	rc = sscanf(out, "main %llx\nsymtest_alpha %llx\nsymtest_beta %llx", &a_main, &a_alpha,
		    &a_beta);
	CHECK_EQ(rc, 3);

	CHECK_EQ(op_file_symbolize(f, a_alpha, &r), 0);
	CHECK_EQ(r.n, 1);
	CHECK_STR(r.lines[0].name, "symtest_alpha");
	CHECK_STR(r.lines[0].system_name, "symtest_alpha");
	CHECK_EQ(op_file_symbolize(f, a_beta + 3, &r), 0);
	CHECK_STR(r.lines[0].name, "symtest_beta");
	CHECK_EQ(op_file_symbolize(f, a_main + 1, &r), 0);
	CHECK_STR(r.lines[0].name, "main");
	/* before the first symbol / far outside any: nothing */
	CHECK_EQ(op_file_symbolize(f, 1, &r), -ENOENT);
	CHECK_EQ(r.n, 0);
	CHECK_EQ(op_file_symbolize(f, 0x7fffffff0000ull, &r), -ENOENT);

	/* the same file again: the cached object, one more reference */
	g = op_filecache_get_path(c, exe);
	CHECK(g == f);
	op_file_put(g);

	/* live address in this process -> vaddr through /proc/self/maps */
	{
		struct op_proctab *t = op_proctab_new(c);
		struct op_proc *p = t ? op_proctab_get(t, getpid()) : NULL;
		uint64_t pc = (uint64_t)(uintptr_t)&symtest_beta;
		struct op_vma *vma = op_proc_find_vma(p, pc);
		struct op_file *vf;

		REQUIRE(p != NULL);
		REQUIRE(vma != NULL);
		vf = op_proc_vma_file(t, p, vma);
		CHECK(vf == f);
		CHECK_EQ(op_file_offset_to_vaddr(f, vma->offset + (pc - vma->start), &v), 0);
		CHECK_EQ(v, a_beta);
		op_proctab_free(t);
	}
	op_file_put(f);
}

/* A libc function: symbolized through the live mapping (libc is a shared library). */
static void test_libc(struct op_filecache *c)
{
	void *h = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	void *fn = h ? dlsym(h, "qsort") : NULL;
	struct op_proctab *t = op_proctab_new(c);
	struct op_proc *p = op_proctab_get(t, getpid());
	struct op_sym_result r;
	struct op_vma *vma;
	struct op_file *f;
	uint64_t v;

	REQUIRE(fn && p);
	vma = op_proc_find_vma(p, (uint64_t)(uintptr_t)fn + 4);
	REQUIRE(vma != NULL);
	CHECK(strstr(vma->path, "libc.so.6") != NULL);
	f = op_proc_vma_file(t, p, vma);
	REQUIRE(f != NULL);
	CHECK(op_file_build_id_gnu(f) != NULL);
	CHECK_EQ(op_file_offset_to_vaddr(
			 f, vma->offset + ((uint64_t)(uintptr_t)fn + 4 - vma->start), &v),
		 0);
	CHECK_EQ(op_file_symbolize(f, v, &r), 0);
	CHECK_STR(r.lines[0].name, "qsort");
	op_proctab_free(t);
	dlclose(h);
}

/* lld puts segments at file offsets that differ from their addresses. */
static void test_lld_offsets(struct op_filecache *c)
{
	char src[256], bin[300], cmd[1024], out[4096];
	unsigned long long off, vaddr, filesz;
	struct op_file *f;
	const char *line;
	int checked = 0;
	uint64_t v;
	FILE *fp;

	snprintf(src, sizeof(src), "%s/lld.c", tmpdir);
	snprintf(bin, sizeof(bin), "%s/lld-bin", tmpdir);
	fp = fopen(src, "w");
	REQUIRE(fp);
	fputs("int lldfunc(int x) { return x * 7; }\nint main(int c, char **v) "
	      "{ return lldfunc(c); }\n",
	      fp);
	fclose(fp);
	snprintf(cmd, sizeof(cmd), "cc -O1 -fPIE -pie -fuse-ld=lld -o '%s' '%s' 2>/dev/null", bin,
		 src);
	if (check_run(cmd, NULL, 0) != 0) {
		printf("note: no lld, skipping the lld offset check\n");
		return;
	}
	snprintf(cmd, sizeof(cmd), "readelf -lW '%s' | awk '$1==\"LOAD\" {print $2, $3, $5}'", bin);
	REQUIRE(check_run(cmd, out, sizeof(out)) == 0);
	f = op_filecache_get_path(c, bin);
	REQUIRE(f);
	for (line = out; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		if (sscanf(line, "%llx %llx %llx", &off, &vaddr, &filesz) != 3 || !filesz)
			continue;
		/* the segment's first byte and the page-aligned offset maps shows */
		CHECK_EQ(op_file_offset_to_vaddr(f, off, &v), 0);
		CHECK_EQ(v, vaddr);
		CHECK_EQ(op_file_offset_to_vaddr(f, off + filesz - 1, &v), 0);
		CHECK_EQ(v, vaddr + filesz - 1);
		if (off != vaddr)
			checked++;
	}
	CHECK(checked > 0);
	/* lldfunc symbolized at its nm address */
	snprintf(cmd, sizeof(cmd), "nm '%s' | awk '$3==\"lldfunc\" {print $1}'", bin);
	REQUIRE(check_run(cmd, out, sizeof(out)) == 0);
	{
		struct op_sym_result r;

		vaddr = strtoull(out, NULL, 16);
		CHECK_EQ(op_file_symbolize(f, vaddr, &r), 0);
		CHECK_STR(r.n ? r.lines[0].name : NULL, "lldfunc");
	}
	op_file_put(f);
}

static void write_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	REQUIRE(fd >= 0);
	REQUIRE(write(fd, data, len) == (ssize_t)len);
	close(fd);
}

/*
 * Assembler entry points without a type or size (ld.so's _start and _dl_start_user) name
 * the code up to the next symbol; a label inside a sized function does not split it, and
 * the assembler's local ".L" labels name nothing.
 */
static void test_labels(struct op_filecache *c)
{
	static const char asm_src[] =
		"\t.text\n"
		"\t.globl sized_fn\n\t.type sized_fn,@function\n"
		"sized_fn:\n\tnop\n\tnop\ninner_label:\n\tnop\n\tnop\n\tret\n"
		"\t.size sized_fn, .-sized_fn\n"
		"entry_label:\n\tnop\n\tnop\n.Llocal:\n\tnop\n\tnop\n\tret\n"
		"\t.globl main\n\t.type main,@function\n"
		"main:\n\tcall sized_fn\n\tcall entry_label\n\txor %eax,%eax\n\tret\n"
		"\t.size main, .-main\n"
		"\t.section .note.GNU-stack,\"\",@progbits\n";
	char src[256], bin[300], cmd[1024], out[256];
	unsigned long long fn, inner, entry;
	struct op_sym_result r;
	struct op_file *f;

	snprintf(src, sizeof(src), "%s/labels.s", tmpdir);
	snprintf(bin, sizeof(bin), "%s/labels-bin", tmpdir);
	write_file(src, asm_src, sizeof(asm_src) - 1);
	snprintf(cmd, sizeof(cmd), "cc -o '%s' '%s' 2>/dev/null", bin, src);
	REQUIRE(check_run(cmd, NULL, 0) == 0);
	snprintf(cmd, sizeof(cmd),
		 "nm '%s' | awk '$3==\"sized_fn\"{a=$1} $3==\"inner_label\"{b=$1} "
		 "$3==\"entry_label\"{c=$1} END {print a, b, c}'",
		 bin);
	REQUIRE(check_run(cmd, out, sizeof(out)) == 0);
	REQUIRE(sscanf(out, "%llx %llx %llx", &fn, &inner, &entry) == 3);
	f = op_filecache_get_path(c, bin);
	REQUIRE(f);
	CHECK_EQ(op_file_symbolize(f, inner + 1, &r), 0);
	CHECK_STR(r.n ? r.lines[0].name : NULL, "sized_fn");
	CHECK_EQ(op_file_symbolize(f, entry, &r), 0);
	CHECK_STR(r.n ? r.lines[0].name : NULL, "entry_label");
	CHECK_EQ(op_file_symbolize(f, entry + 3, &r), 0); /* past .Llocal */
	CHECK_STR(r.n ? r.lines[0].name : NULL, "entry_label");
	op_file_put(f);
}

/* Truncated copies and garbage: an op_file without symbols, never a crash. */
static void test_malformed(struct op_filecache *c, const char *exe)
{
	size_t sizes[] = { 0, 1, 16, 63, 64, 100, 1000, 4096, 5000, 20000 };
	struct op_sym_result r;
	char path[300], want[33];
	struct stat st;
	uint8_t *img;
	size_t i;
	int fd;

	fd = open(exe, O_RDONLY);
	REQUIRE(fd >= 0 && fstat(fd, &st) == 0);
	img = malloc((size_t)st.st_size);
	REQUIRE(img && read(fd, img, (size_t)st.st_size) == st.st_size);
	close(fd);

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]) + 1; i++) {
		size_t len =
			i < sizeof(sizes) / sizeof(sizes[0]) ? sizes[i] : (size_t)st.st_size / 2;
		struct op_file *f;

		snprintf(path, sizeof(path), "%s/trunc-%zu", tmpdir, len);
		write_file(path, img, len);
		f = op_filecache_get_path(c, path);
		CHECK(f != NULL);
		if (!f)
			continue;
		op_file_symbolize(f, 0x1000, &r);
		if (len >= 1) {
			expected_htlhash(path, want);
			CHECK_STR(op_file_htlhash(f), want);
		}
		op_file_put(f);
	}

	/* the ELF header intact, section and program header tables pointing anywhere */
	srand(1234);
	for (i = 0; i < 200; i++) {
		uint8_t *g = malloc((size_t)st.st_size);
		struct op_file *f;
		size_t k;

		memcpy(g, img, (size_t)st.st_size);
		for (k = 0; k < 64; k++) {
			size_t pos = i % 2 ? 16 + (size_t)rand() % 48
					   : (size_t)rand() % (size_t)st.st_size;

			g[pos] = (uint8_t)rand();
		}
		snprintf(path, sizeof(path), "%s/garbage", tmpdir);
		write_file(path, g, (size_t)st.st_size);
		f = op_filecache_get_path(c, path);
		CHECK(f != NULL);
		if (f) {
			op_file_symbolize(f, 0x1139, &r);
			op_file_put(f);
		}
		free(g);
	}
	/* random bytes */
	for (i = 0; i < 20; i++) {
		size_t len = 256 + (size_t)rand() % 20000, k;
		uint8_t *g = malloc(len);
		struct op_file *f;

		for (k = 0; k < len; k++)
			g[k] = (uint8_t)rand();
		if (i % 2)
			memcpy(g, img, 64); /* a plausible header over junk */
		write_file(path, g, len);
		f = op_filecache_get_path(c, path);
		CHECK(f != NULL);
		if (f) {
			CHECK(op_file_build_id_gnu(f) == NULL || i % 2);
			op_file_symbolize(f, 0x1000, &r);
			op_file_put(f);
		}
		free(g);
	}
	free(img);
	/* not a regular file, missing file: NULL */
	CHECK(op_filecache_get_path(c, "/") == NULL);
	CHECK(op_filecache_get_path(c, "/nonexistent/otelprof") == NULL);
	CHECK(op_filecache_get(c, getpid(), "/nonexistent/x (deleted)", 0, 0) == NULL);
}

/* Unreferenced files are evicted once they exceed the bound; referenced ones never. */
static void test_eviction(const char *exe)
{
	struct op_filecache *c = op_filecache_new(1); /* 1 byte: evict anything idle */
	struct op_file *a, *b;
	size_t held;

	REQUIRE(c);
	a = op_filecache_get_path(c, exe);
	REQUIRE(a);
	held = op_filecache_bytes(c);
	CHECK(held > 0);
	b = op_filecache_get_path(c, "/bin/sh");
	REQUIRE(b);
	CHECK(op_filecache_bytes(c) > held);
	op_file_put(b);
	CHECK_EQ(op_filecache_bytes(c), held);
	op_file_put(a);
	CHECK_EQ(op_filecache_bytes(c), 0);
	op_filecache_free(c);

	/* a generous bound keeps idle files for reuse */
	c = op_filecache_new(0);
	a = op_filecache_get_path(c, exe);
	op_file_put(a);
	CHECK(op_filecache_bytes(c) > 0);
	b = op_filecache_get_path(c, exe);
	CHECK(a == b);
	/* freeing the cache with a live reference: the file lives until its last put */
	op_filecache_free(c);
	CHECK(op_file_build_id_gnu(b) != NULL);
	op_file_put(b);
}

static void test_vdso(struct op_filecache *c)
{
	unsigned long base = getauxval(AT_SYSINFO_EHDR);
	void *h = dlopen("linux-vdso.so.1", RTLD_NOW | RTLD_NOLOAD);
	void *fn = h ? dlsym(h, "__vdso_clock_gettime") : NULL;
	struct op_sym_result r;
	struct op_file *f;

	if (!base || !fn) {
		printf("note: no vDSO symbols here, skipping the vDSO check\n");
		return;
	}
	f = op_filecache_get(c, getpid(), "[vdso]", 0, 0);
	REQUIRE(f);
	CHECK(op_file_htlhash(f) != NULL);
	CHECK_EQ(op_file_symbolize(f, (uint64_t)((uintptr_t)fn - base), &r), 0);
	CHECK(r.n && strstr(r.lines[0].name, "clock_gettime"));
	op_file_put(f);
}

int main(void)
{
	struct op_filecache *c;
	char exe[4096];
	ssize_t n;

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	REQUIRE(n > 0);
	exe[n] = '\0';
	REQUIRE(mkdtemp(tmpdir));
	if (check_run("command -v readelf && command -v nm && command -v sha256sum", NULL, 0) != 0)
		SKIP("binutils (readelf, nm) or coreutils sha256sum missing: run "
		     "scripts/install-deps.sh");

	test_sha256();
	c = op_filecache_new(0);
	REQUIRE(c);
	test_self(c, exe);
	test_libc(c);
	test_lld_offsets(c);
	test_labels(c);
	test_malformed(c, exe);
	test_vdso(c);
	op_filecache_free(c);
	test_eviction(exe);

	{
		char cmd[400];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
		check_run(cmd, NULL, 0);
	}
	return check_done();
}

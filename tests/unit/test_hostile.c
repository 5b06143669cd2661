// SPDX-License-Identifier: Apache-2.0
/*
 * Hostile binaries: the ELF reader, the symbolizer (symbols, DWARF lines and inline frames)
 * and the CFI compiler on files an attacker could place on a host - truncated, with section
 * headers beyond the file, overlapping or of absurd size, string tables that point anywhere,
 * huge or self-referencing CFI, DWARF whose offsets point outside its sections, and a few
 * hundred random corruptions of each. Each file must be handled without a crash (the
 * sanitizer build turns memory errors into failures), in bounded time (2 s per file) and
 * bounded memory (the file cache's own accounting, and the process's peak RSS).
 *
 * The base binary is this test itself (built with -g: .symtab, .eh_frame, DWARF 5).
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "unwind/cfi.h"
#include "check.h"
#include "symbol/symbolize.h"

#define MAX_SECONDS_PER_FILE 2.0

static uint8_t *base;
static size_t base_len;
static char tmpdir[] = "/tmp/otelprof-hostile-XXXXXX";
static double worst_s;
static char worst_name[64];
static size_t files_tried;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void noise(volatile int x)
{
	(void)x;
}

static uint8_t *read_all(const char *path, size_t *len)
{
	struct stat st;
	uint8_t *buf;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st)) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	buf = malloc(st.st_size);
	if (buf && read(fd, buf, st.st_size) != st.st_size) {
		free(buf);
		buf = NULL;
	}
	close(fd);
	*len = st.st_size;
	return buf;
}

/* Section header @i of the (unmodified layout of the) base image, or NULL. */
static Elf64_Shdr *shdr(uint8_t *img, size_t len, size_t i)
{
	Elf64_Ehdr *eh = (Elf64_Ehdr *)img;

	if (eh->e_shoff + (i + 1) * sizeof(Elf64_Shdr) > len)
		return NULL;
	return (Elf64_Shdr *)(img + eh->e_shoff + i * sizeof(Elf64_Shdr));
}

static Elf64_Shdr *find_section(uint8_t *img, size_t len, const char *name)
{
	Elf64_Ehdr *eh = (Elf64_Ehdr *)img;
	Elf64_Shdr *strs = shdr(img, len, eh->e_shstrndx);

	for (size_t i = 0; strs && i < eh->e_shnum; i++) {
		Elf64_Shdr *s = shdr(img, len, i);

		if (s && strs->sh_offset + s->sh_name < len &&
		    !strcmp((char *)img + strs->sh_offset + s->sh_name, name))
			return s;
	}
	return NULL;
}

/*
 * Write @img to a file, then run everything a profiler does with a binary: open it through
 * the file cache, read ids, translate and symbolize addresses, compile its CFI.
 */
static void exercise(const char *name, const uint8_t *img, size_t len)
{
	char path[256];
	struct op_filecache *c;
	struct op_file *f;
	struct op_cfi_table *t = NULL;
	struct op_sym_result r;
	double t0 = now_s(), dt;
	uint64_t vaddr;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	REQUIRE(fd >= 0);
	REQUIRE(write(fd, img, len) == (ssize_t)len);
	close(fd);

	c = op_filecache_new(64 << 20);
	REQUIRE(c);
	f = op_filecache_get_path(c, path);
	if (f) {
		noise(op_file_build_id_gnu(f) != NULL);
		noise(op_file_htlhash(f) != NULL);
		/* addresses across the whole text: every symbol-table and DWARF path */
		for (uint64_t off = 0; off < len && off < (4u << 20); off += 97) {
			if (op_file_offset_to_vaddr(f, off, &vaddr) == 0 &&
			    op_file_symbolize(f, vaddr, &r) == 0)
				CHECK(r.n >= 1 && r.n <= OP_MAX_INLINE);
		}
		CHECK(op_file_symbolize(f, UINT64_MAX, &r) != 0 || r.n >= 1);
		op_file_put(f);
	}
	/* the cache bounds what it holds: 64 MiB here */
	CHECK(op_filecache_bytes(c) <= (64u << 20));
	op_filecache_free(c);

	if (op_cfi_compile_path(path, &t) == 0) {
		CHECK(t->n_rows <= (1u << 22));
		for (size_t i = 0; i < 64 && t->n_rows; i++)
			noise(op_cfi_lookup(t, t->base + i * 131) != NULL);
		op_cfi_table_free(t);
	}
	unlink(path);

	dt = now_s() - t0;
	files_tried++;
	if (dt > worst_s) {
		worst_s = dt;
		snprintf(worst_name, sizeof(worst_name), "%s", name);
	}
	if (dt > MAX_SECONDS_PER_FILE) {
		fprintf(stderr, "%s: %.2f s (bound %.1f s)\n", name, dt, MAX_SECONDS_PER_FILE);
		CHECK(dt <= MAX_SECONDS_PER_FILE);
	}
}

static uint8_t *copy(void)
{
	uint8_t *c = malloc(base_len);

	REQUIRE(c);
	memcpy(c, base, base_len);
	return c;
}

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

/* ------------------------------------------------------------------ cases */

static void truncated(void)
{
	static const size_t cuts[] = { 0, 1, 4, 16, 63, 64, 65, 200, 4096 };
	char name[64];

	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		snprintf(name, sizeof(name), "trunc-%zu", cuts[i]);
		exercise(name, base, cuts[i]);
	}
	for (int k = 1; k < 16; k++) {
		snprintf(name, sizeof(name), "trunc-%d-16th", k);
		exercise(name, base, base_len * k / 16);
	}
}

static void section_headers(void)
{
	Elf64_Ehdr *eh;
	uint8_t *img;

	/* table beyond the end, absurd count */
	img = copy();
	eh = (Elf64_Ehdr *)img;
	eh->e_shoff = UINT64_MAX - 100;
	eh->e_shnum = 0xffff;
	exercise("shoff-huge", img, base_len);
	free(img);

	/* table overlapping the ELF header itself */
	img = copy();
	eh = (Elf64_Ehdr *)img;
	eh->e_shoff = 8;
	exercise("shoff-overlap-ehdr", img, base_len);
	free(img);

	/* shstrndx out of range */
	img = copy();
	((Elf64_Ehdr *)img)->e_shstrndx = 0xfffe;
	exercise("shstrndx-bad", img, base_len);
	free(img);

	/* every section at the same offset, sized to the whole file or far beyond */
	for (int variant = 0; variant < 3; variant++) {
		img = copy();
		eh = (Elf64_Ehdr *)img;
		for (size_t i = 1; i < eh->e_shnum; i++) {
			Elf64_Shdr *s = shdr(img, base_len, i);

			if (!s)
				break;
			s->sh_offset = variant == 2 ? base_len - 8 : 64;
			s->sh_size = variant == 0 ? base_len - 64 : (uint64_t)1 << 62;
		}
		exercise(variant == 0	? "overlap-all"
			 : variant == 1 ? "size-2e62"
					: "at-eof",
			 img, base_len);
		free(img);
	}

	/* symbol table entsize 0 and 1, link to itself, names past the string table */
	for (int variant = 0; variant < 3; variant++) {
		Elf64_Shdr *sym;

		img = copy();
		sym = find_section(img, base_len, ".symtab");
		if (!sym)
			sym = find_section(img, base_len, ".dynsym");
		if (sym) {
			if (variant == 0)
				sym->sh_entsize = 0;
			else if (variant == 1)
				sym->sh_link =
					(uint32_t)(sym -
						   (Elf64_Shdr *)(img +
								  ((Elf64_Ehdr *)img)->e_shoff));
			else
				for (uint64_t o = 0;
				     o + sizeof(Elf64_Sym) <= sym->sh_size &&
				     sym->sh_offset + o + sizeof(Elf64_Sym) <= base_len;
				     o += sizeof(Elf64_Sym))
					((Elf64_Sym *)(img + sym->sh_offset + o))->st_name =
						0xfffffff0;
		}
		exercise(variant == 0	? "symtab-entsize0"
			 : variant == 1 ? "symtab-self-link"
					: "symtab-names-out",
			 img, base_len);
		free(img);
	}

	/* program headers: absurd count and offsets, zero-sized and wrapping loads */
	img = copy();
	eh = (Elf64_Ehdr *)img;
	for (size_t i = 0; i < eh->e_phnum; i++) {
		Elf64_Phdr *ph = (Elf64_Phdr *)(img + eh->e_phoff + i * sizeof(*ph));

		ph->p_offset = UINT64_MAX - 4096;
		ph->p_vaddr = UINT64_MAX - 10;
		ph->p_filesz = ph->p_memsz = UINT64_MAX;
	}
	exercise("phdr-wrap", img, base_len);
	eh->e_phnum = 0xffff;
	exercise("phnum-huge", img, base_len);
	free(img);
}

/* .eh_frame rewritten: one CIE, then an FDE whose program is a huge run of advance_loc. */
static void huge_and_cyclic_cfi(void)
{
	Elf64_Shdr *s;
	uint8_t *img, *p, *end;
	double t0;

	img = copy();
	s = find_section(img, base_len, ".eh_frame");
	if (!s || s->sh_offset + s->sh_size > base_len || s->sh_size < 64) {
		free(img);
		fprintf(stderr, "note: no .eh_frame in the base binary: CFI cases skipped\n");
		return;
	}
	p = img + s->sh_offset;
	end = p + s->sh_size;
	/* CIE: length, id 0, version 1, "zR", code align 1, data align -8, ra 16, aug len 1,
	 * FDE encoding pcrel|sdata4, then def_cfa rsp+8, offset ra at cfa-8 */
	static const uint8_t cie[] = { 0x14, 0,	   0,	 0,    0,    0,	   0,	 0,
				       1,    'z',  'R',	 0,    1,    0x78, 0x10, 1,
				       0x1b, 0x0c, 0x07, 0x08, 0x90, 0x01, 0,	 0 };
	memcpy(p, cie, sizeof(cie));
	uint8_t *fde = p + sizeof(cie);
	size_t fde_len = (size_t)(end - fde) - 8; /* leave a terminator */

	fde_len &= ~(size_t)3;
	put32(fde, (uint32_t)(fde_len - 4));
	put32(fde + 4, (uint32_t)(fde + 4 - p)); /* CIE pointer back to offset 0 */
	put32(fde + 8, 0x1000);			 /* pc_begin (pcrel) */
	put32(fde + 12, 0x7fffffff);		 /* pc_range: 2 GiB */
	fde[16] = 0;				 /* augmentation length */
	for (uint8_t *q = fde + 17; q + 2 <= fde + fde_len; q += 2) {
		q[0] = 0x02; /* advance_loc1 */
		q[1] = 0xff;
	}
	memset(fde + fde_len, 0, (size_t)(end - (fde + fde_len)));
	t0 = now_s();
	exercise("cfi-huge-rows", img, base_len);
	printf("huge CFI: %zu-byte .eh_frame of advance_loc rows in %.3f s\n", (size_t)s->sh_size,
	       now_s() - t0);

	/* FDEs whose CIE pointer points at themselves, at each other, and past the section */
	for (int variant = 0; variant < 3; variant++) {
		uint8_t *q = p;

		memset(p, 0, s->sh_size);
		while (q + 24 <= end - 8) {
			put32(q, 20);
			if (variant == 0)
				put32(q + 4, 4); /* -> this FDE's own length field */
			else if (variant == 1)
				put32(q + 4, (uint32_t)(q + 4 - p) + 24 <= (uint32_t)s->sh_size
						     ? (uint32_t)-20
						     : 4); /* -> the next FDE */
			else
				put32(q + 4, 0x80000000u);
			put32(q + 8, 0x1000);
			put32(q + 12, 0x100);
			q += 24;
		}
		exercise(variant == 0	? "cfi-self-cie"
			 : variant == 1 ? "cfi-cie-cycle"
					: "cfi-cie-outside",
			 img, base_len);
	}
	free(img);
}

/* DWARF whose offsets point outside its sections. */
static void dwarf_outside(void)
{
	static const char *const secs[] = { ".debug_info",     ".debug_line",	  ".debug_abbrev",
					    ".debug_str",      ".debug_rnglists", ".debug_aranges",
					    ".debug_line_str", ".debug_loclists" };
	uint8_t *img;
	Elf64_Shdr *s;
	char name[64];

	/* unit lengths and header offsets: huge, zero, 64-bit escape */
	for (size_t i = 0; i < sizeof(secs) / sizeof(secs[0]); i++) {
		for (int variant = 0; variant < 3; variant++) {
			img = copy();
			s = find_section(img, base_len, secs[i]);
			if (!s || s->sh_offset + 16 > base_len) {
				free(img);
				continue;
			}
			if (variant == 0)
				put32(img + s->sh_offset, 0xfffffff0u);
			else if (variant == 1)
				put32(img + s->sh_offset, 0);
			else
				/* debug_abbrev_offset / header_length / str offset -> far away */
				put32(img + s->sh_offset + 8, 0x7ffffff0u);
			snprintf(name, sizeof(name), "dwarf%s-%d", secs[i], variant);
			exercise(name, img, base_len);
			free(img);
		}
	}
	/* the section itself placed past the end of the file, or shrunk to 3 bytes */
	for (int variant = 0; variant < 2; variant++) {
		img = copy();
		for (size_t i = 0; i < sizeof(secs) / sizeof(secs[0]); i++) {
			s = find_section(img, base_len, secs[i]);
			if (!s)
				continue;
			if (variant == 0)
				s->sh_offset = base_len + 4096;
			else
				s->sh_size = 3;
		}
		exercise(variant == 0 ? "dwarf-past-eof" : "dwarf-3-bytes", img, base_len);
		free(img);
	}
}

/* Random corruption of the structures above: deterministic, a few hundred files. */
static void random_flips(int n)
{
	static const char *const secs[] = {
		".debug_info", ".debug_line",	     ".debug_abbrev",
		".eh_frame",   ".eh_frame_hdr",	     ".symtab",
		".strtab",     ".note.gnu.build-id", ".debug_rnglists"
	};
	uint64_t x = 0x9e3779b97f4a7c15ull;
	char name[64];

	for (int k = 0; k < n; k++) {
		uint8_t *img = copy();
		Elf64_Shdr *s =
			find_section(img, base_len, secs[k % (sizeof(secs) / sizeof(secs[0]))]);
		uint64_t lo = 0, span = 4096;

		if (s && s->sh_offset + s->sh_size <= base_len && s->sh_size) {
			lo = s->sh_offset;
			span = s->sh_size < 4096 ? s->sh_size : 4096;
		}
		for (int j = 0; j < 8; j++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			img[lo + x % span] ^= (uint8_t)(x >> 32) | 1;
		}
		snprintf(name, sizeof(name), "flip-%d", k);
		exercise(name, img, base_len);
		free(img);
	}
}

int main(void)
{
	struct rusage ru0, ru1;
	double t0 = now_s();

	base = read_all("/proc/self/exe", &base_len);
	REQUIRE(base && base_len > 4096);
	REQUIRE(mkdtemp(tmpdir));
	/* warm-up: the intact binary, so peak RSS below counts only what hostile files add */
	exercise("intact", base, base_len);
	getrusage(RUSAGE_SELF, &ru0);

	truncated();
	section_headers();
	huge_and_cyclic_cfi();
	dwarf_outside();
	random_flips(getenv("OTELPROF_LONG") ? 2000 : 300);

	getrusage(RUSAGE_SELF, &ru1);
	rmdir(tmpdir);
	printf("%zu hostile files from a %zu-byte binary in %.1f s; slowest %s %.3f s; "
	       "peak RSS %ld -> %ld KiB\n",
	       files_tried, base_len, now_s() - t0, worst_name, worst_s, ru0.ru_maxrss,
	       ru1.ru_maxrss);
	/*
	 * bounded memory: nothing accumulates across files (each cache is freed). Under
	 * AddressSanitizer freed memory sits in its quarantine (256 MiB), so RSS says nothing.
	 */
#ifndef __SANITIZE_ADDRESS__
	CHECK(ru1.ru_maxrss - ru0.ru_maxrss < 256 * 1024);
#endif
	free(base);
	return check_done();
}

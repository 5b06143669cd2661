// SPDX-License-Identifier: Apache-2.0
/*
 * The file cache: one struct op_file per distinct binary (device, inode, size, mtime), shared
 * by every process that maps it, with its identity (GNU and Go build ids, htlhash), PT_LOAD
 * segments and function symbols from .symtab and .dynsym. Files no one references stay cached
 * on an LRU list until the bytes they hold exceed the cache's bound.
 *
 * Everything read from a file is treated as hostile: a truncated or garbage ELF yields an
 * op_file with no symbols, never a crash.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/log.h"
#include "util/sha256.h"
#include "binary/file.h"

#define HTL_CHUNK	  4096
#define DEFAULT_MAX_BYTES (32u << 20)
#define NBUCKETS	  1024

struct op_filecache {
	pthread_mutex_t lock;
	struct op_file *buckets[NBUCKETS];
	struct op_file *lru_head, *lru_tail; /* idle files, most recently released at head */
	size_t bytes;			     /* all files */
	size_t idle_bytes;		     /* files with refs == 0 */
	size_t max_bytes;
	size_t n_files;
	struct op_file *vdso;
};

/* ---------------------------------------------------------------- string pool */

struct op_strchunk {
	struct op_strchunk *next;
	size_t used, cap;
	char data[];
};

const char *op_strpool_add(struct op_strpool *p, const char *s, size_t len)
{
	struct op_strchunk *c = p->head;
	char *out;

	if (!c || c->cap - c->used < len + 1) {
		/* chunks grow from 1 KiB to 16 KiB: most files intern a few names only */
		size_t cap = p->bytes < 1024 ? 1024 : p->bytes > 16384 ? 16384 : p->bytes;

		if (cap < len + 1)
			cap = len + 1;

		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->used = 0;
		c->cap = cap;
		c->next = p->head;
		p->head = c;
		p->bytes += sizeof(*c) + cap;
	}
	out = c->data + c->used;
	memcpy(out, s, len);
	out[len] = '\0';
	c->used += len + 1;
	return out;
}

void op_strpool_free(struct op_strpool *p)
{
	struct op_strchunk *c = p->head, *n;

	for (; c; c = n) {
		n = c->next;
		free(c);
	}
	p->head = NULL;
	p->bytes = 0;
}

static uint64_t str_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

const char *op_file_intern(struct op_file *f, const char *s)
{
	size_t i, mask;
	const char *p;

	if (!s)
		return NULL;
	if (f->n_interned * 2 >= f->cap_interned) {
		size_t nc = f->cap_interned ? f->cap_interned * 2 : 1024, k;
		const char **ns = calloc(nc, sizeof(*ns));

		if (!ns)
			return NULL;
		for (k = 0; k < f->cap_interned; k++) {
			if (!f->interned[k])
				continue;
			for (i = str_hash(f->interned[k]) & (nc - 1); ns[i]; i = (i + 1) & (nc - 1))
				;
			ns[i] = f->interned[k];
		}
		free(f->interned);
		f->interned = ns;
		f->cap_interned = nc;
	}
	mask = f->cap_interned - 1;
	for (i = str_hash(s) & mask; f->interned[i]; i = (i + 1) & mask)
		if (!strcmp(f->interned[i], s))
			return f->interned[i];
	p = op_strpool_add(&f->pool, s, strlen(s));
	if (!p)
		return NULL;
	f->interned[i] = p;
	f->n_interned++;
	return p;
}

/* ---------------------------------------------------------------- helpers */

static pthread_once_t elf_once = PTHREAD_ONCE_INIT;
static bool elf_ok;

static void elf_init(void)
{
	elf_ok = elf_version(EV_CURRENT) != EV_NONE;
	if (!elf_ok)
		op_err("libelf version mismatch: %s (rebuild against the installed libelf)",
		       elf_errmsg(-1));
}

static char *hex(const uint8_t *p, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	char *s = malloc(2 * n + 1);
	size_t i;

	if (!s)
		return NULL;
	for (i = 0; i < n; i++) {
		s[2 * i] = digits[p[i] >> 4];
		s[2 * i + 1] = digits[p[i] & 15];
	}
	s[2 * n] = '\0';
	return s;
}

static ssize_t pread_full(int fd, void *buf, size_t len, off_t off)
{
	size_t got = 0;

	while (got < len) {
		ssize_t r = pread(fd, (char *)buf + got, len - got, off + (off_t)got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

/*
 * htlhash: SHA-256 over the first 4 KiB, the last 4 KiB and the file length as a big-endian
 * u64; the id is the first 16 bytes in hex. Files shorter than 4 KiB hash their whole content
 * as the trailer too.
 */
static int compute_htlhash(int fd, uint64_t size, char out[33])
{
	uint8_t buf[HTL_CHUNK], digest[32], len_be[8];
	struct op_sha256 s;
	ssize_t n;
	uint64_t tail;
	char *h;
	int i;

	op_sha256_init(&s);
	n = pread_full(fd, buf, HTL_CHUNK, 0);
	if (n < 0)
		return -errno;
	op_sha256_update(&s, buf, (size_t)n);
	tail = size > HTL_CHUNK ? size - HTL_CHUNK : 0;
	n = pread_full(fd, buf, HTL_CHUNK, (off_t)tail);
	if (n < 0)
		return -errno;
	op_sha256_update(&s, buf, (size_t)n);
	for (i = 0; i < 8; i++)
		len_be[i] = (uint8_t)(size >> (56 - 8 * i));
	op_sha256_update(&s, len_be, 8);
	op_sha256_final(&s, digest);
	h = hex(digest, 16);
	if (!h)
		return -ENOMEM;
	memcpy(out, h, 33);
	free(h);
	return 0;
}

void op_file_account(struct op_file *f, ssize_t delta)
{
	struct op_filecache *c = f->cache;

	f->bytes += delta;
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	c->bytes += delta;
	pthread_mutex_unlock(&c->lock);
}

/* ---------------------------------------------------------------- notes */

static void parse_notes(struct op_file *f, Elf_Data *d)
{
	GElf_Nhdr nh;
	size_t off = 0, next, name_off, desc_off;

	while (d && d->d_buf && off < d->d_size &&
	       (next = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
		const char *name = (const char *)d->d_buf + name_off;
		const uint8_t *desc = (const uint8_t *)d->d_buf + desc_off;

		if (nh.n_namesz == 4 && !memcmp(name, "GNU", 4) && nh.n_type == NT_GNU_BUILD_ID &&
		    nh.n_descsz > 0 && nh.n_descsz <= 64 && !f->build_id_gnu) {
			f->build_id_gnu = hex(desc, nh.n_descsz);
			f->build_id_raw = malloc(nh.n_descsz);
			if (f->build_id_raw) {
				memcpy(f->build_id_raw, desc, nh.n_descsz);
				f->build_id_len = nh.n_descsz;
			}
		} else if ((nh.n_namesz == 3 || nh.n_namesz == 4) && !memcmp(name, "Go", 3) &&
			   nh.n_type == 4 && nh.n_descsz > 0 && nh.n_descsz < 1024 &&
			   !f->build_id_go) {
			f->build_id_go = strndup((const char *)desc, nh.n_descsz);
			f->is_go = true;
		}
		off = next;
	}
}

/* ---------------------------------------------------------------- symbols */

struct rawsym {
	uint64_t addr, size;
	const char *name;
	int rank;
	bool label; /* STT_NOTYPE in code: an assembler entry point such as ld.so's _start */
};

/* Section @shndx of @elf holds code. */
static bool code_section(Elf *elf, size_t shndx)
{
	Elf_Scn *scn = shndx < SHN_LORESERVE ? elf_getscn(elf, shndx) : NULL;
	GElf_Shdr sh;

	/* a separate debug file keeps the section's flags, not its bytes (SHT_NOBITS) */
	return scn && gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_EXECINSTR);
}

static int rawsym_cmp(const void *a, const void *b)
{
	const struct rawsym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return y->rank - x->rank; /* best first */
}

static int leading_underscores(const char *s)
{
	int n = 0;

	while (s[n] == '_')
		n++;
	return n;
}

static int collect_symtab(Elf *elf, Elf_Scn *scn, GElf_Shdr *sh, struct op_strpool *pool,
			  struct rawsym **out, size_t *n, size_t *cap, int base_rank)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t i, count;

	if (!d || !d->d_buf || sh->sh_entsize == 0)
		return 0;
	count = d->d_size / (sh->sh_entsize ? sh->sh_entsize : 1);
	for (i = 0; i < count; i++) {
		GElf_Sym s;
		const char *name;
		int type, bind, rank;
		bool label;

		if (!gelf_getsym(d, (int)i, &s))
			break;
		type = GELF_ST_TYPE(s.st_info);
		label = type == STT_NOTYPE && !s.st_size;
		if (type != STT_FUNC && type != STT_GNU_IFUNC && !label)
			continue;
		if (s.st_shndx == SHN_UNDEF || s.st_value == 0)
			continue;
		name = elf_strptr(elf, sh->sh_link, s.st_name);
		if (!name || !*name)
			continue;
		/* labels: code entry points only, never the assembler's local ".L" or "$x" ones */
		if (label && (name[0] == '.' || name[0] == '$' || !code_section(elf, s.st_shndx)))
			continue;
		bind = GELF_ST_BIND(s.st_info);
		rank = label ? base_rank - 128 : base_rank;
		if (s.st_size)
			rank += 64;
		if (bind == STB_GLOBAL)
			rank += 32;
		else if (bind == STB_WEAK)
			rank += 16;
		rank += 8 - (leading_underscores(name) > 8 ? 8 : leading_underscores(name));
		if (*n == *cap) {
			size_t nc = *cap ? *cap * 2 : 1024;
			struct rawsym *ns = realloc(*out, nc * sizeof(*ns));

			if (!ns)
				return -ENOMEM;
			*out = ns;
			*cap = nc;
		}
		name = op_strpool_add(pool, name, strlen(name));
		if (!name)
			return -ENOMEM;
		(*out)[(*n)++] = (struct rawsym){ s.st_value, s.st_size, name, rank, label };
	}
	return 0;
}

/* End of the executable PT_LOAD containing @addr, for a last zero-size symbol. */
static uint64_t segment_end(const struct op_file *f, uint64_t addr)
{
	size_t i;

	for (i = 0; i < f->n_loads; i++) {
		const struct op_load_seg *s = &f->loads[i];

		if (addr >= s->vaddr && addr < s->vaddr + s->memsz)
			return s->vaddr + s->memsz;
	}
	return addr + 1;
}

/*
 * Build f->syms from @raw (consumed): sort, one symbol per address (the best ranked), and
 * zero-size symbols extended to the next symbol's start.
 */
static int build_syms(struct op_file *f, struct rawsym *raw, size_t n)
{
	struct op_sym *syms;
	size_t i, m = 0;

	if (!n)
		return 0;
	qsort(raw, n, sizeof(*raw), rawsym_cmp);
	syms = calloc(n, sizeof(*syms));
	if (!syms)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		/* a label inside a sized function is a branch target of it, not a function */
		if (raw[i].label && m && syms[m - 1].end > raw[i].addr)
			continue;
		if (m && syms[m - 1].addr == raw[i].addr) {
			/* alias: keep the first (best) name, the largest size */
			if (raw[i].size && syms[m - 1].end < raw[i].addr + raw[i].size)
				syms[m - 1].end = raw[i].addr + raw[i].size;
			continue;
		}
		syms[m].addr = raw[i].addr;
		syms[m].end = raw[i].size ? raw[i].addr + raw[i].size : 0;
		syms[m].name = raw[i].name;
		m++;
	}
	for (i = 0; i < m; i++)
		if (!syms[i].end)
			syms[i].end = i + 1 < m ? syms[i + 1].addr : segment_end(f, syms[i].addr);
	if (m < n) {
		struct op_sym *fit = realloc(syms, m * sizeof(*syms)); /* drop the aliases' room */

		if (fit)
			syms = fit;
	}
	free(f->syms);
	if (f->n_syms)
		op_file_account(f, -(ssize_t)(f->n_syms * sizeof(*syms)));
	f->syms = syms;
	f->n_syms = m;
	op_file_account(f, (ssize_t)(m * sizeof(*syms)));
	return 0;
}

static int collect_elf_symbols(struct op_file *f, Elf *elf, struct rawsym **raw, size_t *n,
			       size_t *cap, bool *has_symtab)
{
	Elf_Scn *scn = NULL;
	int err = 0;

	while (!err && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB) {
			err = collect_symtab(elf, scn, &sh, &f->pool, raw, n, cap, 1);
			*has_symtab = true;
		} else if (sh.sh_type == SHT_DYNSYM) {
			err = collect_symtab(elf, scn, &sh, &f->pool, raw, n, cap, 0);
		}
	}
	return err;
}

void op_file_add_elf_symbols(struct op_file *f, Elf *elf, bool replace)
{
	struct rawsym *raw = NULL;
	size_t n = 0, cap = 0, i;
	size_t pool_before = f->pool.bytes;
	bool has_symtab = false;

	if (!replace) {
		for (i = 0; i < f->n_syms; i++) {
			if (n == cap) {
				size_t nc = cap ? cap * 2 : 1024;
				struct rawsym *nr = realloc(raw, nc * sizeof(*nr));

				if (!nr)
					goto out;
				raw = nr;
				cap = nc;
			}
			raw[n++] =
				(struct rawsym){ f->syms[i].addr, f->syms[i].end - f->syms[i].addr,
						 f->syms[i].name, 200 };
		}
	}
	if (collect_elf_symbols(f, elf, &raw, &n, &cap, &has_symtab) == 0) {
		build_syms(f, raw, n);
		f->has_symtab |= has_symtab;
	}
out:
	op_file_account(f, (ssize_t)(f->pool.bytes - pool_before));
	free(raw);
}

/* ---------------------------------------------------------------- ELF load */

static void load_elf(struct op_file *f, Elf *elf)
{
	size_t phnum = 0, shstrndx, i;
	bool notes_from_sections = false, has_symtab = false;
	GElf_Ehdr eh;
	Elf_Scn *scn = NULL;

	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh))
		return;
	f->is_elf = true;
	f->e_type = eh.e_type;
	f->e_machine = eh.e_machine;

	if (elf_getphdrnum(elf, &phnum) == 0 && phnum > 0 && phnum < 65536) {
		f->loads = calloc(phnum, sizeof(*f->loads));
		for (i = 0; f->loads && i < phnum; i++) {
			GElf_Phdr ph;

			if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
				continue;
			f->loads[f->n_loads++] =
				(struct op_load_seg){ ph.p_offset, ph.p_filesz, ph.p_vaddr,
						      ph.p_memsz, ph.p_flags };
		}
	}

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		shstrndx = SHN_UNDEF;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = shstrndx != SHN_UNDEF ? elf_strptr(elf, shstrndx, sh.sh_name) : NULL;
		if (sh.sh_type == SHT_SYMTAB)
			has_symtab = true;
		if (sh.sh_type == SHT_NOTE) {
			notes_from_sections = true;
			parse_notes(f, elf_getdata(scn, NULL));
			continue;
		}
		if (!name)
			continue;
		if (!strcmp(name, ".gnu_debuglink") && sh.sh_type != SHT_NOBITS) {
			Elf_Data *d = elf_getdata(scn, NULL);

			if (d && d->d_buf && d->d_size > 4) {
				size_t l = strnlen(d->d_buf, d->d_size);

				if (l > 0 && l < d->d_size && !strchr(d->d_buf, '/')) {
					size_t crc_off = (l + 4) & ~(size_t)3;

					f->debuglink = strdup(d->d_buf);
					if (crc_off + 4 <= d->d_size)
						memcpy(&f->debuglink_crc,
						       (char *)d->d_buf + crc_off, 4);
				}
			}
		} else if (!strcmp(name, ".gnu_debugdata")) {
			f->has_debugdata = sh.sh_type != SHT_NOBITS && sh.sh_size > 0;
		} else if (!strcmp(name, ".debug_info") || !strcmp(name, ".zdebug_info")) {
			f->has_debug_info = sh.sh_type != SHT_NOBITS && sh.sh_size > 0;
		} else if (!strcmp(name, ".go.buildinfo")) {
			f->is_go = true;
			Elf_Data *d = sh.sh_type != SHT_NOBITS ? elf_getdata(scn, NULL) : NULL;

			if (d && d->d_buf)
				op_go_buildinfo_version(d->d_buf, d->d_size, f->go_version,
							sizeof(f->go_version));
		} else if (!strcmp(name, ".gopclntab") || !strcmp(name, ".data.rel.ro.gopclntab")) {
			f->is_go = true;
		}
	}
	if (!notes_from_sections) {
		/* section headers stripped: notes from PT_NOTE */
		for (i = 0; i < phnum; i++) {
			GElf_Phdr ph;
			Elf_Data *d;

			if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_NOTE)
				continue;
			d = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz,
						 ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
			parse_notes(f, d);
		}
	}

	/* the symbol tables are read when the file is first symbolized (op_file_add_elf_symbols) */
	f->has_symtab = has_symtab;
}

void op_go_buildinfo_version(const void *buf, size_t size, char *out, size_t len)
{
	static const char magic[] = "\xff Go buildinf:";
	const uint8_t *p;
	uint64_t n = 0;
	size_t i, shift = 0;

	if (!len)
		return;
	out[0] = '\0';
	if (!buf || size < 33 || memcmp(buf, magic, 14))
		return;
	p = buf;
	/* flag 2: the version is inline after the 32-byte header (Go 1.18 and later) */
	if (!(p[15] & 2))
		return;
	for (i = 32; i < size && i < 32 + 10; i++) {
		n |= (uint64_t)(p[i] & 0x7f) << shift;
		shift += 7;
		if (!(p[i] & 0x80))
			break;
	}
	i++;
	if (i >= size || !n || n > size - i)
		return;
	/* "go1.26.8", or "go1.26.8 X:exp" with experiments: the release is the first word */
	if (n >= len)
		n = len - 1;
	memcpy(out, p + i, n);
	out[n] = '\0';
	out[strcspn(out, " ")] = '\0';
	if (strncmp(out, "go1.", 4) || strspn(out, "go0123456789.rcbeta") != strlen(out))
		out[0] = '\0';
}

static size_t file_fixed_bytes(const struct op_file *f)
{
	return sizeof(*f) + f->n_loads * sizeof(*f->loads) + f->pool.bytes +
	       (f->path ? strlen(f->path) : 0) + (f->root ? strlen(f->root) : 0);
}

Elf_Scn *op_elf_section(Elf *elf, const char *want, GElf_Shdr *out)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;

		if (!gelf_getshdr(scn, out))
			continue;
		name = elf_strptr(elf, shstrndx, out->sh_name);
		if (name && !strcmp(name, want))
			return scn;
	}
	return NULL;
}

static struct op_file *file_new(void)
{
	struct op_file *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->fd = -1;
	f->dwarf_fd = -1;
	pthread_mutex_init(&f->lock, NULL);
	f->refs = 1;
	return f;
}

static void file_destroy(struct op_file *f)
{
	if (!f)
		return;
	if (f->release_lazy)
		f->release_lazy(f);
	if (f->fd >= 0)
		close(f->fd);
	free(f->syms);
	free(f->loads);
	free(f->build_id_gnu);
	free(f->build_id_raw);
	free(f->build_id_go);
	free(f->debuglink);
	free(f->path);
	free(f->root);
	free(f->interned);
	op_strpool_free(&f->pool);
	pthread_mutex_destroy(&f->lock);
	free(f);
}

/* Build an op_file from an open fd (taken over). */
static struct op_file *file_from_fd(int fd, const struct stat *st, const char *path,
				    const char *root)
{
	struct op_file *f;
	Elf *elf;

	pthread_once(&elf_once, elf_init);
	f = file_new();
	if (!f) {
		close(fd);
		return NULL;
	}
	f->fd = fd;
	f->dev = st->st_dev;
	f->ino = st->st_ino;
	f->size = (uint64_t)st->st_size;
	f->mtime_sec = st->st_mtim.tv_sec;
	f->mtime_nsec = st->st_mtim.tv_nsec;
	f->path = path ? strdup(path) : NULL;
	f->root = strdup(root ? root : "");
	f->has_htlhash = compute_htlhash(fd, f->size, f->htlhash) == 0;

	if (elf_ok) {
		elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
		if (elf) {
			load_elf(f, elf);
			elf_end(elf);
		} else {
			op_debug("cannot read ELF %s: %s", path ? path : "?", elf_errmsg(-1));
		}
	}
	f->bytes = file_fixed_bytes(f) + f->n_syms * sizeof(*f->syms);
	return f;
}

/* The vDSO: the same image in every process of this kernel, so read our own copy. */
static struct op_file *file_vdso(void)
{
	unsigned long base = getauxval(AT_SYSINFO_EHDR);
	struct op_file *f;
	GElf_Ehdr eh;
	char *copy;
	size_t size;
	Elf *elf;

	pthread_once(&elf_once, elf_init);
	if (!base || !elf_ok)
		return NULL;
	/* the image ends with its section headers */
	elf = elf_memory((char *)base, 64);
	if (!elf || !gelf_getehdr(elf, &eh)) {
		if (elf)
			elf_end(elf);
		return NULL;
	}
	elf_end(elf);
	size = eh.e_shoff + (size_t)eh.e_shnum * eh.e_shentsize;
	if (size < 64 || size > (16u << 20))
		return NULL;
	copy = malloc(size); /* libelf may write to an image it is given */
	if (!copy)
		return NULL;
	memcpy(copy, (void *)base, size);
	f = file_new();
	if (!f) {
		free(copy);
		return NULL;
	}
	f->is_vdso = true;
	f->path = strdup("[vdso]");
	f->root = strdup("");
	f->size = size;
	{
		uint8_t digest[32], len_be[8];
		struct op_sha256 s;
		uint64_t tail = size > HTL_CHUNK ? size - HTL_CHUNK : 0;
		char *h;
		int i;

		op_sha256_init(&s);
		op_sha256_update(&s, copy, size < HTL_CHUNK ? size : HTL_CHUNK);
		op_sha256_update(&s, copy + tail, size - tail);
		for (i = 0; i < 8; i++)
			len_be[i] = (uint8_t)((uint64_t)size >> (56 - 8 * i));
		op_sha256_update(&s, len_be, 8);
		op_sha256_final(&s, digest);
		h = hex(digest, 16);
		if (h) {
			memcpy(f->htlhash, h, 33);
			f->has_htlhash = true;
			free(h);
		}
	}
	elf = elf_memory(copy, size);
	if (elf) {
		load_elf(f, elf);
		op_file_add_elf_symbols(f, elf, false); /* no descriptor to read them from later */
		elf_end(elf);
	}
	free(copy);
	f->bytes = file_fixed_bytes(f) + f->n_syms * sizeof(*f->syms);
	return f;
}

/* ---------------------------------------------------------------- cache */

static unsigned int key_hash(dev_t dev, ino_t ino, uint64_t size, int64_t mtime)
{
	uint64_t h = (uint64_t)dev * 0x9e3779b97f4a7c15ull;

	h ^= (uint64_t)ino + 0x632be59bd9b4e019ull + (h << 6) + (h >> 2);
	h ^= size + (h << 6) + (h >> 2);
	h ^= (uint64_t)mtime + (h << 6) + (h >> 2);
	return (unsigned int)(h ^ (h >> 32)) % NBUCKETS;
}

static struct op_file *lookup(struct op_filecache *c, const struct stat *st)
{
	struct op_file *f;

	for (f = c->buckets[key_hash(st->st_dev, st->st_ino, (uint64_t)st->st_size,
				     st->st_mtim.tv_sec)];
	     f; f = f->hnext)
		if (f->dev == st->st_dev && f->ino == st->st_ino &&
		    f->size == (uint64_t)st->st_size && f->mtime_sec == st->st_mtim.tv_sec &&
		    f->mtime_nsec == st->st_mtim.tv_nsec)
			return f;
	return NULL;
}

static void lru_unlink(struct op_filecache *c, struct op_file *f)
{
	if (f->lru_prev)
		f->lru_prev->lru_next = f->lru_next;
	else if (c->lru_head == f)
		c->lru_head = f->lru_next;
	if (f->lru_next)
		f->lru_next->lru_prev = f->lru_prev;
	else if (c->lru_tail == f)
		c->lru_tail = f->lru_prev;
	f->lru_prev = f->lru_next = NULL;
}

static void hash_unlink(struct op_filecache *c, struct op_file *f)
{
	struct op_file **pp = &c->buckets[key_hash(f->dev, f->ino, f->size, f->mtime_sec)];

	for (; *pp; pp = &(*pp)->hnext)
		if (*pp == f) {
			*pp = f->hnext;
			break;
		}
}

/* Take a reference on a cached file (lock held). */
static void ref_locked(struct op_filecache *c, struct op_file *f)
{
	if (f->refs++ == 0) {
		lru_unlink(c, f);
		c->idle_bytes -= f->bytes;
	}
}

/* Evict idle files, oldest first, while idle bytes exceed the bound. Lock held. */
static void evict_locked(struct op_filecache *c, struct op_file **to_free)
{
	while (c->idle_bytes > c->max_bytes && c->lru_tail) {
		struct op_file *f = c->lru_tail;

		lru_unlink(c, f);
		hash_unlink(c, f);
		c->idle_bytes -= f->bytes;
		c->bytes -= f->bytes;
		c->n_files--;
		f->cache = NULL;
		f->hnext = *to_free;
		*to_free = f;
	}
}

static void free_list(struct op_file *f)
{
	struct op_file *n;

	for (; f; f = n) {
		n = f->hnext;
		file_destroy(f);
	}
}

struct op_filecache *op_filecache_new(size_t max_bytes)
{
	struct op_filecache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	pthread_mutex_init(&c->lock, NULL);
	c->max_bytes = max_bytes ? max_bytes : DEFAULT_MAX_BYTES;
	return c;
}

void op_filecache_free(struct op_filecache *c)
{
	struct op_file *f, *n, *to_free = NULL;
	size_t i;

	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	for (i = 0; i < NBUCKETS; i++) {
		for (f = c->buckets[i]; f; f = n) {
			n = f->hnext;
			f->cache = NULL;
			f->hnext = NULL;
			if (f->refs == 0) {
				f->hnext = to_free;
				to_free = f;
			}
			/* still referenced: freed by its last op_file_put() */
		}
		c->buckets[i] = NULL;
	}
	if (c->vdso) {
		c->vdso->cache = NULL;
		if (--c->vdso->refs == 0)
			file_destroy(c->vdso);
	}
	pthread_mutex_unlock(&c->lock);
	free_list(to_free);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

size_t op_filecache_count(struct op_filecache *c)
{
	size_t n;

	if (!c)
		return 0;
	pthread_mutex_lock(&c->lock);
	n = c->n_files;
	pthread_mutex_unlock(&c->lock);
	return n;
}

size_t op_filecache_bytes(const struct op_filecache *c)
{
	size_t b;

	if (!c)
		return 0;
	pthread_mutex_lock((pthread_mutex_t *)&c->lock);
	b = c->bytes;
	pthread_mutex_unlock((pthread_mutex_t *)&c->lock);
	return b;
}

/* Look up or load the file behind @fd (taken over). */
static struct op_file *get_fd(struct op_filecache *c, int fd, const char *path, const char *root)
{
	struct op_file *f, *loaded, *to_free = NULL;
	struct stat st;

	if (fstat(fd, &st) < 0) {
		int err = errno;

		close(fd);
		errno = err;
		return NULL;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		errno = EINVAL;
		return NULL;
	}
	pthread_mutex_lock(&c->lock);
	f = lookup(c, &st);
	if (f) {
		ref_locked(c, f);
		pthread_mutex_unlock(&c->lock);
		close(fd);
		return f;
	}
	pthread_mutex_unlock(&c->lock);

	loaded = file_from_fd(fd, &st, path, root);
	if (!loaded)
		return NULL;

	pthread_mutex_lock(&c->lock);
	f = lookup(c, &st);
	if (f) {
		/* another thread loaded it meanwhile */
		ref_locked(c, f);
		pthread_mutex_unlock(&c->lock);
		file_destroy(loaded);
		return f;
	}
	f = loaded;
	f->cache = c;
	{
		unsigned int b = key_hash(f->dev, f->ino, f->size, f->mtime_sec);

		f->hnext = c->buckets[b];
		c->buckets[b] = f;
	}
	c->bytes += f->bytes;
	c->n_files++;
	evict_locked(c, &to_free);
	pthread_mutex_unlock(&c->lock);
	free_list(to_free);
	return f;
}

static bool is_deleted_suffix(const char *path, size_t *len)
{
	static const char sfx[] = " (deleted)";
	size_t l = strlen(path);

	if (l > sizeof(sfx) - 1 && !strcmp(path + l - (sizeof(sfx) - 1), sfx)) {
		*len = l - (sizeof(sfx) - 1);
		return true;
	}
	*len = l;
	return false;
}

struct op_file *op_filecache_get(struct op_filecache *c, int pid, const char *path,
				 uint64_t vma_start, uint64_t vma_end)
{
	char buf[4200], root[64];
	size_t plen;
	int fd;

	if (!c) {
		errno = EINVAL;
		return NULL;
	}
	if (path && !strcmp(path, "[vdso]")) {
		struct op_file *v;

		pthread_mutex_lock(&c->lock);
		v = c->vdso;
		pthread_mutex_unlock(&c->lock);
		if (!v) {
			v = file_vdso();
			if (!v) {
				errno = ENOENT;
				return NULL;
			}
			pthread_mutex_lock(&c->lock);
			if (c->vdso) {
				file_destroy(v);
			} else {
				c->vdso = v; /* the cache's own reference */
				v->cache = c;
				c->bytes += v->bytes;
			}
			v = c->vdso;
			v->refs++;
			pthread_mutex_unlock(&c->lock);
			return v;
		}
		pthread_mutex_lock(&c->lock);
		v->refs++;
		pthread_mutex_unlock(&c->lock);
		return v;
	}

	snprintf(root, sizeof(root), "/proc/%d/root", pid);
	/* map_files names are "%lx-%lx": lower-case hex, no leading zeros */
	snprintf(buf, sizeof(buf), "/proc/%d/map_files/%llx-%llx", pid,
		 (unsigned long long)vma_start, (unsigned long long)vma_end);
	fd = vma_end > vma_start ? open(buf, O_RDONLY | O_CLOEXEC) : -1;
	if (fd < 0 && path && path[0] == '/' && !is_deleted_suffix(path, &plen)) {
		/* not for a deleted file: its name may now belong to another one */
		if (plen + strlen(root) + 1 > sizeof(buf)) {
			errno = ENAMETOOLONG;
			return NULL;
		}
		snprintf(buf, sizeof(buf), "%s%.*s", root, (int)plen, path);
		fd = open(buf, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0)
		return NULL;
	return get_fd(c, fd, path, root);
}

struct op_file *op_filecache_get_mapped(struct op_filecache *c, uint64_t dev, uint64_t ino)
{
	struct op_file *f, *found = NULL;

	if (!c || !ino)
		return NULL;
	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < NBUCKETS && !found; i++)
		for (f = c->buckets[i]; f && !found; f = f->hnext)
			if (f->refs && (uint64_t)f->dev == dev && (uint64_t)f->ino == ino)
				found = f;
	if (found)
		ref_locked(c, found);
	pthread_mutex_unlock(&c->lock);
	return found;
}

struct op_file *op_filecache_get_path(struct op_filecache *c, const char *path)
{
	int fd;

	if (!c || !path) {
		errno = EINVAL;
		return NULL;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	return get_fd(c, fd, path, "");
}

void op_file_put(struct op_file *f)
{
	struct op_filecache *c;
	struct op_file *to_free = NULL;

	if (!f)
		return;
	c = f->cache;
	if (!c) {
		if (__atomic_sub_fetch(&f->refs, 1, __ATOMIC_ACQ_REL) == 0)
			file_destroy(f);
		return;
	}
	pthread_mutex_lock(&c->lock);
	if (--f->refs == 0 && f != c->vdso) {
		f->lru_prev = NULL;
		f->lru_next = c->lru_head;
		if (c->lru_head)
			c->lru_head->lru_prev = f;
		c->lru_head = f;
		if (!c->lru_tail)
			c->lru_tail = f;
		c->idle_bytes += f->bytes;
		evict_locked(c, &to_free);
	}
	pthread_mutex_unlock(&c->lock);
	free_list(to_free);
}

/* ---------------------------------------------------------------- accessors */

const char *op_file_build_id_gnu(const struct op_file *f)
{
	return f ? f->build_id_gnu : NULL;
}

const char *op_file_build_id_go(const struct op_file *f)
{
	return f ? f->build_id_go : NULL;
}

const char *op_file_htlhash(const struct op_file *f)
{
	return f && f->has_htlhash ? f->htlhash : NULL;
}

const char *op_file_go_version(const struct op_file *f)
{
	return f && f->go_version[0] ? f->go_version : NULL;
}

int op_file_is_go(const struct op_file *f)
{
	return f ? f->is_go : 0;
}

const char *op_file_path(const struct op_file *f)
{
	return f ? f->path : NULL;
}

int op_file_offset_to_vaddr(const struct op_file *f, uint64_t offset, uint64_t *vaddr)
{
	size_t i;
	int pass;

	if (!f || !vaddr)
		return -EINVAL;
	/* exact segment first; then the page-aligned start /proc/PID/maps shows */
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < f->n_loads; i++) {
			const struct op_load_seg *s = &f->loads[i];
			uint64_t lo = pass ? s->offset & ~(uint64_t)4095 : s->offset;
			uint64_t hi = s->offset + (s->filesz ? s->filesz : 1);

			if (offset >= lo && offset < hi) {
				*vaddr = offset - s->offset + s->vaddr;
				return 0;
			}
		}
	}
	return -ENOENT;
}

/* Binary search: the symbol whose [addr, end) holds @vaddr. */
const struct op_sym *op_file_find_sym(const struct op_file *f, uint64_t vaddr)
{
	size_t lo = 0, hi = f->n_syms;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->syms[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	if (vaddr < f->syms[lo - 1].end)
		return &f->syms[lo - 1];
	return NULL;
}

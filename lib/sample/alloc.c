// SPDX-License-Identifier: Apache-2.0
/* Allocation probes: the allocator functions of a process's allocator files, by symbol. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf/types.h"
#include "util/log.h"
#include "sample/alloc.h"
#include "sample/proc.h"
#include "sampler.skel.h"

/* What each program measures; the symbols are probed in this order (aliases once). */
enum alloc_prog { P_MALLOC, P_CALLOC, P_REALLOC, P_ALIGNED, P_POSIX_MEMALIGN, P_FREE };

static const struct {
	const char *name;
	enum alloc_prog prog;
} alloc_syms[] = {
	{ "malloc", P_MALLOC },
	{ "calloc", P_CALLOC },
	{ "realloc", P_REALLOC },
	{ "free", P_FREE },
	{ "posix_memalign", P_POSIX_MEMALIGN },
	{ "aligned_alloc", P_ALIGNED },
	{ "memalign", P_ALIGNED },
	{ "valloc", P_MALLOC },
	{ "pvalloc", P_MALLOC },
	/* jemalloc's non-standard API */
	{ "mallocx", P_MALLOC },
	{ "rallocx", P_REALLOC },
	{ "dallocx", P_FREE },
	{ "sdallocx", P_FREE },
	/* mimalloc's own names (its malloc override calls them: not both) */
};

#define N_SYMS (sizeof(alloc_syms) / sizeof(alloc_syms[0]))
_Static_assert(N_SYMS == OP_ALLOC_NSYMS, "OP_ALLOC_NSYMS: the number of alloc_syms");

struct probed {
	uint64_t dev, ino;
	int pid; /* -1: whole-system */
};

struct op_alloc_probes {
	struct sampler_bpf *skel;
	uint64_t mean;
	struct bpf_link **links;
	size_t n_links, cap_links;
	struct probed *files;
	size_t n_files, cap_files;
};

/*
 * The two pieces of libm needed here, written out (the library does not link libm): ln(x) for
 * x in (0, 1] and 1 - exp(-y) for y >= 0, both to about double precision.
 */
static double ln01(double x)
{
	double z, z2, term, sum = 0;
	int e = 0;

	while (x < 0.5) {
		x *= 2;
		e++;
	}
	/* ln(x) = 2 atanh((x - 1) / (x + 1)), |z| <= 1/3 */
	z = (x - 1) / (x + 1);
	z2 = z * z;
	term = z;
	for (int k = 1; k < 60; k += 2) {
		sum += term / k;
		term *= z2;
	}
	return 2 * sum - e * 0.69314718055994530942;
}

static double one_minus_exp_neg(double y)
{
	double term = 1, sum = 0, e;
	int n;

	if (y > 50)
		return 1.0;
	if (y < 0.5) {
		/* y - y^2/2 + y^3/6 - ...: no cancellation for small y */
		for (int k = 1; k < 30; k++) {
			term *= (k == 1 ? y : -y / k);
			sum += term;
		}
		return sum;
	}
	n = (int)y;
	y -= n;
	e = 1;
	for (int k = 1; k < 30; k++) {
		term *= -y / k;
		e += term;
	}
	for (int i = 0; i < n; i++)
		e *= 0.36787944117144232160; /* exp(-1) */
	return 1 - e;
}

double op_alloc_probability(uint64_t size, uint64_t mean)
{
	if (!mean)
		return 1.0;
	return one_minus_exp_neg((double)size / (double)mean);
}

/* alloc_exp: quantiles of the exponential distribution, scaled so their mean is @mean. */
static int fill_exp(struct sampler_bpf *skel, uint64_t mean)
{
	static double q[OP_ALLOC_EXP_SLOTS];
	double sum = 0;

	for (unsigned int i = 0; i < OP_ALLOC_EXP_SLOTS; i++) {
		q[i] = -ln01(((double)i + 0.5) / OP_ALLOC_EXP_SLOTS);
		sum += q[i];
	}
	for (__u32 i = 0; i < OP_ALLOC_EXP_SLOTS; i++) {
		__u64 v = (__u64)(q[i] * (double)mean * OP_ALLOC_EXP_SLOTS / sum + 0.5);

		if (!v)
			v = 1;
		if (bpf_map__update_elem(skel->maps.alloc_exp, &i, sizeof(i), &v, sizeof(v), 0))
			return -errno;
	}
	return 0;
}

struct op_alloc_probes *op_alloc_probes_new(struct sampler_bpf *skel, uint64_t mean)
{
	struct op_alloc_probes *a = calloc(1, sizeof(*a));
	int err;

	if (!a)
		return NULL;
	a->skel = skel;
	a->mean = mean;
	err = fill_exp(skel, mean);
	if (err) {
		op_err("cannot set up allocation sampling: %s", strerror(-err));
		free(a);
		errno = -err;
		return NULL;
	}
	return a;
}

void op_alloc_probes_detach(struct op_alloc_probes *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->n_links; i++)
		bpf_link__destroy(a->links[i]);
	a->n_links = 0;
	a->n_files = 0;
}

void op_alloc_probes_free(struct op_alloc_probes *a)
{
	if (!a)
		return;
	op_alloc_probes_detach(a);
	free(a->links);
	free(a->files);
	free(a);
}

void op_alloc_forget(struct op_alloc_probes *a, int pid, uint64_t addr)
{
	struct {
		__u32 pid, pad;
		__u64 addr;
	} key = { (__u32)pid, 0, addr };

	if (a)
		bpf_map__delete_elem(a->skel->maps.alloc_inuse, &key, sizeof(key), 0);
}

static const char *base_name(const char *path)
{
	const char *base = strrchr(path, '/');

	return base ? base + 1 : path;
}

/* The in-process sampler (preload/alloc.c): its markers are probed instead of the allocator. */
static bool is_preload_lib(const char *path)
{
	return !strncmp(base_name(path), "libotelprof_alloc", 17);
}

bool op_alloc_is_preload(const char *path)
{
	return path && is_preload_lib(path);
}

void op_alloc_forget_pid(struct op_alloc_probes *a, int pid)
{
	__u32 key = (__u32)pid;

	if (a)
		bpf_map__delete_elem(a->skel->maps.alloc_preload_pids, &key, sizeof(key), 0);
}

static bool is_allocator_lib(const char *path)
{
	const char *base = base_name(path);

	return !strncmp(base, "libc.so", 7) || !strncmp(base, "libjemalloc.so", 14) ||
	       !strncmp(base, "libtcmalloc", 11) || !strncmp(base, "libmimalloc", 11);
}

/* File offsets of the allocator functions @elf defines (0: absent). Returns how many. */
static int syms_of_elf(Elf *elf, uint64_t *off)
{
	Elf_Scn *scn = NULL;
	int found = 0;
	GElf_Ehdr eh;
	size_t nph;

	memset(off, 0, N_SYMS * sizeof(*off));
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) ||
	    elf_getphdrnum(elf, &nph))
		return -ENOEXEC;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB))
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && sh.sh_entsize && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *name;

			if (!gelf_getsym(d, (int)i, &sym) ||
			    GELF_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_shndx == SHN_UNDEF ||
			    !sym.st_value ||
			    (GELF_ST_BIND(sym.st_info) != STB_GLOBAL &&
			     GELF_ST_BIND(sym.st_info) != STB_WEAK))
				continue;
			name = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (!name)
				continue;
			for (size_t k = 0; k < N_SYMS; k++) {
				if (off[k] || strcmp(name, alloc_syms[k].name))
					continue;
				/* the file offset of the address: its executable PT_LOAD segment */
				for (size_t ph = 0; ph < nph; ph++) {
					GElf_Phdr p;

					if (gelf_getphdr(elf, (int)ph, &p) && p.p_type == PT_LOAD &&
					    (p.p_flags & PF_X) && sym.st_value >= p.p_vaddr &&
					    sym.st_value - p.p_vaddr < p.p_filesz) {
						/* 0 is the ELF header, never a function */
						off[k] = sym.st_value - p.p_vaddr + p.p_offset;
						found += off[k] != 0;
						break;
					}
				}
			}
		}
	}
	return found;
}

int op_alloc_syms_mem(const void *image, size_t size, uint64_t *off)
{
	Elf *elf;
	int n;

	elf_version(EV_CURRENT);
	elf = elf_memory((char *)image, size);
	n = syms_of_elf(elf, off);
	if (elf)
		elf_end(elf);
	return n;
}

static int find_syms(const char *path, uint64_t *off)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), n;
	Elf *elf;

	memset(off, 0, N_SYMS * sizeof(*off));
	if (fd < 0)
		return -errno;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	n = syms_of_elf(elf, off);
	if (elf)
		elf_end(elf);
	close(fd);
	return n;
}

const char *op_alloc_sym_name(size_t i)
{
	return i < N_SYMS ? alloc_syms[i].name : NULL;
}

static struct bpf_program *prog_of(struct sampler_bpf *skel, enum alloc_prog p)
{
	switch (p) {
	case P_MALLOC:
		return skel->progs.alloc_malloc;
	case P_CALLOC:
		return skel->progs.alloc_calloc;
	case P_REALLOC:
		return skel->progs.alloc_realloc;
	case P_ALIGNED:
		return skel->progs.alloc_aligned;
	case P_POSIX_MEMALIGN:
		return skel->progs.alloc_posix_memalign;
	case P_FREE:
		return skel->progs.alloc_free;
	}
	return NULL;
}

static int add_link(struct op_alloc_probes *a, struct bpf_link *l)
{
	if (a->n_links == a->cap_links) {
		size_t cap = a->cap_links ? a->cap_links * 2 : 64;
		struct bpf_link **n = realloc(a->links, cap * sizeof(*n));

		if (!n) {
			bpf_link__destroy(l);
			return -ENOMEM;
		}
		a->links = n;
		a->cap_links = cap;
	}
	a->links[a->n_links++] = l;
	return 0;
}

/* The markers of libotelprof_alloc.so at @path. Returns 2 (markers probed) or < 0. */
static int probe_preload(struct op_alloc_probes *a, const char *path, int pid)
{
	static const char *const markers[] = { "otelprof_alloc_sampled", "otelprof_alloc_freed" };
	struct bpf_program *progs[] = { a->skel->progs.alloc_pre_sampled,
					a->skel->progs.alloc_pre_freed };

	for (int i = 0; i < 2; i++) {
		LIBBPF_OPTS(bpf_uprobe_opts, o, .func_name = markers[i]);
		struct bpf_link *l = bpf_program__attach_uprobe_opts(progs[i], pid, path, 0, &o);
		int err = l ? add_link(a, l) : -errno;

		if (err) {
			op_warn("cannot probe %s in %s (pid %d): %s", markers[i], path, pid,
				strerror(-err));
			return err;
		}
	}
	op_debug("in-process allocation sampling: probes on the markers of %s (pid %d)", path, pid);
	return 2;
}

/* Attach to every allocator function of @path (as @pid sees it). Returns functions or < 0. */
static int probe_file(struct op_alloc_probes *a, const char *path, int pid)
{
	uint64_t off[N_SYMS];
	int n = find_syms(path, off), done = 0, err = 0;

	if (n <= 0 || !off[0])
		return n < 0 ? n : 0; /* no malloc: not an allocator */
	for (size_t k = 0; k < N_SYMS; k++) {
		struct bpf_link *l;
		bool alias = false;

		if (!off[k])
			continue;
		for (size_t j = 0; j < k; j++)
			alias |= off[j] == off[k]; /* memalign = aligned_alloc in glibc */
		if (alias)
			continue;
		l = bpf_program__attach_uprobe(prog_of(a->skel, alloc_syms[k].prog), false, pid,
					       path, off[k]);
		if (!l || add_link(a, l)) {
			err = l ? -ENOMEM : -errno;
			break;
		}
		if (alloc_syms[k].prog != P_FREE) {
			l = bpf_program__attach_uprobe(a->skel->progs.alloc_ret, true, pid, path,
						       off[k]);
			if (!l || add_link(a, l)) {
				err = l ? -ENOMEM : -errno;
				break;
			}
		}
		done++;
	}
	if (err) {
		op_warn("cannot probe the allocator in %s (pid %d): %s", path, pid, strerror(-err));
		return err;
	}
	op_debug("allocation probes on %d functions of %s (pid %d)", done, path, pid);
	return done;
}

int op_alloc_probe_process(struct op_alloc_probes *a, int pid, bool only_pid)
{
	struct op_maps_entry *m = malloc(sizeof(*m));
	char path[PATH_MAX + 64], exe[PATH_MAX];
	char *line = NULL;
	size_t cap = 0;
	int files = 0, err = 0;
	bool preload = false;
	ssize_t elen;
	FILE *fp;

	if (!m)
		return -ENOMEM;
	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	elen = readlink(path, exe, sizeof(exe) - 1);
	exe[elen > 0 ? elen : 0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	fp = fopen(path, "re");
	if (!fp) {
		free(m);
		return -errno;
	}
	/* a process with the in-process sampler: its markers only, the allocator left alone */
	while (getline(&line, &cap, fp) > 0)
		if (!op_parse_maps_line(line, m) && m->executable && m->path[0] == '/' &&
		    is_preload_lib(m->path))
			preload = true;
	if (preload) {
		__u8 one = 1;
		__u32 key = (__u32)pid;

		bpf_map__update_elem(a->skel->maps.alloc_preload_pids, &key, sizeof(key), &one,
				     sizeof(one), BPF_ANY);
	}
	rewind(fp);
	while (getline(&line, &cap, fp) > 0) {
		bool seen = false;
		int n;

		if (op_parse_maps_line(line, m) || !m->executable || m->path[0] != '/' ||
		    m->deleted ||
		    (preload ? !is_preload_lib(m->path)
			     : !is_allocator_lib(m->path) && strcmp(m->path, exe)))
			continue;
		for (size_t i = 0; i < a->n_files; i++)
			seen |= a->files[i].ino == m->inode &&
				a->files[i].dev == ((uint64_t)m->dev_major << 32 | m->dev_minor) &&
				(a->files[i].pid == -1 || a->files[i].pid == pid);
		if (seen)
			continue;
		if (a->n_files == a->cap_files) {
			size_t nc = a->cap_files ? a->cap_files * 2 : 16;
			struct probed *nf = realloc(a->files, nc * sizeof(*nf));

			if (!nf)
				break;
			a->files = nf;
			a->cap_files = nc;
		}
		/* noted before probing: a file that fails is not retried for every process */
		a->files[a->n_files++] =
			(struct probed){ (uint64_t)m->dev_major << 32 | m->dev_minor, m->inode,
					 only_pid ? pid : -1 };
		snprintf(path, sizeof(path), "/proc/%d/root%s", pid, m->path);
		n = preload ? probe_preload(a, path, only_pid ? pid : -1)
			    : probe_file(a, path, only_pid ? pid : -1);
		if (n > 0)
			files++;
		else if (n < 0)
			err = n;
	}
	free(line);
	fclose(fp);
	free(m);
	return files ? files : err;
}

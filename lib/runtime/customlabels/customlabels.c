// SPDX-License-Identifier: Apache-2.0
/*
 * The custom-labels ABI v1 (the `custom-labels` library for C, C++ and Rust, by Polar
 * Signals; its custom-labels-v1.md): a process exports custom_labels_abi_version (a 4-byte 1)
 * and the thread-local custom_labels_current_set, either from its main executable (static
 * TLS at a link-time offset from the thread pointer) or from a library named
 * libcustomlabels*.so / customlabels.node loaded at startup (reached through an
 * R_X86_64_TLSDESC relocation, which the dynamic linker resolves to the variable's offset
 * from the thread pointer for such libraries). This finds the offset and fills label_procs
 * for bpf/runtime/customlabels.bpf.h.
 *
 * Chosen over OpenTelemetry's thread-local context proposal because it exists today, is
 * documented as a stable v1 ABI, and ships for C, C++ and Rust (its package registry) and Node.
 */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "runtime/customlabels/customlabels.h"
#include "sampler.skel.h"
#include "unwind/runtime.h"
#include "util/log.h"

/* What one ELF file says about the ABI. */
struct cl_elf {
	bool has_version, has_set;
	uint64_t version_vaddr;
	uint64_t set_value; /* st_value of custom_labels_current_set (offset in the TLS block) */
	uint64_t tlsdesc_vaddr; /* library: where its TLSDESC slot is, 0 if none */
	uint64_t tls_memsz, tls_align, tls_vaddr;
	bool has_tls;
	int64_t text_delta; /* p_vaddr - p_offset of the executable PT_LOAD */
	bool has_text;
};

/*
 * What binaries said, by file identity: most processes do not use the ABI, and a refresh of
 * their mappings must not parse their executable's symbols again each time.
 */
#define CACHE_SLOTS 256

struct cache_ent {
	struct op_file_id id;
	bool valid;
	struct cl_elf ce;
};

struct customlabels {
	struct op_runtime rt;
	int procs_fd;
	struct op_customlabels_stats st;
	struct cache_ent cache[CACHE_SLOTS];
};

static int read_elf(int fd, struct cl_elf *ce)
{
	Elf *elf;
	Elf_Scn *scn = NULL;
	size_t phnum = 0, set_index = 0;

	memset(ce, 0, sizeof(*ce));
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return -EINVAL;
	if (elf_getphdrnum(elf, &phnum) == 0) {
		for (size_t i = 0; i < phnum && i < 256; i++) {
			GElf_Phdr ph;

			if (!gelf_getphdr(elf, (int)i, &ph))
				continue;
			if (ph.p_type == PT_TLS) {
				ce->has_tls = true;
				ce->tls_memsz = ph.p_memsz;
				ce->tls_align = ph.p_align ? ph.p_align : 1;
				ce->tls_vaddr = ph.p_vaddr;
			} else if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X) && !ce->has_text) {
				ce->has_text = true;
				ce->text_delta = (int64_t)(ph.p_vaddr - ph.p_offset);
			}
		}
	}
	/* the symbols are dynamic ones by the ABI: .dynsym */
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize && i < (1u << 22); i++) {
			GElf_Sym sym;
			const char *name;

			if (!gelf_getsym(d, (int)i, &sym) || sym.st_shndx == SHN_UNDEF)
				continue;
			name = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (!name)
				continue;
			if (!strcmp(name, "custom_labels_abi_version") && sym.st_size == 4) {
				ce->has_version = true;
				ce->version_vaddr = sym.st_value;
			} else if (!strcmp(name, "custom_labels_current_set") &&
				   GELF_ST_TYPE(sym.st_info) == STT_TLS) {
				ce->has_set = true;
				ce->set_value = sym.st_value;
				set_index = i;
			}
		}
	}
	/* a library's TLSDESC relocation for the variable */
	scn = NULL;
	while (ce->has_set && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize && i < (1u << 22); i++) {
			GElf_Rela r;

			if (!gelf_getrela(d, (int)i, &r))
				continue;
			if (GELF_R_TYPE(r.r_info) == R_X86_64_TLSDESC &&
			    GELF_R_SYM(r.r_info) == set_index) {
				ce->tlsdesc_vaddr = r.r_offset;
				break;
			}
		}
	}
	elf_end(elf);
	return 0;
}

/* read_elf() of the file open on @fd, through the identity cache. */
static int elf_cached(struct customlabels *c, int fd, struct cl_elf *ce)
{
	struct op_file_id id;
	struct cache_ent *e;
	int err;

	if (!op_file_id_of(fd, &id))
		return -errno;
	e = &c->cache[op_file_id_slot(&id, CACHE_SLOTS)];
	if (e->valid && op_file_id_eq(&e->id, &id)) {
		*ce = e->ce;
		return 0;
	}
	err = read_elf(fd, ce);
	if (err)
		return err;
	*e = (struct cache_ent){ id, true, *ce };
	return 0;
}

static int read_mem(int pid, uint64_t addr, void *buf, size_t len)
{
	char path[32];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = pread(fd, buf, len, (off_t)addr);
	close(fd);
	return n == (ssize_t)len ? 0 : -EIO;
}

int64_t op_customlabels_exe_tls_offset(uint64_t memsz, uint64_t align, uint64_t vaddr,
				       uint64_t st_value)
{
	/*
	 * x86-64 variant II, the executable's block first below the thread pointer, as glibc
	 * places it (elf/dl-tls.c _dl_determine_tlsoffset): firstbyte is where the block's
	 * alignment starts within its first aligned unit.
	 */
	uint64_t firstbyte = (-(vaddr & (align - 1))) & (align - 1);
	uint64_t off = ((memsz - firstbyte + align - 1) / align) * align + firstbyte;

	return (int64_t)st_value - (int64_t)off;
}

static bool lib_name_ok(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !fnmatch("libcustomlabels*.so", base, 0) || !strcmp(base, "customlabels.node");
}

static int attach(void *ctx, struct op_runtime_proc *rp)
{
	struct customlabels *c = ctx;
	bool first_file = true;

	for (size_t i = 0; i < rp->n_maps; i++) {
		const struct op_runtime_mapping *m = &rp->maps[i];
		struct op_label_proc lp = { .source = OP_LABELS_CUSTOM };
		struct cl_elf ce;
		uint64_t bias;
		uint32_t version = 0;
		__u32 key = (__u32)rp->pid;
		char path[96];
		bool exe;
		int fd;

		if (!m->path || m->path[0] != '/')
			continue;
		exe = first_file;
		first_file = false;
		if (!exe && !lib_name_ok(m->path))
			continue;
		snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", rp->pid,
			 (unsigned long long)m->start, (unsigned long long)m->end);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (elf_cached(c, fd, &ce) || !ce.has_version || !ce.has_set) {
			close(fd);
			continue;
		}
		close(fd);
		/* m is the executable segment's mapping: file offset m->offset at m->start */
		if (!ce.has_text)
			continue;
		bias = m->start - (m->offset + (uint64_t)ce.text_delta);
		if (read_mem(rp->pid, bias + ce.version_vaddr, &version, 4) || version != 1) {
			c->st.bad_version++;
			op_debug("custom labels: pid %d: %s has ABI version %u, not 1: ignored",
				 rp->pid, m->path, version);
			return -ENOTSUP;
		}
		if (exe && ce.has_tls) {
			lp.tls_off = op_customlabels_exe_tls_offset(ce.tls_memsz, ce.tls_align,
								    ce.tls_vaddr, ce.set_value);
		} else if (!exe && ce.tlsdesc_vaddr) {
			uint64_t desc[2];

			/* resolved: {resolver, offset from the thread pointer} for static TLS */
			if (read_mem(rp->pid, bias + ce.tlsdesc_vaddr, desc, sizeof(desc)) ||
			    (int64_t)desc[1] >= 0 || (int64_t)desc[1] < -(1ll << 30)) {
				c->st.unresolved++;
				return -ENOTSUP;
			}
			lp.tls_off = (int64_t)desc[1];
		} else {
			c->st.unresolved++;
			return -ENOTSUP;
		}
		if (bpf_map_update_elem(c->procs_fd, &key, &lp, BPF_ANY)) {
			c->st.map_full++;
			return -errno;
		}
		c->st.processes++;
		return 1;
	}
	return 0;
}

static void detach(void *ctx, int pid)
{
	struct customlabels *c = ctx;
	struct op_label_proc lp;
	__u32 key = (__u32)pid;

	/* label_procs is shared with Go labels: remove only our own entry */
	if (bpf_map_lookup_elem(c->procs_fd, &key, &lp) == 0 && lp.source == OP_LABELS_CUSTOM &&
	    bpf_map_delete_elem(c->procs_fd, &key) == 0 && c->st.processes)
		c->st.processes--;
}

static void customlabels_free(void *ctx)
{
	free(ctx);
}

struct op_runtime *op_customlabels_runtime_new(const struct op_runtime_env *env)
{
	struct customlabels *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->procs_fd = bpf_map__fd(env->skel->maps.label_procs);
	c->rt = (struct op_runtime){
		.name = "customlabels",
		.kind = OP_RUNTIME_CUSTOMLABELS,
		.no_unwinder = true,
		.ctx = c,
		.attach = attach,
		.detach = detach,
		.free = customlabels_free,
	};
	return &c->rt;
}

void op_customlabels_stats(const struct op_runtime *rt, struct op_customlabels_stats *st)
{
	const struct customlabels *c = rt ? rt->ctx : NULL;

	if (c)
		*st = c->st;
	else
		memset(st, 0, sizeof(*st));
}

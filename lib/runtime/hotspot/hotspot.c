// SPDX-License-Identifier: Apache-2.0
/*
 * Java (HotSpot) frames: which processes run a HotSpot JVM (a libjvm.so mapping), where its
 * code cache is and how its structures are laid out (the JVM's own VMStructs tables, read from
 * its memory: vmstructs.c), for bpf/runtime/hotspot.bpf.h; and the naming of the frames that
 * walk records: a Method* to Class.method, its signature, source file and line (the method's
 * compressed line number table).
 *
 * Facts used (HotSpot sources, read for layout only, and the JVMs on this machine, see
 * /work/shared/reference/runtimes.md): the tables' strides are set when the JVM starts (0 in
 * the file), so a JVM met too early is tried again on a later attach; CodeCache::_heaps is a
 * GrowableArray of CodeHeap*, each with its reserved range (_memory) and segment map
 * (_segmap, both VirtualSpace); a Method's ConstMethod holds the name and signature indices
 * into its ConstantPool, whose entries (Symbol*) follow the ConstantPool header, and whose
 * _pool_holder is the class; a Symbol is a length (u2) and bytes; the line number table
 * follows the bytecodes when ConstMethod's flag bit 0 (has_linenumber_table) is set, as pairs
 * of deltas: a byte (bci << 3 | line), or 0xff and two signed UNSIGNED5 numbers, 0 ending it
 * (UNSIGNED5 excludes byte 0 from JDK 21 on).
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "runtime/hotspot/hotspot.h"
#include "runtime/hotspot/vmstructs.h"
#include "sampler.skel.h"
#include "unwind/runtime.h"
#include "util/log.h"

#include "bpf/runtime/hotspot.h"

#define HS_METHOD_CACHE 4096 /* named methods kept per JVM (a direct-mapped cache) */
#define HS_MAX_LINES	512  /* line table pairs kept per method */
#define HS_SYM_MAX	512  /* longest class/method name read */

struct hs_method {
	uint64_t payload, check; /* Method* (or stub blob) and the data word's check */
	bool used;
	char *name, *system_name, *file;
	uint32_t n_lines;
	uint32_t *lines; /* pairs (bci, line), in table order */
};

/* The debug information of one compiled method (nmethod), as read when first named. */
struct hs_jit {
	uint64_t blob;
	uint32_t compile_id;
	bool used;
	uint64_t method; /* the outer method */
	uint8_t *pcs, *scopes;
	size_t pcs_len, scopes_len;
	uint64_t *meta; /* the metadata array: Method* of the inlined methods */
	size_t n_meta;
};

#define HS_JIT_CACHE 1024 /* compiled methods kept per JVM (a direct-mapped cache) */

struct hs_proc {
	int pid;
	uint64_t jvm_start; /* the libjvm.so text mapping this was read for */
	int mem;	    /* /proc/PID/mem */
	bool ready;
	struct op_hs_vm vm;
	struct op_hs_proc bp;
	uint8_t unsigned5_x;
	struct hs_method *cache; /* HS_METHOD_CACHE, allocated when first named */
	struct hs_jit *jits;	 /* HS_JIT_CACHE, likewise */
	struct hs_proc *next;
};

struct hotspot {
	struct op_runtime rt;
	int procs_fd, errors_fd;
	struct hs_proc *procs;
	struct op_hotspot_stats st;
	char *scratch[OP_MAX_INLINE * 3];
	size_t n_scratch;
};

static const char *const reason_names[OP_HOTSPOT_REASON_MAX] = {
	[OP_HOTSPOT_NOT_READY] = "jvm_not_ready",
	[OP_HOTSPOT_NO_SYMBOLS] = "no_vmstructs_symbols",
	[OP_HOTSPOT_UNKNOWN_LAYOUT] = "unknown_layout",
	[OP_HOTSPOT_BAD_TABLES] = "bad_tables",
	[OP_HOTSPOT_MAP_FULL] = "map_full",
	[OP_HOTSPOT_STALE_METHOD] = "stale_method",
	[OP_HOTSPOT_WALK_NO_PROC] = "walk_no_proc",
	[OP_HOTSPOT_WALK_NO_HEAP] = "walk_no_heap",
	[OP_HOTSPOT_WALK_NO_BLOB] = "walk_no_blob",
	[OP_HOTSPOT_WALK_READ] = "walk_read",
	[OP_HOTSPOT_WALK_INTERP_FP] = "walk_interpreter_fp",
	[OP_HOTSPOT_WALK_BAD_RA] = "walk_bad_return_address",
	[OP_HOTSPOT_WALK_DEPTH] = "walk_depth",
};

const char *op_hotspot_reason_name(enum op_hotspot_reason r)
{
	return r < OP_HOTSPOT_REASON_MAX ? reason_names[r] : "?";
}

/* ---------------------------------------------------------------- memory and ELF */

static int mem_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct hs_proc *p = ctx;
	ssize_t n = pread(p->mem, buf, len, (off_t)addr);

	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

static int rd_u64(struct hs_proc *p, uint64_t addr, uint64_t *v)
{
	*v = 0;
	return mem_read(p, addr, v, 8);
}

static int rd_u32(struct hs_proc *p, uint64_t addr, uint32_t *v)
{
	*v = 0;
	return mem_read(p, addr, v, 4);
}

static int rd_u16(struct hs_proc *p, uint64_t addr, uint16_t *v)
{
	*v = 0;
	return mem_read(p, addr, v, 2);
}

/*
 * The gHotSpotVM* symbols of the libjvm.so open on @fd, relocated for the text mapping @m
 * (its load bias from the PT_LOAD that maps m->offset). -ENOENT when one is missing.
 */
static int jvm_symbols(int fd, const struct op_runtime_mapping *m, uint64_t syms[OP_HS_NSYMS])
{
	Elf *elf;
	Elf_Scn *scn = NULL;
	size_t phnum, found = 0;
	uint64_t bias = 0;
	bool have_bias = false;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return -EINVAL;
	if (elf_getphdrnum(elf, &phnum) == 0) {
		for (size_t i = 0; i < phnum; i++) {
			GElf_Phdr ph;

			if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
				continue;
			if (m->offset >= ph.p_offset && m->offset < ph.p_offset + ph.p_filesz) {
				bias = m->start - (ph.p_vaddr + (m->offset - ph.p_offset));
				have_bias = true;
				break;
			}
		}
	}
	memset(syms, 0, sizeof(uint64_t) * OP_HS_NSYMS);
	while (have_bias && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *name;

			if (!gelf_getsym(d, (int)i, &sym) || sym.st_shndx == SHN_UNDEF)
				continue;
			name = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (!name || strncmp(name, "gHotSpotVM", 10))
				continue;
			for (int k = 0; k < OP_HS_NSYMS; k++) {
				if (!syms[k] && !strcmp(name, op_hs_sym_names[k])) {
					syms[k] = sym.st_value + bias;
					found++;
				}
			}
		}
	}
	elf_end(elf);
	return found == OP_HS_NSYMS ? 0 : -ENOENT;
}

/* ---------------------------------------------------------------- processes */

static struct hs_proc **proc_slot(struct hotspot *h, int pid)
{
	struct hs_proc **pp = &h->procs;

	while (*pp && (*pp)->pid != pid)
		pp = &(*pp)->next;
	return pp;
}

static void method_clear(struct hs_method *e)
{
	free(e->name);
	free(e->system_name);
	free(e->file);
	free(e->lines);
	memset(e, 0, sizeof(*e));
}

static void jit_clear(struct hs_jit *j)
{
	free(j->pcs);
	free(j->scopes);
	free(j->meta);
	memset(j, 0, sizeof(*j));
}

static void proc_free(struct hs_proc *p)
{
	if (p->cache) {
		for (size_t i = 0; i < HS_METHOD_CACHE; i++)
			method_clear(&p->cache[i]);
		free(p->cache);
	}
	if (p->jits) {
		for (size_t i = 0; i < HS_JIT_CACHE; i++)
			jit_clear(&p->jits[i]);
		free(p->jits);
	}
	if (p->mem >= 0)
		close(p->mem);
	free(p);
}

/* The code heaps of a ready JVM, into p->bp. */
static int read_heaps(struct hs_proc *p)
{
	const struct op_hs_vm *vm = &p->vm;
	uint64_t arr, data;
	uint32_t len;

	if (rd_u64(p, vm->codecache_heaps, &arr) || !arr ||
	    rd_u32(p, arr + vm->growable_len, &len) || rd_u64(p, arr + vm->growable_data, &data))
		return -EAGAIN;
	if (!len)
		return -EAGAIN;
	if (len > OP_HS_MAX_HEAPS)
		return -EINVAL;
	p->bp.n_heaps = 0;
	for (uint32_t i = 0; i < len; i++) {
		struct op_hs_heap *hh = &p->bp.heaps[p->bp.n_heaps];
		uint64_t heap, lo, hi, seg;
		uint32_t log2;

		if (rd_u64(p, data + 8ull * i, &heap) || !heap ||
		    rd_u64(p, heap + vm->codeheap_memory + vm->vspace_low, &lo) ||
		    rd_u64(p, heap + vm->codeheap_memory + vm->vspace_high, &hi) ||
		    rd_u64(p, heap + vm->codeheap_segmap + vm->vspace_low, &seg) ||
		    rd_u32(p, heap + vm->codeheap_log2_seg, &log2))
			return -EINVAL;
		if (!lo || hi <= lo || !seg || log2 < 4 || log2 > 16)
			return -EINVAL;
		hh->start = lo;
		hh->end = hi;
		hh->segmap = seg;
		hh->log2_seg = log2;
		p->bp.n_heaps++;
	}
	return 0;
}

static bool fits16(uint64_t v)
{
	return v < 0x10000;
}

/* Fill p->bp's layout from p->vm; -ENOTSUP when an offset does not fit. */
static int bpf_layout(struct hs_proc *p)
{
	const struct op_hs_vm *vm = &p->vm;
	struct op_hs_proc *b = &p->bp;
	bool off = vm->blob_code_begin == OP_HS_UNSET;
	uint64_t code = off ? vm->blob_code_offset : vm->blob_code_begin;

	if (vm->blob_name + 8 > OP_HS_BLOB_HDR || vm->blob_frame_size + 4 > OP_HS_BLOB_HDR ||
	    vm->blob_frame_complete + 2 > OP_HS_BLOB_HDR || code + 8 > OP_HS_BLOB_HDR)
		return -ENOTSUP; /* the walk reads them from the blob's first bytes at once */
	if (!fits16(vm->blob_name) || !fits16(vm->blob_frame_complete) ||
	    !fits16(vm->blob_frame_size) || !fits16(code) || !fits16(vm->nmethod_method) ||
	    !fits16(vm->nmethod_compile_id) || !fits16(vm->method_const) ||
	    !fits16(vm->size_heapblock) || !fits16(vm->size_constmethod))
		return -ENOTSUP;
	b->blob_name = (__u16)vm->blob_name;
	b->blob_frame_complete = (__u16)vm->blob_frame_complete;
	b->blob_frame_size = (__u16)vm->blob_frame_size;
	b->blob_code = (__u16)code;
	b->code_is_offset = off;
	b->nmethod_method = (__u16)vm->nmethod_method;
	b->nmethod_compile_id = (__u16)vm->nmethod_compile_id;
	b->method_const = (__u16)vm->method_const;
	b->heapblock_size = (__u16)vm->size_heapblock;
	b->constmethod_size = (__u16)vm->size_constmethod;
	b->frame_method = (__s8)vm->frame_method;
	b->frame_bcp = (__s8)vm->frame_bcp;
	b->frame_sender_sp = (__s8)vm->frame_sender_sp;
	return 0;
}

/* Read the JVM of @p (libjvm.so mapped at @m): tables, layout, heaps. */
static int proc_read(struct hotspot *h, struct hs_proc *p, const struct op_runtime_mapping *m)
{
	uint64_t syms[OP_HS_NSYMS];
	uint32_t major = 0;
	char path[96];
	int fd, err;
	const char *miss;

	snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", p->pid,
		 (unsigned long long)m->start, (unsigned long long)m->end);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	err = jvm_symbols(fd, m, syms);
	close(fd);
	if (err) {
		h->st.reasons[OP_HOTSPOT_NO_SYMBOLS]++;
		op_debug("hotspot: pid %d: %s lacks the gHotSpotVM* symbols: Java frames stay "
			 "native",
			 p->pid, m->path);
		return -ENOTSUP;
	}
	err = op_hs_vm_read(mem_read, p, syms, &p->vm);
	if (err == -EAGAIN) {
		h->st.reasons[OP_HOTSPOT_NOT_READY]++;
		return err;
	}
	if (err == -ENOTSUP) {
		h->st.reasons[OP_HOTSPOT_UNKNOWN_LAYOUT]++;
		miss = op_hs_vm_missing(&p->vm);
		op_info("hotspot: pid %d: the JVM's structure tables lack %s (an unknown JVM "
			"build): its Java frames stay native",
			p->pid, miss ? miss : "the interpreter frame layout");
		return err;
	}
	if (err) {
		h->st.reasons[OP_HOTSPOT_BAD_TABLES]++;
		op_debug("hotspot: pid %d: cannot read the JVM's structure tables: %s", p->pid,
			 strerror(-err));
		return err;
	}
	if (bpf_layout(p)) {
		h->st.reasons[OP_HOTSPOT_UNKNOWN_LAYOUT]++;
		op_info("hotspot: pid %d: CodeBlob fields beyond what the walk reads (name %llu, "
			"frame size %llu, frame complete %llu, code %llu/%llu): its Java frames "
			"stay native",
			p->pid, (unsigned long long)p->vm.blob_name,
			(unsigned long long)p->vm.blob_frame_size,
			(unsigned long long)p->vm.blob_frame_complete,
			(unsigned long long)p->vm.blob_code_begin,
			(unsigned long long)p->vm.blob_code_offset);
		return -ENOTSUP;
	}
	if (p->vm.vm_major != OP_HS_UNSET)
		rd_u32(p, p->vm.vm_major, &major);
	p->unsigned5_x = major >= 21 ? 1 : 0;
	err = read_heaps(p);
	if (err == -EAGAIN) {
		h->st.reasons[OP_HOTSPOT_NOT_READY]++;
		return err;
	}
	if (err) {
		h->st.reasons[OP_HOTSPOT_BAD_TABLES]++;
		return err;
	}
	p->ready = true;
	op_debug("hotspot: pid %d: JDK %u, %u code heaps, %u structs %u types; CodeBlob name %u "
		 "frame_complete %u frame_size %u code %u%s, method %u, HeapBlock %u, "
		 "ConstMethod %u, interpreter slots %d %d %d",
		 p->pid, major, p->bp.n_heaps, p->vm.n_structs, p->vm.n_types, p->bp.blob_name,
		 p->bp.blob_frame_complete, p->bp.blob_frame_size, p->bp.blob_code,
		 p->bp.code_is_offset ? " (offset)" : "", p->bp.nmethod_method,
		 p->bp.heapblock_size, p->bp.constmethod_size, p->bp.frame_method, p->bp.frame_bcp,
		 p->bp.frame_sender_sp);
	return 0;
}

static bool is_libjvm(const char *path)
{
	size_t n = path ? strlen(path) : 0;

	return n >= 10 && !strcmp(path + n - 10, "/libjvm.so");
}

static int attach(void *ctx, struct op_runtime_proc *rp)
{
	struct hotspot *h = ctx;
	const struct op_runtime_mapping *jvm = NULL;
	struct hs_proc **pp, *p;
	__u32 key = (__u32)rp->pid;
	int err;

	for (size_t i = 0; i < rp->n_maps && !jvm; i++)
		if (is_libjvm(rp->maps[i].path))
			jvm = &rp->maps[i];
	if (!jvm)
		return 0;
	pp = proc_slot(h, rp->pid);
	p = *pp;
	if (p && p->jvm_start != jvm->start) {
		*pp = p->next;
		proc_free(p);
		p = NULL;
	}
	if (!p) {
		char path[64];

		p = calloc(1, sizeof(*p));
		if (!p)
			return -ENOMEM;
		p->pid = rp->pid;
		p->jvm_start = jvm->start;
		snprintf(path, sizeof(path), "/proc/%d/mem", rp->pid);
		p->mem = open(path, O_RDONLY | O_CLOEXEC);
		if (p->mem < 0) {
			err = -errno;
			free(p);
			return err;
		}
		p->next = h->procs;
		h->procs = p;
	}
	if (!p->ready) {
		err = proc_read(h, p, jvm);
		if (err)
			return err; /* -EAGAIN: tried again on the next attach */
	} else {
		read_heaps(p); /* the heap list is fixed at start; cheap to re-check */
	}
	if (bpf_map_update_elem(h->procs_fd, &key, &p->bp, BPF_ANY)) {
		h->st.reasons[OP_HOTSPOT_MAP_FULL]++;
		return -errno;
	}
	/* claim the committed (mapped, executable) parts of every code heap */
	for (size_t i = 0; i < rp->n_maps; i++) {
		const struct op_runtime_mapping *m = &rp->maps[i];

		if (m->path && m->path[0])
			continue;
		for (uint32_t k = 0; k < p->bp.n_heaps && rp->n_claims < OP_RUNTIME_MAX_CLAIMS;
		     k++) {
			uint64_t s =
				m->start > p->bp.heaps[k].start ? m->start : p->bp.heaps[k].start;
			uint64_t e = m->end < p->bp.heaps[k].end ? m->end : p->bp.heaps[k].end;

			if (s < e)
				rp->claims[rp->n_claims++] = (struct op_runtime_claim){ s, e };
		}
	}
	return 1;
}

static void detach(void *ctx, int pid)
{
	struct hotspot *h = ctx;
	struct hs_proc **pp = proc_slot(h, pid), *p = *pp;
	__u32 key = (__u32)pid;

	if (!p)
		return;
	bpf_map_delete_elem(h->procs_fd, &key);
	*pp = p->next;
	proc_free(p);
}

/* ---------------------------------------------------------------- naming */

/* The Symbol at @sym as a C string (malloc'd), or NULL. */
static char *read_symbol(struct hs_proc *p, uint64_t sym)
{
	uint16_t len;
	char *s;

	if (!sym || rd_u16(p, sym + p->vm.symbol_length, &len) || len > HS_SYM_MAX)
		return NULL;
	s = malloc((size_t)len + 1);
	if (!s)
		return NULL;
	if (mem_read(p, sym + p->vm.symbol_body, s, len)) {
		free(s);
		return NULL;
	}
	s[len] = 0;
	return s;
}

/* Constant pool entry @idx of @cpool as a Symbol string. */
static char *pool_symbol(struct hs_proc *p, uint64_t cpool, uint16_t idx)
{
	uint64_t sym;

	if (!idx || rd_u64(p, cpool + p->vm.size_cpool + 8ull * idx, &sym))
		return NULL;
	return read_symbol(p, sym & ~1ull); /* low bit: a tag of some JDKs' entries */
}

struct u5 {
	const uint8_t *b;
	size_t n, i;
	uint8_t x;
	bool bad;
};

static uint8_t u5_byte(struct u5 *r)
{
	if (r->i >= r->n) {
		r->bad = true;
		return 0;
	}
	return r->b[r->i++];
}

/* One UNSIGNED5 number (Pack200's: low bytes < 192 end it; bytes below x are excluded). */
static uint32_t u5_unsigned(struct u5 *r)
{
	uint32_t sum, ch = u5_byte(r);

	if (ch < r->x) {
		r->bad = true;
		return 0;
	}
	sum = ch - r->x;
	for (int shift = 6; ch >= 192 && shift < 30 && !r->bad; shift += 6) {
		ch = u5_byte(r);
		if (ch < r->x) {
			r->bad = true;
			return 0;
		}
		sum += (ch - r->x) << shift;
	}
	return sum;
}

static int32_t u5_signed(struct u5 *r)
{
	uint32_t sum = u5_unsigned(r);

	return (int32_t)(sum >> 1) ^ -(int32_t)(sum & 1);
}

/* The line number table of @cm (bytecodes @code_size long) into @e. */
static void read_lines(struct hs_proc *p, uint64_t cm, struct hs_method *e)
{
	const struct op_hs_vm *vm = &p->vm;
	uint16_t flags, code_size;
	uint8_t buf[HS_MAX_LINES * 3];
	struct u5 r = { .b = buf, .x = p->unsigned5_x };
	uint32_t bci = 0, line = 0;
	ssize_t n;

	if (vm->constmethod_flags == OP_HS_UNSET || vm->constmethod_code_size == OP_HS_UNSET ||
	    rd_u16(p, cm + vm->constmethod_flags, &flags) || !(flags & 1) ||
	    rd_u16(p, cm + vm->constmethod_code_size, &code_size))
		return;
	n = pread(p->mem, buf, sizeof(buf), (off_t)(cm + vm->size_constmethod + code_size));
	if (n <= 0)
		return;
	r.n = (size_t)n;
	e->lines = malloc(HS_MAX_LINES * 2 * sizeof(uint32_t));
	if (!e->lines)
		return;
	while (e->n_lines < HS_MAX_LINES) {
		uint8_t b = u5_byte(&r);

		if (r.bad || !b)
			break;
		if (b == 0xff) {
			bci += (uint32_t)u5_signed(&r);
			line += (uint32_t)u5_signed(&r);
			if (r.bad)
				break;
		} else {
			bci += b >> 3;
			line += b & 7;
		}
		e->lines[2 * e->n_lines] = bci;
		e->lines[2 * e->n_lines + 1] = line;
		e->n_lines++;
	}
}

/* The line of bytecode @bci: the last entry starting at or before it. */
static int64_t line_of(const struct hs_method *e, uint32_t bci)
{
	int64_t line = 0;
	uint32_t best = 0;

	for (uint32_t i = 0; i < e->n_lines; i++) {
		if (e->lines[2 * i] <= bci && (!line || e->lines[2 * i] >= best)) {
			best = e->lines[2 * i];
			line = e->lines[2 * i + 1];
		}
	}
	return line;
}

/* "java/lang/String" → "java.lang.String" in place. */
static void dots(char *s)
{
	for (; s && *s; s++)
		if (*s == '/')
			*s = '.';
}

static int name_method(struct hs_proc *p, uint64_t method, uint32_t check, struct hs_method *e)
{
	const struct op_hs_vm *vm = &p->vm;
	uint64_t cm, cpool, holder, ksym;
	uint16_t ni, si, fi = 0;
	char *klass, *mname, *sig, *file = NULL;
	size_t len;

	if (rd_u64(p, method + vm->method_const, &cm) || (uint32_t)(cm >> 3) != check)
		return -ESTALE;
	if (rd_u64(p, cm + vm->constmethod_constants, &cpool) ||
	    rd_u16(p, cm + vm->constmethod_name_index, &ni) ||
	    rd_u16(p, cm + vm->constmethod_sig_index, &si) ||
	    rd_u64(p, cpool + vm->cpool_holder, &holder) ||
	    rd_u64(p, holder + vm->klass_name, &ksym))
		return -EIO;
	klass = read_symbol(p, ksym);
	mname = pool_symbol(p, cpool, ni);
	sig = pool_symbol(p, cpool, si);
	if (vm->cpool_source_file != OP_HS_UNSET)
		rd_u16(p, cpool + vm->cpool_source_file, &fi);
	else if (vm->iklass_source_file != OP_HS_UNSET)
		rd_u16(p, holder + vm->iklass_source_file, &fi);
	if (fi)
		file = pool_symbol(p, cpool, fi);
	if (!klass || !mname) {
		free(klass);
		free(mname);
		free(sig);
		free(file);
		return -EIO;
	}
	dots(klass);
	len = strlen(klass) + strlen(mname) + (sig ? strlen(sig) : 0) + 2;
	e->name = malloc(len);
	e->system_name = malloc(len);
	if (e->name && e->system_name) {
		snprintf(e->name, len, "%s.%s", klass, mname);
		snprintf(e->system_name, len, "%s.%s%s", klass, mname, sig ? sig : "");
	}
	if (file) {
		/* the source file's own name, in the class's package folder: a/b/C.java */
		char *slash = strrchr(klass, '.');
		size_t fl = (slash ? (size_t)(slash - klass) + 1 : 0) + strlen(file) + 1;

		e->file = malloc(fl);
		if (e->file) {
			if (slash) {
				*slash = 0;
				for (char *c = klass; *c; c++)
					if (*c == '.')
						*c = '/';
				snprintf(e->file, fl, "%s/%s", klass, file);
			} else {
				snprintf(e->file, fl, "%s", file);
			}
		}
	}
	free(klass);
	free(mname);
	free(sig);
	free(file);
	if (!e->name || !e->system_name)
		return -ENOMEM;
	read_lines(p, cm, e);
	return 0;
}

static int name_stub(struct hs_proc *p, uint64_t blob, uint32_t check, struct hs_method *e)
{
	uint64_t name;
	char buf[64];

	if (rd_u64(p, blob + p->vm.blob_name, &name) || (uint32_t)name != check)
		return -ESTALE;
	memset(buf, 0, sizeof(buf));
	if (pread(p->mem, buf, sizeof(buf) - 1, (off_t)name) <= 0 || !buf[0])
		return -EIO;
	e->name = malloc(strlen(buf) + 10);
	if (!e->name)
		return -ENOMEM;
	sprintf(e->name, "[jvm] %s", buf);
	e->system_name = strdup(e->name);
	return e->system_name ? 0 : -ENOMEM;
}

/* The cache entry of (@payload, @check), named by @how on a miss; NULL on error (counted). */
static struct hs_method *cached(struct hotspot *h, struct hs_proc *p, uint64_t payload,
				uint32_t check, bool stub)
{
	size_t slot = (size_t)((payload >> 3) ^ (payload >> 15) ^ check) & (HS_METHOD_CACHE - 1);
	struct hs_method *e;
	int err;

	if (!p->cache) {
		p->cache = calloc(HS_METHOD_CACHE, sizeof(*p->cache));
		if (!p->cache)
			return NULL;
	}
	e = &p->cache[slot];
	if (e->used && e->payload == payload && e->check == check)
		return e;
	method_clear(e);
	err = stub ? name_stub(p, payload, check, e) : name_method(p, payload, check, e);
	if (err) {
		if (err == -ESTALE)
			h->st.reasons[OP_HOTSPOT_STALE_METHOD]++;
		method_clear(e);
		return NULL;
	}
	e->used = true;
	e->payload = payload;
	e->check = check;
	h->st.named++;
	return e;
}

#define HS_MAX_DEBUG (1u << 20) /* debug information of one nmethod read at most */

/* The debug information of compiled method @blob (compile id @cid) into @j. */
static int read_jit(struct hs_proc *p, uint64_t blob, uint32_t cid, struct hs_jit *j)
{
	const struct op_hs_vm *vm = &p->vm;
	uint64_t pcs, pcs_end, sd, sd_end, meta = 0, meta_end = 0;
	uint32_t id;

	if (rd_u32(p, blob + vm->nmethod_compile_id, &id) || id != cid)
		return -ESTALE;
	if (rd_u64(p, blob + vm->nmethod_method, &j->method) || !j->method)
		return -EIO;
	if (vm->pcdesc_pc == OP_HS_UNSET || vm->pcdesc_scope == OP_HS_UNSET ||
	    vm->size_pcdesc == OP_HS_UNSET || vm->size_pcdesc < 8 || vm->size_pcdesc > 64 ||
	    vm->nm_scopes_pcs_off == OP_HS_UNSET)
		return 0; /* the outer method only */
	if (vm->nm_immutable == OP_HS_UNSET) {
		/* JDK <= 22: [metadata][scopes data][PC descs][dependencies] in the nmethod */
		uint32_t mo, po, dO;

		if (vm->nm_metadata_off == OP_HS_UNSET || vm->nm_scopes_data_begin == OP_HS_UNSET ||
		    vm->nm_deps_off == OP_HS_UNSET || rd_u32(p, blob + vm->nm_metadata_off, &mo) ||
		    rd_u64(p, blob + vm->nm_scopes_data_begin, &sd) ||
		    rd_u32(p, blob + vm->nm_scopes_pcs_off, &po) ||
		    rd_u32(p, blob + vm->nm_deps_off, &dO))
			return 0;
		meta = blob + mo;
		meta_end = sd;
		sd_end = pcs = blob + po;
		pcs_end = blob + dO;
	} else {
		/* JDK 23+: [PC descs][scopes data] in the immutable data; metadata in the
		 * mutable data after the relocations (JDK 25+) */
		uint64_t imm;
		uint32_t isz, po, so;

		if (vm->nm_immutable_size == OP_HS_UNSET || vm->nm_scopes_data_off == OP_HS_UNSET ||
		    rd_u64(p, blob + vm->nm_immutable, &imm) ||
		    rd_u32(p, blob + vm->nm_immutable_size, &isz) ||
		    rd_u32(p, blob + vm->nm_scopes_pcs_off, &po) ||
		    rd_u32(p, blob + vm->nm_scopes_data_off, &so))
			return 0;
		pcs = imm + po;
		pcs_end = sd = imm + so;
		sd_end = imm + isz;
		if (vm->blob_mutable != OP_HS_UNSET && vm->blob_mutable_size != OP_HS_UNSET &&
		    vm->blob_reloc_size != OP_HS_UNSET) {
			uint64_t mut;
			uint32_t msz, rsz;

			if (!rd_u64(p, blob + vm->blob_mutable, &mut) &&
			    !rd_u32(p, blob + vm->blob_mutable_size, &msz) &&
			    !rd_u32(p, blob + vm->blob_reloc_size, &rsz) && rsz <= msz) {
				meta = mut + rsz;
				meta_end = mut + msz;
			}
		}
	}
	if (pcs > pcs_end || pcs_end - pcs > HS_MAX_DEBUG || sd > sd_end ||
	    sd_end - sd > HS_MAX_DEBUG || meta > meta_end || meta_end - meta > HS_MAX_DEBUG)
		return 0;
	j->pcs_len = pcs_end - pcs;
	j->scopes_len = sd_end - sd;
	j->n_meta = (meta_end - meta) / 8;
	j->pcs = malloc(j->pcs_len + 1);
	j->scopes = malloc(j->scopes_len + 1);
	j->meta = malloc(j->n_meta * 8 + 8);
	if (!j->pcs || !j->scopes || !j->meta || mem_read(p, pcs, j->pcs, j->pcs_len) ||
	    mem_read(p, sd, j->scopes, j->scopes_len) ||
	    mem_read(p, meta, j->meta, j->n_meta * 8)) {
		free(j->pcs);
		free(j->scopes);
		free(j->meta);
		j->pcs = j->scopes = NULL;
		j->meta = NULL;
		j->pcs_len = j->scopes_len = j->n_meta = 0;
	}
	return 0;
}

/*
 * The methods active at @pcoff of @j, innermost first: (Method*, bci) pairs from the scope of
 * the last PC descriptor at or before it; n = 0 when there is no debug information.
 */
static size_t jit_scopes(const struct hs_proc *p, const struct hs_jit *j, uint32_t pcoff,
			 uint64_t *methods, uint32_t *bcis, size_t max)
{
	const struct op_hs_vm *vm = &p->vm;
	int64_t before = -2, after = INT64_MAX;
	uint32_t off = 0, off_before = 0, off_after = 0, limit = (uint32_t)j->scopes_len;
	size_t n = 0;

	/*
	 * A return address has its descriptor at exactly its offset. A leaf's pc (inside a loop)
	 * has none: the next descriptor (the loop's safepoint poll, a call) is in the same code
	 * and scope far more often than the one before it, which may be the method's entry.
	 */
	for (size_t i = 0; i + vm->size_pcdesc <= j->pcs_len; i += vm->size_pcdesc) {
		int32_t pc, so;

		if (vm->pcdesc_pc + 4 > vm->size_pcdesc || vm->pcdesc_scope + 4 > vm->size_pcdesc)
			return 0;
		memcpy(&pc, j->pcs + i + vm->pcdesc_pc, 4);
		memcpy(&so, j->pcs + i + vm->pcdesc_scope, 4);
		if (!so)
			continue;
		if (pc <= (int64_t)pcoff && pc >= before) {
			before = pc;
			off_before = (uint32_t)so;
		} else if (pc > (int64_t)pcoff && pc < after) {
			after = pc;
			off_after = (uint32_t)so;
		}
	}
	off = before == (int64_t)pcoff ? off_before : off_after ? off_after : off_before;
	/* scopes point to their sender at a smaller offset: the chain ends */
	while (off && off < limit && n < max) {
		struct u5 r = { .b = j->scopes + off,
				.n = j->scopes_len - off,
				.x = p->unsigned5_x };
		uint32_t next, midx, bci;

		limit = off;
		next = (uint32_t)u5_unsigned(&r);
		midx = (uint32_t)u5_unsigned(&r);
		bci = (uint32_t)u5_unsigned(&r);
		if (r.bad)
			break;
		if (midx && midx <= j->n_meta && j->meta[midx - 1]) {
			methods[n] = j->meta[midx - 1];
			bcis[n] =
				bci ? bci - 1 : 0; /* stored plus one (InvocationEntryBci is -1) */
			n++;
		}
		off = next;
	}
	return n;
}

/* Copies of the strings handed out by the last symbolize() (cache entries may be evicted). */
static void scratch_free(struct hotspot *h)
{
	for (size_t i = 0; i < h->n_scratch; i++)
		free(h->scratch[i]);
	h->n_scratch = 0;
}

static const char *scratch_dup(struct hotspot *h, const char *s)
{
	char *d;

	if (!s || h->n_scratch >= sizeof(h->scratch) / sizeof(h->scratch[0]))
		return NULL;
	d = strdup(s);
	if (d)
		h->scratch[h->n_scratch++] = d;
	return d;
}

static int symbolize_jit(struct hotspot *h, struct hs_proc *p, uint64_t blob, uint32_t pcoff,
			 uint32_t cid, struct op_runtime_frame *out)
{
	size_t slot = (size_t)((blob >> 4) ^ cid) & (HS_JIT_CACHE - 1), n;
	uint64_t methods[OP_MAX_INLINE];
	uint32_t bcis[OP_MAX_INLINE];
	struct hs_jit *j;
	int err;

	if (!p->jits) {
		p->jits = calloc(HS_JIT_CACHE, sizeof(*p->jits));
		if (!p->jits)
			return -ENOMEM;
	}
	j = &p->jits[slot];
	if (!j->used || j->blob != blob || j->compile_id != cid) {
		jit_clear(j);
		err = read_jit(p, blob, cid, j);
		if (err) {
			if (err == -ESTALE)
				h->st.reasons[OP_HOTSPOT_STALE_METHOD]++;
			jit_clear(j);
			return err;
		}
		j->used = true;
		j->blob = blob;
		j->compile_id = cid;
	}
	n = jit_scopes(p, j, pcoff, methods, bcis, OP_MAX_INLINE);
	if (!n) {
		methods[0] = j->method;
		bcis[0] = UINT32_MAX;
		n = 1;
	}
	for (size_t i = 0; i < n; i++) {
		struct hs_method *e;
		uint64_t cm;

		if (rd_u64(p, methods[i] + p->vm.method_const, &cm))
			break;
		e = cached(h, p, methods[i], (uint32_t)(cm >> 3), false);
		if (!e)
			break;
		out->sym.lines[out->sym.n++] = (struct op_sym_line){
			.name = scratch_dup(h, e->name),
			.system_name = scratch_dup(h, e->system_name),
			.file = scratch_dup(h, e->file),
			.line = bcis[i] != UINT32_MAX ? line_of(e, bcis[i]) : 0,
		};
		if (!out->sym.lines[out->sym.n - 1].name) {
			out->sym.n--;
			break;
		}
	}
	out->address = pcoff;
	return out->sym.n ? 0 : -EIO;
}

static int symbolize(void *ctx, int pid, uint64_t payload, uint64_t data,
		     struct op_runtime_frame *out)
{
	struct hotspot *h = ctx;
	struct hs_proc *p = *proc_slot(h, pid);
	uint32_t sub = (uint32_t)(data >> 56), val = (uint32_t)(data >> 32) & 0xffffff;
	uint32_t check = (uint32_t)data;
	struct hs_method *e;

	out->sym.n = 0;
	scratch_free(h);
	if (!p || !p->ready)
		return -ENOENT;
	if (sub == OP_HS_FRAME_COMPILED || sub == OP_HS_FRAME_NATIVE)
		return symbolize_jit(h, p, payload, val, check, out);
	e = cached(h, p, payload, check, sub == OP_HS_FRAME_STUB);
	if (!e)
		return -ENOENT;
	out->sym.n = 1;
	out->sym.lines[0] = (struct op_sym_line){
		.name = e->name,
		.system_name = e->system_name,
		.file = e->file,
		.line = sub == OP_HS_FRAME_INTERP && val != 0xffff ? line_of(e, val) : 0,
	};
	out->address = val;
	return 0;
}

static void hotspot_free(void *ctx)
{
	struct hotspot *h = ctx;
	struct op_hotspot_stats st;

	/* what fell back to native frames, and why (otelprof record -v) */
	op_hotspot_stats(&h->rt, &st);
	for (int r = 0; r < OP_HOTSPOT_REASON_MAX; r++)
		if (st.reasons[r])
			op_info("hotspot: %s: %llu", op_hotspot_reason_name(r),
				(unsigned long long)st.reasons[r]);

	while (h->procs) {
		struct hs_proc *p = h->procs;

		h->procs = p->next;
		proc_free(p);
	}
	scratch_free(h);
	free(h);
}

struct op_runtime *op_hotspot_runtime_new(const struct op_runtime_env *env)
{
	struct hotspot *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	h->procs_fd = bpf_map__fd(env->skel->maps.hotspot_procs);
	h->errors_fd = bpf_map__fd(env->skel->maps.hotspot_errors);
	h->rt = (struct op_runtime){
		.name = "hotspot",
		.kind = OP_RUNTIME_HOTSPOT,
		.ctx = h,
		.attach = attach,
		.detach = detach,
		.symbolize = symbolize,
		.free = hotspot_free,
	};
	return &h->rt;
}

void op_hotspot_stats(const struct op_runtime *rt, struct op_hotspot_stats *st)
{
	const struct hotspot *h = rt ? rt->ctx : NULL;
	int ncpu = libbpf_num_possible_cpus();

	memset(st, 0, sizeof(*st));
	if (!h)
		return;
	*st = h->st;
	for (const struct hs_proc *p = h->procs; p; p = p->next)
		st->jvms += p->ready;
	for (__u32 k = 0; k < OP_HS_ERR_MAX && ncpu > 0 && ncpu <= 4096; k++) {
		__u64 *v = calloc((size_t)ncpu, sizeof(*v));

		if (!v)
			return;
		if (bpf_map_lookup_elem(h->errors_fd, &k, v) == 0)
			for (int c = 0; c < ncpu; c++)
				st->reasons[OP_HOTSPOT_WALK_NO_PROC + k] += v[c];
		free(v);
	}
}

// SPDX-License-Identifier: Apache-2.0
/*
 * CPython in a process: the interpreter is libpython3.X.so (pyenv, most distributions' shared
 * builds) or linked into the executable (Debian's /usr/bin/python3.11, stripped: its .dynsym
 * still exports _PyRuntime, Py_Version and _PyEval_EvalFrameDefault). The version comes from
 * Py_Version (3.11+) or the file's name (libpython3.X.so, python3.X); the layout from the
 * table below, and for 3.13 it is also read from _PyRuntime.debug_offsets (the structure
 * CPython puts at the start of _PyRuntime for out-of-process tools) and must agree with the
 * table, field by field, or the process is counted as unknown and its frames stay native.
 *
 * attach() fills python_procs for bpf/runtime/python.bpf.h and claims the eval loop
 * (_PyEval_EvalFrameDefault) so the native walk hands its frames to that program.
 * symbolize() reads the code object a frame names from /proc/PID/mem: qualified name (3.11+,
 * co_name before), file, first line and line table, kept per (pid, code object address,
 * first line) within a byte budget; the first line the BPF side read with the frame must match
 * what the object says now, or the frame is not named (the object was freed and reused).
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "runtime/python/python.h"
#include "sampler.skel.h"
#include "util/log.h"

#define NONE PY_OFF_NONE

/*
 * Layouts per minor version (x86-64, default builds, not free-threaded). Source: the DWARF
 * of the pyenv builds 3.8.18, 3.9.18, 3.10.13, 3.11.7, 3.12.1, 3.13.0
 * (`gdb -batch -ex 'output/x (long)&((PyThreadState*)0)->thread_id' libpython3.X.so.1.0`
 * for each field), the same for Debian's 3.11.2 debug file (identical to 3.11.7), and for
 * 3.13 _PyRuntime.debug_offsets (checked at attach time against every process). Field names
 * per CPython's Include/cpython/pystate.h, Include/internal/pycore_frame.h, code.h.
 */
struct py_layout {
	int minor;
	uint16_t interp_head, interp_ts, ts_next, ts_thread_id, ts_frame, cf_current;
	uint16_t f_back, f_code, f_instr, f_entry, f_owner;
	uint16_t co_firstlineno, co_code, co_filename, co_name, co_qualname, co_lines;
	uint16_t ascii_size, compact_size; /* sizeof(PyASCIIObject), (PyCompactUnicodeObject) */
};

static const struct py_layout layouts[] = {
	/* 3.8/3.9: tstate->frame, PyFrameObject f_back/f_code/f_lasti (bytes), co_lnotab */
	{ 8,	0x20, 0x08, 0x08, 0xb0, 0x18, NONE, 0x18, 0x20, 0x68,
	  NONE, NONE, 0x28, NONE, 0x68, 0x70, NONE, 0x78, 0x30, 0x48 },
	{ 9,	0x20, 0x08, 0x08, 0xb0, 0x18, NONE, 0x18, 0x20, 0x68,
	  NONE, NONE, 0x28, NONE, 0x68, 0x70, NONE, 0x78, 0x30, 0x48 },
	/* 3.10: f_lasti counts 2-byte code units; co_linetable */
	{ 10,	0x20, 0x08, 0x08, 0xb0, 0x18, NONE, 0x18, 0x20, 0x60,
	  NONE, NONE, 0x28, NONE, 0x68, 0x70, NONE, 0x78, 0x30, 0x48 },
	/* 3.11: tstate->cframe->current_frame, _PyInterpreterFrame f_code/previous/prev_instr,
	 * is_entry; interp->threads.head */
	{ 11,	0x28, 0x10, 0x08, 0x98, 0x38, 0x08, 0x30, 0x20, 0x38,
	  0x44, NONE, 0x48, 0xb8, 0x70, 0x78, 0x80, 0x88, 0x30, 0x48 },
	/* 3.12: cframe->current_frame at 0; owner 3 = the C stack's shim frame */
	{ 12,	0x28, 0x48, 0x08, 0x88, 0x38, 0x00, 0x08, 0x00, 0x38,
	  NONE, 0x46, 0x44, 0xc0, 0x70, 0x78, 0x80, 0x88, 0x28, 0x38 },
	/* 3.13: tstate->current_frame, f_executable, instr_ptr */
	{ 13,	0x278, 0x1cb0, 0x08, 0x98, 0x48, NONE, 0x08, 0x00, 0x38,
	  NONE, 0x46,  0x44,   0xc8, 0x70, 0x78, 0x80, 0x88, 0x28, 0x38 },
};

/*
 * 3.13's _Py_DebugOffsets (Include/internal/pycore_runtime.h): where each field we use sits
 * in it (offsets of the debug structure itself, from the 3.13.0 DWARF), so each can be
 * compared with the table.
 */
static const struct {
	uint16_t at;  /* offset in _PyRuntime */
	size_t field; /* offsetof(struct py_layout, ...) */
	const char *name;
} debug_313[] = {
	{ 0x28, offsetof(struct py_layout, interp_head), "runtime_state.interpreters_head" },
	{ 0x48, offsetof(struct py_layout, interp_ts), "interpreter_state.threads_head" },
	{ 0xa8, offsetof(struct py_layout, ts_next), "thread_state.next" },
	{ 0xb8, offsetof(struct py_layout, ts_frame), "thread_state.current_frame" },
	{ 0xc0, offsetof(struct py_layout, ts_thread_id), "thread_state.thread_id" },
	{ 0xe8, offsetof(struct py_layout, f_back), "interpreter_frame.previous" },
	{ 0xf0, offsetof(struct py_layout, f_code), "interpreter_frame.executable" },
	{ 0xf8, offsetof(struct py_layout, f_instr), "interpreter_frame.instr_ptr" },
	{ 0x108, offsetof(struct py_layout, f_owner), "interpreter_frame.owner" },
	{ 0x118, offsetof(struct py_layout, co_filename), "code_object.filename" },
	{ 0x120, offsetof(struct py_layout, co_name), "code_object.name" },
	{ 0x128, offsetof(struct py_layout, co_qualname), "code_object.qualname" },
	{ 0x130, offsetof(struct py_layout, co_lines), "code_object.linetable" },
	{ 0x138, offsetof(struct py_layout, co_firstlineno), "code_object.firstlineno" },
	{ 0x158, offsetof(struct py_layout, co_code), "code_object.co_code_adaptive" },
};
#define DEBUG_313_SIZE 0x160

static const struct py_layout *layout_of(int minor)
{
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (layouts[i].minor == minor)
			return &layouts[i];
	return NULL;
}

/* What one ELF file says about CPython. */
struct py_elf {
	bool has_runtime, has_eval, has_version;
	uint64_t runtime, eval, eval_size;
	uint32_t version_hex;
	uint8_t debug[DEBUG_313_SIZE]; /* the first bytes of _PyRuntime, as in the file */
	bool has_debug;
	int64_t text_delta; /* p_vaddr - p_offset of the executable PT_LOAD */
	bool has_text;
};

#define ELF_CACHE_SLOTS 128

struct elf_ent {
	struct op_file_id id;
	bool valid;
	struct py_elf pe;
};

/* One code object, as read; the line table kept for the lines of later frames. */
struct code_ent {
	struct code_ent *next;
	int pid;
	uint64_t addr;
	uint32_t first;
	char *qualname, *file;
	uint8_t *lines;
	size_t n_lines, bytes;
};

#define CODE_SLOTS	   4096
#define CODE_BUDGET	   (16u << 20) /* bytes of code entries kept */
#define PY_MAX_STR	   1024	       /* characters of a name or file read */
#define PY_MAX_LINETABLE   (256u << 10)
#define PY_MAX_PROCS_TRACK 4096

struct py_pid {
	int pid;
	int minor;
};

struct python {
	struct op_runtime rt;
	int procs_fd, counters_fd;
	struct op_python_stats st;
	struct elf_ent elfs[ELF_CACHE_SLOTS];
	struct code_ent *codes[CODE_SLOTS];
	size_t code_bytes;
	struct py_pid *pids;
	size_t n_pids, cap_pids;
	/* pids last counted as of an unknown version: a process is counted once, not at each
	 * re-read of its mappings (detach is not called for a process attach() refused) */
	int unknown[256];
	size_t unknown_next;
};

/* ---------------------------------------------------------------- ELF */

static bool read_vaddr(Elf *elf, uint64_t vaddr, void *out, size_t len)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS || !sh.sh_addr ||
		    vaddr < sh.sh_addr || vaddr + len > sh.sh_addr + sh.sh_size)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || vaddr - sh.sh_addr + len > d->d_size)
			return false;
		memcpy(out, (const uint8_t *)d->d_buf + (vaddr - sh.sh_addr), len);
		return true;
	}
	return false;
}

static int read_elf(int fd, struct py_elf *pe)
{
	Elf *elf;
	Elf_Scn *scn = NULL;
	size_t phnum = 0;
	uint64_t version_vaddr = 0;

	memset(pe, 0, sizeof(*pe));
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return -EINVAL;
	if (elf_kind(elf) != ELF_K_ELF) {
		elf_end(elf);
		return -EINVAL;
	}
	if (elf_getphdrnum(elf, &phnum) == 0) {
		for (size_t i = 0; i < phnum && i < 256; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD &&
			    (ph.p_flags & PF_X) && !pe->has_text) {
				pe->has_text = true;
				pe->text_delta = (int64_t)(ph.p_vaddr - ph.p_offset);
			}
		}
	}
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB) || !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize && i < (1u << 22); i++) {
			GElf_Sym sym;
			const char *name;

			if (!gelf_getsym(d, (int)i, &sym) || sym.st_shndx == SHN_UNDEF)
				continue;
			name = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (!name || (name[0] != '_' && name[0] != 'P'))
				continue;
			if (!strcmp(name, "_PyRuntime")) {
				pe->has_runtime = true;
				pe->runtime = sym.st_value;
			} else if (!strcmp(name, "_PyEval_EvalFrameDefault") && sym.st_size) {
				pe->has_eval = true;
				pe->eval = sym.st_value;
				pe->eval_size = sym.st_size;
			} else if (!strcmp(name, "Py_Version") && sym.st_size == 4) {
				version_vaddr = sym.st_value;
			}
		}
	}
	if (version_vaddr && read_vaddr(elf, version_vaddr, &pe->version_hex, 4))
		pe->has_version = true;
	if (pe->has_runtime && read_vaddr(elf, pe->runtime, pe->debug, sizeof(pe->debug)))
		pe->has_debug = true;
	elf_end(elf);
	return 0;
}

static int elf_cached(struct python *py, int fd, struct py_elf *pe)
{
	struct op_file_id id;
	struct elf_ent *e;
	int err;

	if (!op_file_id_of(fd, &id))
		return -errno;
	e = &py->elfs[op_file_id_slot(&id, ELF_CACHE_SLOTS)];
	if (e->valid && op_file_id_eq(&e->id, &id)) {
		*pe = e->pe;
		return 0;
	}
	err = read_elf(fd, pe);
	if (err)
		return err;
	*e = (struct elf_ent){ id, true, *pe };
	return 0;
}

/* ---------------------------------------------------------------- processes */

static struct py_pid *pid_find(struct python *py, int pid)
{
	for (size_t i = 0; i < py->n_pids; i++)
		if (py->pids[i].pid == pid)
			return &py->pids[i];
	return NULL;
}

static int pid_set(struct python *py, int pid, int minor)
{
	struct py_pid *p = pid_find(py, pid);

	if (p) {
		p->minor = minor;
		return 0;
	}
	if (py->n_pids == py->cap_pids) {
		size_t cap = py->cap_pids ? 2 * py->cap_pids : 64;
		struct py_pid *n = realloc(py->pids, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		py->pids = n;
		py->cap_pids = cap;
	}
	py->pids[py->n_pids++] = (struct py_pid){ pid, minor };
	return 0;
}

/* Whether @path may be a file with the interpreter: libpython*, or the executable. */
static bool lib_name_ok(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strncmp(base, "libpython", 9);
}

/* 3.13: the layout _PyRuntime.debug_offsets gives must be the table's. */
static int check_debug_313(int pid, const struct py_elf *pe, const struct py_layout *l,
			   const char *path)
{
	uint64_t v;

	if (!pe->has_debug || memcmp(pe->debug, "xdebugpy", 8)) {
		op_debug("python: pid %d: %s has no debug offsets in _PyRuntime", pid, path);
		return -ENOTSUP;
	}
	memcpy(&v, pe->debug + 8, 8);
	if (pe->has_version && v != pe->version_hex)
		return -ENOTSUP;
	memcpy(&v, pe->debug + 16, 8);
	if (v) {
		op_debug("python: pid %d: %s is a free-threaded build: not supported", pid, path);
		return -ENOTSUP;
	}
	for (size_t i = 0; i < sizeof(debug_313) / sizeof(debug_313[0]); i++) {
		uint16_t want;

		memcpy(&v, pe->debug + debug_313[i].at, 8);
		memcpy(&want, (const uint8_t *)l + debug_313[i].field, 2);
		if (v != want) {
			op_debug("python: pid %d: %s: debug offset %s is %#llx, the table says %#x",
				 pid, path, debug_313[i].name, (unsigned long long)v, want);
			return -ENOTSUP;
		}
	}
	return 0;
}

static bool count_unknown(struct python *py, int pid)
{
	size_t n = sizeof(py->unknown) / sizeof(py->unknown[0]);

	for (size_t i = 0; i < n; i++)
		if (py->unknown[i] == pid)
			return false;
	py->unknown[py->unknown_next++ % n] = pid;
	return true;
}

static int attach(void *ctx, struct op_runtime_proc *rp)
{
	struct python *py = ctx;
	bool first_file = true;

	for (size_t i = 0; i < rp->n_maps; i++) {
		const struct op_runtime_mapping *m = &rp->maps[i];
		const struct py_layout *l;
		struct op_py_proc pp;
		struct py_elf pe = { 0 };
		uint64_t bias, eval;
		__u32 key = (__u32)rp->pid;
		char path[96];
		int fd, ver;
		bool exe;

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
		if (elf_cached(py, fd, &pe)) {
			close(fd);
			continue;
		}
		close(fd);
		ver = pe.has_version ? op_py_version_hex(pe.version_hex) : -1;
		if (ver < 0 && (pe.has_runtime || lib_name_ok(m->path)))
			ver = op_py_version_name(m->path);
		if (!pe.has_runtime && !pe.has_eval && !(lib_name_ok(m->path) && ver > 0))
			continue; /* not an interpreter */
		l = ver >= 300 ? layout_of(ver - 300) : NULL;
		if (!l || !pe.has_runtime || !pe.has_eval || !pe.has_text ||
		    (l->minor == 13 && check_debug_313(rp->pid, &pe, l, m->path))) {
			if (count_unknown(py, rp->pid))
				py->st.unknown_version++;
			op_debug(
				"python: pid %d: %s is CPython %d.%d, a version whose layout we do "
				"not know: its frames stay native",
				rp->pid, m->path, ver / 100, ver % 100);
			return -ENOTSUP;
		}
		bias = m->start - (m->offset + (uint64_t)pe.text_delta);
		eval = bias + pe.eval;
		if (eval < m->start || eval + pe.eval_size > m->end)
			continue; /* the loop is in another mapping of this file */
		pp = (struct op_py_proc){
			.runtime = bias + pe.runtime,
			.minor = (__u8)l->minor,
			.frame_objs = l->minor <= 10,
			.lasti_units = l->minor == 10,
			.interp_head = l->interp_head,
			.interp_ts = l->interp_ts,
			.ts_next = l->ts_next,
			.ts_thread_id = l->ts_thread_id,
			.ts_frame = l->ts_frame,
			.cf_current = l->cf_current,
			.f_back = l->f_back,
			.f_code = l->f_code,
			.f_instr = l->f_instr,
			.f_entry = l->f_entry,
			.f_owner = l->f_owner,
			.co_firstlineno = l->co_firstlineno,
			.co_code = l->co_code == NONE ? 0 : l->co_code,
		};
		if (bpf_map_update_elem(py->procs_fd, &key, &pp, BPF_ANY))
			return -errno;
		if (pid_set(py, rp->pid, l->minor))
			return -ENOMEM;
		rp->claims[0] = (struct op_runtime_claim){ eval, eval + pe.eval_size };
		rp->n_claims = 1;
		py->st.processes++;
		op_debug("python: pid %d: CPython 3.%d in %s, eval loop %#llx-%#llx", rp->pid,
			 l->minor, m->path, (unsigned long long)eval,
			 (unsigned long long)(eval + pe.eval_size));
		return 1;
	}
	return 0;
}

static void code_drop_pid(struct python *py, int pid);

static void detach(void *ctx, int pid)
{
	struct python *py = ctx;
	__u32 key = (__u32)pid;

	for (size_t i = 0; i < py->n_pids; i++) {
		if (py->pids[i].pid != pid)
			continue;
		py->pids[i] = py->pids[--py->n_pids];
		if (py->st.processes)
			py->st.processes--;
		bpf_map_delete_elem(py->procs_fd, &key);
		code_drop_pid(py, pid);
		return;
	}
}

/* ---------------------------------------------------------------- code objects */

static void code_free(struct code_ent *c)
{
	free(c->qualname);
	free(c->file);
	free(c->lines);
	free(c);
}

static void code_drop_all(struct python *py)
{
	for (size_t i = 0; i < CODE_SLOTS; i++) {
		while (py->codes[i]) {
			struct code_ent *c = py->codes[i];

			py->codes[i] = c->next;
			code_free(c);
		}
	}
	py->code_bytes = 0;
}

static void code_drop_pid(struct python *py, int pid)
{
	for (size_t i = 0; i < CODE_SLOTS; i++) {
		struct code_ent **pc = &py->codes[i];

		while (*pc) {
			struct code_ent *c = *pc;

			if (c->pid != pid) {
				pc = &c->next;
				continue;
			}
			*pc = c->next;
			py->code_bytes -= c->bytes;
			code_free(c);
		}
	}
}

static size_t code_slot(int pid, uint64_t addr)
{
	uint64_t h = (addr ^ ((uint64_t)pid << 40)) * 0x9e3779b97f4a7c15ull;

	return (size_t)(h >> 32) % CODE_SLOTS;
}

static int mem_read(int fd, uint64_t addr, void *buf, size_t len)
{
	ssize_t n = pread(fd, buf, len, (off_t)addr);

	return n == (ssize_t)len ? 0 : -EIO;
}

/* A str object's text as UTF-8 (malloc'd), or NULL. */
static char *read_str(int fd, const struct py_layout *l, uint64_t addr)
{
	uint8_t hdr[0x30];
	uint64_t len;
	uint32_t state;
	int kind;
	bool compact, ascii;
	uint8_t *chars;
	char *out;

	if (!addr || mem_read(fd, addr, hdr, sizeof(hdr)))
		return NULL;
	memcpy(&len, hdr + 0x10, 8);
	memcpy(&state, hdr + 0x20, 4);
	kind = (state >> 2) & 7;
	compact = (state >> 5) & 1;
	ascii = (state >> 6) & 1;
	if (!compact || (ascii && kind != 1) || len > (1u << 20))
		return NULL;
	if (len > PY_MAX_STR)
		len = PY_MAX_STR;
	chars = malloc(len * (size_t)kind + 1);
	out = malloc(len * 4 + 1);
	if (!chars || !out ||
	    mem_read(fd, addr + (ascii ? l->ascii_size : l->compact_size), chars, len * kind) ||
	    op_py_utf8(chars, len, kind, out, len * 4 + 1) < 0) {
		free(chars);
		free(out);
		return NULL;
	}
	free(chars);
	return out;
}

/* A bytes object's contents (malloc'd) and size, or NULL. */
static uint8_t *read_bytes(int fd, uint64_t addr, size_t *n)
{
	uint64_t size;
	uint8_t *b;

	*n = 0;
	if (!addr || mem_read(fd, addr + 0x10, &size, 8) || size > PY_MAX_LINETABLE)
		return NULL;
	b = malloc(size ? size : 1);
	if (!b || (size && mem_read(fd, addr + 0x20, b, size))) {
		free(b);
		return NULL;
	}
	*n = size;
	return b;
}

static struct code_ent *code_read(struct python *py, int pid, const struct py_layout *l,
				  uint64_t addr, uint32_t first)
{
	struct code_ent *c;
	uint8_t co[0xd0];
	uint64_t name, qual, file, lines;
	int32_t fl;
	char path[32];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (mem_read(fd, addr, co, sizeof(co))) {
		close(fd);
		return NULL;
	}
	memcpy(&fl, co + l->co_firstlineno, 4);
	if ((uint32_t)fl != first) {
		close(fd);
		return NULL; /* not the code object the frame ran */
	}
	memcpy(&name, co + l->co_name, 8);
	memcpy(&file, co + l->co_filename, 8);
	memcpy(&lines, co + l->co_lines, 8);
	qual = 0;
	if (l->co_qualname != NONE)
		memcpy(&qual, co + l->co_qualname, 8);
	c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return NULL;
	}
	c->pid = pid;
	c->addr = addr;
	c->first = first;
	c->qualname = read_str(fd, l, qual ? qual : name);
	c->file = read_str(fd, l, file);
	c->lines = read_bytes(fd, lines, &c->n_lines);
	close(fd);
	if (!c->qualname) {
		code_free(c);
		return NULL;
	}
	c->bytes = sizeof(*c) + strlen(c->qualname) + 1 + (c->file ? strlen(c->file) + 1 : 0) +
		   c->n_lines;
	return c;
}

static int symbolize(void *ctx, int pid, uint64_t payload, uint64_t data,
		     struct op_runtime_frame *out)
{
	struct python *py = ctx;
	struct py_pid *pp = pid_find(py, pid);
	const struct py_layout *l = pp ? layout_of(pp->minor) : NULL;
	uint32_t first = (uint32_t)(data >> 32);
	int32_t lasti = (int32_t)(uint32_t)data;
	size_t slot = code_slot(pid, payload);
	struct code_ent *c;

	if (!l)
		return -ENOENT;
	for (c = py->codes[slot]; c; c = c->next)
		if (c->pid == pid && c->addr == payload && c->first == first)
			break;
	if (!c) {
		c = code_read(py, pid, l, payload, first);
		if (!c) {
			py->st.stale_code++;
			return -ESTALE;
		}
		if (py->code_bytes + c->bytes > CODE_BUDGET)
			code_drop_all(py);
		c->next = py->codes[slot];
		py->codes[slot] = c;
		py->code_bytes += c->bytes;
	}
	out->sym.n = 1;
	out->sym.lines[0] = (struct op_sym_line){
		.name = c->qualname,
		.system_name = c->qualname,
		.file = c->file,
		.line = op_py_line(pp->minor, c->lines, c->n_lines, (int32_t)first, lasti),
		.start_line = (int32_t)first,
	};
	out->address = (uint64_t)(uint32_t)lasti;
	return 0;
}

const char *op_py_marker_name(uint64_t payload, uint64_t data)
{
	if (payload != OP_PY_MARKER_PAYLOAD)
		return NULL;
	switch (data) {
	case OP_PY_CHAIN_ENDED:
		return "[python: frame chain changed during the walk]";
	case OP_PY_READ_FAILED:
		return "[python: frame chain unreadable]";
	default:
		return "[python: frame chain ended]";
	}
}

static void python_free(void *ctx)
{
	struct python *py = ctx;

	code_drop_all(py);
	free(py->pids);
	free(py);
}

struct op_runtime *op_python_runtime_new(const struct op_runtime_env *env)
{
	struct python *py = calloc(1, sizeof(*py));

	if (!py)
		return NULL;
	py->procs_fd = bpf_map__fd(env->skel->maps.python_procs);
	py->counters_fd = bpf_map__fd(env->skel->maps.python_counters);
	py->rt = (struct op_runtime){
		.name = "python",
		.kind = OP_RUNTIME_PYTHON,
		.ctx = py,
		.attach = attach,
		.detach = detach,
		.symbolize = symbolize,
		.free = python_free,
		.marker = op_py_marker_name,
	};
	return &py->rt;
}

void op_python_stats(const struct op_runtime *rt, struct op_python_stats *st)
{
	const struct python *py = rt ? rt->ctx : NULL;
	int ncpu = libbpf_num_possible_cpus();
	uint64_t sums[OP_PY_REASON_MAX] = { 0 };

	memset(st, 0, sizeof(*st));
	if (!py)
		return;
	*st = py->st;
	if (ncpu > 0 && ncpu < 4096) {
		uint64_t *v = calloc((size_t)ncpu, sizeof(*v));

		for (__u32 k = 0; v && k < OP_PY_REASON_MAX; k++) {
			if (bpf_map_lookup_elem(py->counters_fd, &k, v))
				continue;
			for (int c = 0; c < ncpu; c++)
				sums[k] += v[c];
		}
		free(v);
	}
	st->frames = sums[OP_PY_FRAMES];
	st->no_proc = sums[OP_PY_NO_PROC];
	st->no_tstate = sums[OP_PY_NO_TSTATE];
	st->read_failed = sums[OP_PY_READ_FAILED];
	st->chain_ended = sums[OP_PY_CHAIN_ENDED];
}

// SPDX-License-Identifier: Apache-2.0
/*
 * DWARF function, file and line for an address, with the chain of inlined functions, read
 * with libdwarf (line programs: symbol/dwarf_line.c).
 *
 * Opening a file reads only the compile-unit headers and their address ranges. A CU is parsed
 * the first time an address falls in it: its line table (sorted rows) and its function tree
 * (subprograms, inlined subroutines, lexical blocks) flattened in DFS preorder, so the deepest
 * range holding an address is found by a scan of one subprogram's subtree. Parsed CUs are
 * dropped when they exceed a per-file budget and re-parsed on demand; the strings they give
 * out live in the file's interned pool, so results stay valid while the file is referenced.
 */
#include <errno.h>
#include <limits.h>
#include <gelf.h>
#include <libelf.h>
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <libdwarf/dwarf.h>
#include <libdeflate.h>
#include <libdwarf/libdwarf.h>

#include "symbol/demangle.h"
#include "symbol/dwarf.h"
#include "symbol/dwarf_line.h"
#include "symbol/dwarf_units.h"
#include "util/cursor.h"
#include "util/log.h"
#include "util/spill.h"
#include "binary/file.h"

#define NONE		 UINT32_MAX
#define LANG_C17	 0x2c /* DW_LANG_C17: DWARF 6 draft, emitted by GCC 12 for -std=c17 */
#define MAX_ORIGIN_DEPTH 8
#define MAX_TREE_DEPTH	 64
#define MAX_DIES_PER_CU	 (8u << 20)
/* Parsed CU data per file; over it, the least recently used half is dropped. */
#define DEFAULT_BUDGET (32u << 20)
/*
 * Bound on the section bytes behind all open libdwarf instances together (the file being
 * read may exceed it alone). Sections are mapped from the file, not copied, except
 * compressed ones; libdwarf's own per-instance state (CU contexts, abbreviations, DIE
 * offset trees) is roughly proportional and goes away with the instance: measured resident,
 * 7.4 MiB for libc's 9.9 MB of sections, 4.5 MiB for python3.11's 22 MB. 40 MiB holds the
 * two an idle host's Python process needs, which at 16 MiB closed each other on every
 * switch (a re-open: 50-250 ms of CPU).
 */
#define DEFAULT_HANDLE_BUDGET (40u << 20)
/*
 * Bound on the inflated copies of compressed sections (SHF_COMPRESSED, zlib) kept across
 * handle closes, all files together. libc's debug file alone inflates to ~15 MiB and took
 * ~45 % of the agent's CPU when every re-open of its handle inflated it again. Copies kept
 * in memory count against the first bound; copies written to spill files (util/spill.h:
 * page cache, not resident between lookups) against the second, the disk they take.
 */
#define DEFAULT_INFLATED_BUDGET (24u << 20)
#define DEFAULT_SPILLED_BUDGET	(256u << 20)
/* Inflated copies of a file unused this long are freed (op_dwarf_idle()). */
#define INFLATED_IDLE_NS (60ull * 1000000000ull)
/*
 * A handle unused this long is closed (checked at most once a second, by op_dwarf_idle()).
 * A re-open of a file read whole reads every CU header before the one asked for: with
 * libdwarf's allocation tracking on and whole CUs parsed it cost 50-250 ms (30 s here then),
 * now 1.5-8.5 ms with the first lookup (libc, python3.11), while an open handle keeps 3-4 MiB
 * resident. A file read one unit at a time (op_dwarf.views) re-opens that unit only.
 */
#define DEFAULT_HANDLE_IDLE_NS (5ull * 1000000000ull)
/*
 * A file whose handle was opened again after an idle close keeps it twice as long each
 * time, up to 2^HANDLE_IDLE_DOUBLINGS times: on a steady host the same few files (libc, the
 * agent's own libraries) get a new address now and then, and closing their handles every
 * 5 s only to read every CU header again was most of the idle symbolizer's CPU. The handle
 * budget still bounds what stays open.
 */
#define HANDLE_IDLE_DOUBLINGS 6
/*
 * A file read one unit at a time (op_dwarf.views) gets an instance over the whole file once
 * it has opened this many: each instance reads every table header of .debug_rnglists
 * (libc: 893, about 40 us), so symbolizing 3,000 libc functions in 1,500 units one unit
 * at a time took twice as long as with one instance; a few units cost less alone.
 */
#define VIEW_OPENS_MAX 32

/*
 * A function or inlined call with code. A CU's parse reads its top-level functions only; a
 * function's inner tree (inlined calls, lexical blocks) is read the first time an address
 * falls in it (expand()): most of a CU's DIEs are inside functions no sample ever hits.
 */
struct dnode {
	const char *name;	 /* display name */
	const char *system_name; /* linkage name, else name */
	const char *call_file;	 /* inlined: the caller's file at the call */
	int64_t call_line;
	int64_t decl_line;
	Dwarf_Off die_off; /* the DIE, for expand() */
	uint32_t parent;
	uint32_t sub_first, subtree_end; /* the nodes under this one: [sub_first, subtree_end) */
	uint32_t range_first, range_count;
	uint16_t depth;
	bool lazy; /* a top-level function whose inner tree is not read yet */
	/* a top-level function, once expanded: the line rows of its code (rowset_for()) */
	struct crow *rows;
	uint32_t n_rows;
	uint64_t rows_base; /* address of row offset 0 */
};

struct drange {
	uint64_t lo, hi;
};

struct dtop {
	uint64_t lo, hi;
	uint32_t node;
};

/* A line-table row while parsing. */
struct dline {
	uint64_t addr;
	const char *file;
	uint32_t line;
	uint32_t order; /* sort tie-break: end-of-sequence rows first, then input order */
};

/* A row as kept (12 bytes): address relative to the CU's lowest row. */
struct crow {
	uint32_t addr;
	uint32_t line;
	uint32_t file; /* index in the CU's files + 1, 0: none; ROW_END: end of a sequence */
};

#define ROW_END UINT32_MAX

struct dcu {
	Dwarf_Off die_off; /* in .debug_info (DIE offsets kept are the section's, views or not) */
	/* a file read one unit at a time (op_dwarf.views): where the unit is in .debug_info */
	uint64_t unit_off, unit_len;
	uint64_t last_use;  /* op_dwarf.tick at the last lookup in it */
	size_t visited;	    /* DIEs walked in the last parse */
	Dwarf_Off last_off; /* offset of the last DIE walked */
	uint16_t version;
	bool parsed;
	bool failed;
	bool lang_c;	  /* C: no functions inside types or inside inline functions' abstract
			     instances, so those are not walked */
	uint64_t cu_base; /* base address for DWARF 2-4 range lists */
	struct dnode *nodes;
	size_t n_nodes, cap_nodes;
	struct drange *ranges;
	size_t n_ranges, cap_ranges;
	struct dtop *tops;
	size_t n_tops;
	/* the line program, read for one function at a time (rowset_for()) */
	Dwarf_Off stmt_off;
	bool has_lines;
	bool file0_bogus;
	/* past ROWS_PER_FUNCTION_MAX functions read, the CU's whole table instead (below) */
	uint32_t expanded;
	struct crow *all_rows;
	uint32_t n_all_rows;
	uint64_t all_rows_base;
	const char **files;
	size_t n_files;
	size_t bytes;
};

/* The sections decoded here, not by libdwarf (struct op_dwarf.own). */
enum { OWN_LINE, OWN_LINE_STR, OWN_STR, N_OWN_SECS };
static const char *const own_names[N_OWN_SECS] = { ".debug_line", ".debug_line_str", ".debug_str" };

struct cuidx {
	uint64_t lo, hi;
	uint32_t cu;
};

/* One compressed section inflated by us (not libelf), kept until the inflated budget says. */
struct zsec {
	size_t index;
	uint8_t *buf;
	size_t size;
	bool spilled; /* buf maps a file of its own (util/spill.h), else malloc'd */
};

struct op_dwarf {
	/*
	 * The libdwarf instance over the file's sections ("handle"): opened on demand to index
	 * or parse a CU, closed by the least-recently-used policy when the open handles of all
	 * files exceed the handle budget. Everything parsed out of it stays.
	 */
	Dwarf_Debug dbg;
	Elf *elf;
	Dwarf_Obj_Access_Interface oai;
	size_t shnum, shstrndx;
	bool is64, msb;
	size_t handle_bytes; /* section bytes loaded through the open handle */
	/*
	 * Read one compile unit at a time (dwarf_units.h): the handle's instance sees only the
	 * unit at [view_off, view_off + view_len) as its .debug_info, so libdwarf builds one
	 * unit context instead of one for every unit before it. The index comes from
	 * .debug_aranges then, and an instance is opened again to read another unit.
	 */
	bool views;
	unsigned int view_opens;
	uint64_t view_off, view_len;
	size_t info_index; /* .debug_info's section index, 0: not seen */
	/*
	 * Sections we decode ourselves, as the open handle loaded them: .debug_line (line
	 * programs and their file tables), .debug_line_str and .debug_str (file paths).
	 */
	struct own_sec {
		size_t index; /* 0: the file has none */
		const uint8_t *data;
		size_t size;
	} own[N_OWN_SECS];
	uint64_t handle_used_ns;   /* last use of the open handle */
	unsigned int handle_opens; /* times the handle was opened (see HANDLE_IDLE_DOUBLINGS) */
	struct op_dwarf *hprev, *hnext; /* open handles, most recently used first */
	bool open_failed;
	/*
	 * The file as the open handle reads it: our own read-only mapping (elf_memory), so that
	 * op_dwarf_idle() can drop its pages from our resident memory between lookups; NULL when
	 * libelf mapped or read it itself.
	 */
	void *map;
	size_t map_len;
	bool map_written; /* libelf wrote into it (elf_compress): its pages must stay */
	/*
	 * Inflated sections: they outlive the handle (a re-open finds them here), bounded by
	 * the inflated budget over all files, least recently used file first. Under
	 * handles_lock for the list and the counts; the buffers are the file's (its lock).
	 */
	struct zsec *zsecs;
	size_t n_zsecs;
	size_t zbytes, zmem_bytes; /* all its copies; those in memory */
	uint64_t zused_ns;
	struct op_dwarf *zprev, *znext;
	int fd;
	struct op_file *f; /* strings are interned here */
	struct dcu *cus;
	size_t n_cus;
	struct cuidx *idx;
	size_t n_idx;
	size_t parsed_bytes;
	size_t budget;
	uint64_t tick;
	size_t base_bytes;
};

/* ---------------------------------------------------------------- small helpers */

static void drop_err(Dwarf_Debug dbg, Dwarf_Error *err)
{
	if (*err) {
		dwarf_dealloc(dbg, *err, DW_DLA_ERROR);
		*err = NULL;
	}
}

static int grow(void **arr, size_t *cap, size_t n, size_t elem)
{
	void *na;
	size_t nc;

	if (n < *cap)
		return 0;
	nc = *cap ? *cap * 2 : 16;
	na = realloc(*arr, nc * elem);
	if (!na)
		return -ENOMEM;
	*arr = na;
	*cap = nc;
	return 0;
}

static bool attr_udata(Dwarf_Debug dbg, Dwarf_Die die, Dwarf_Half at, Dwarf_Unsigned *v)
{
	Dwarf_Error err = NULL;
	Dwarf_Attribute a;
	Dwarf_Signed s;
	bool ok = false;

	if (dwarf_attr(die, at, &a, &err) != DW_DLV_OK) {
		drop_err(dbg, &err);
		return false;
	}
	if (dwarf_formudata(a, v, &err) == DW_DLV_OK) {
		ok = true;
	} else {
		drop_err(dbg, &err);
		if (dwarf_formsdata(a, &s, &err) == DW_DLV_OK && s >= 0) {
			*v = (Dwarf_Unsigned)s;
			ok = true;
		}
		drop_err(dbg, &err);
	}
	dwarf_dealloc_attribute(a);
	return ok;
}

static bool attr_ref(Dwarf_Debug dbg, Dwarf_Die die, Dwarf_Half at, Dwarf_Off *off)
{
	Dwarf_Error err = NULL;
	Dwarf_Attribute a;
	bool ok;

	if (dwarf_attr(die, at, &a, &err) != DW_DLV_OK) {
		drop_err(dbg, &err);
		return false;
	}
	ok = dwarf_global_formref(a, off, &err) == DW_DLV_OK;
	drop_err(dbg, &err);
	dwarf_dealloc_attribute(a);
	return ok;
}

/* String attribute, copied into the file's pool. */
static const char *attr_str(struct op_dwarf *d, Dwarf_Die die, Dwarf_Half at)
{
	Dwarf_Error err = NULL;
	Dwarf_Attribute a;
	const char *out = NULL;
	char *s;

	if (dwarf_attr(die, at, &a, &err) != DW_DLV_OK) {
		drop_err(d->dbg, &err);
		return NULL;
	}
	if (dwarf_formstring(a, &s, &err) == DW_DLV_OK && s && *s)
		out = op_file_intern(d->f, s);
	drop_err(d->dbg, &err);
	dwarf_dealloc_attribute(a);
	return out;
}

/* ---------------------------------------------------------------- address ranges */

typedef int (*range_fn)(void *ctx, uint64_t lo, uint64_t hi);

/*
 * Call @fn for every [lo, hi) of @die: DW_AT_low_pc/high_pc, or DW_AT_ranges (DWARF 5
 * rnglists, or DWARF 2-4 .debug_ranges relative to @cu_base). Returns the number of ranges.
 */
static int die_ranges(Dwarf_Debug dbg, Dwarf_Die die, uint16_t version, uint64_t cu_base,
		      range_fn fn, void *ctx)
{
	Dwarf_Error err = NULL;
	Dwarf_Addr lo, hi;
	Dwarf_Half form;
	enum Dwarf_Form_Class cls;
	Dwarf_Attribute a;
	int n = 0;

	if (dwarf_lowpc(die, &lo, &err) == DW_DLV_OK) {
		if (dwarf_highpc_b(die, &hi, &form, &cls, &err) == DW_DLV_OK) {
			if (cls == DW_FORM_CLASS_CONSTANT)
				hi += lo;
			if (hi > lo && lo != 0 && fn(ctx, lo, hi) == 0)
				n++;
			return n;
		}
		drop_err(dbg, &err);
	}
	drop_err(dbg, &err);
	if (dwarf_attr(die, DW_AT_ranges, &a, &err) != DW_DLV_OK) {
		drop_err(dbg, &err);
		return 0;
	}
	if (dwarf_whatform(a, &form, &err) != DW_DLV_OK) {
		drop_err(dbg, &err);
		dwarf_dealloc_attribute(a);
		return 0;
	}
	if (version >= 5) {
		Dwarf_Rnglists_Head head = NULL;
		Dwarf_Unsigned val = 0, count = 0, goff, i;
		int res;

		if (form == DW_FORM_rnglistx)
			res = dwarf_formudata(a, &val, &err);
		else
			res = dwarf_global_formref(a, &val, &err);
		if (res == DW_DLV_OK && dwarf_rnglists_get_rle_head(a, form, val, &head, &count,
								    &goff, &err) == DW_DLV_OK) {
			for (i = 0; i < count; i++) {
				Dwarf_Unsigned raw1, raw2, c1, c2;
				Dwarf_Bool unavail = 0;
				unsigned int len, code;

				if (dwarf_get_rnglists_entry_fields_a(head, i, &len, &code, &raw1,
								      &raw2, &unavail, &c1, &c2,
								      &err) != DW_DLV_OK) {
					drop_err(dbg, &err);
					break;
				}
				if (unavail || code == DW_RLE_end_of_list ||
				    code == DW_RLE_base_address || code == DW_RLE_base_addressx)
					continue;
				if (c2 > c1 && c1 != 0 && fn(ctx, c1, c2) == 0)
					n++;
			}
			dwarf_dealloc_rnglists_head(head);
		}
		drop_err(dbg, &err);
	} else {
		Dwarf_Unsigned off = 0;
		Dwarf_Off goff = 0, real;
		Dwarf_Ranges *r = NULL;
		Dwarf_Signed cnt = 0, i;
		Dwarf_Unsigned bytes;
		uint64_t base = cu_base;
		int res = dwarf_global_formref(a, &goff, &err);

		if (res == DW_DLV_OK) {
			off = goff;
		} else {
			drop_err(dbg, &err);
			res = dwarf_formudata(a, &off, &err);
		}
		if (res == DW_DLV_OK &&
		    dwarf_get_ranges_b(dbg, off, die, &real, &r, &cnt, &bytes, &err) == DW_DLV_OK) {
			for (i = 0; i < cnt; i++) {
				if (r[i].dwr_type == DW_RANGES_END)
					break;
				if (r[i].dwr_type == DW_RANGES_ADDRESS_SELECTION) {
					base = r[i].dwr_addr2;
					continue;
				}
				if (r[i].dwr_addr2 > r[i].dwr_addr1 && base + r[i].dwr_addr1 != 0 &&
				    fn(ctx, base + r[i].dwr_addr1, base + r[i].dwr_addr2) == 0)
					n++;
			}
			dwarf_ranges_dealloc(dbg, r, cnt);
		}
		drop_err(dbg, &err);
	}
	dwarf_dealloc_attribute(a);
	return n;
}

/* ---------------------------------------------------------------- sanity */

/*
 * libdwarf 20210528 trusts some DWARF 5 section headers too much (a corrupt .debug_rnglists
 * header makes dwarf_load_rnglists() write freed memory). Walk the unit headers of those
 * sections first and refuse the file when one does not fit.
 */
static bool units_fit(const uint8_t *p, size_t size, bool has_offsets)
{
	struct op_cursor c = { p, p + size, false, false };

	while (c.p < c.end) {
		size_t osz;
		uint64_t len = op_dwarf_unit_length(&c, &osz);
		const uint8_t *unit = c.p;

		if (c.bad || len < 4 || len > (uint64_t)(c.end - c.p) || op_rd_fixed(&c, 2) != 5)
			return false;
		if (has_offsets) {
			/* address_size, segment_selector_size, offset_entry_count */
			uint64_t asz = op_rd_fixed(&c, 1), seg = op_rd_fixed(&c, 1);
			uint64_t count = op_rd_fixed(&c, 4);

			if (c.bad || len < 8 || (asz != 4 && asz != 8) || seg ||
			    count * osz > len - 8)
				return false;
		}
		c.p = unit + len;
	}
	return true;
}

/* 1: a section of units with offset tables, 0: of plain units, -1: not one units_fit() checks */
static int offsets_kind(const char *name)
{
	if (!name)
		return -1;
	if (!strcmp(name, ".debug_rnglists") || !strcmp(name, ".debug_loclists"))
		return 1;
	if (!strcmp(name, ".debug_str_offsets") || !strcmp(name, ".debug_addr"))
		return 0;
	return -1;
}

bool op_dwarf_compressed(Elf *elf)
{
	GElf_Shdr sh;

	return elf && op_elf_section(elf, ".debug_info", &sh) && (sh.sh_flags & SHF_COMPRESSED);
}

bool op_dwarf_sane(int fd, size_t *debug_bytes)
{
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	bool ok = true;

	if (!elf)
		return false;
	if (elf_kind(elf) != ELF_K_ELF || elf_getshdrstrndx(elf, &shstrndx) != 0) {
		elf_end(elf);
		return false;
	}
	while (ok && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;
		int kind;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name)
			continue;
		if (debug_bytes && !strncmp(name, ".debug_", 7)) {
			/* libdwarf holds these sections uncompressed while the file is open */
			GElf_Chdr ch;

			if ((sh.sh_flags & SHF_COMPRESSED) && gelf_getchdr(scn, &ch))
				*debug_bytes += ch.ch_size;
			else
				*debug_bytes += sh.sh_size;
		}
		kind = offsets_kind(name);
		if (kind < 0)
			continue;
		if ((sh.sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0) {
			ok = false;
			break;
		}
		data = elf_getdata(scn, NULL);
		if (!data || (data->d_size && !data->d_buf))
			ok = false;
		else if (data->d_size)
			ok = units_fit(data->d_buf, data->d_size, kind == 1);
	}
	elf_end(elf);
	return ok;
}

/* ---------------------------------------------------------------- handles */

/*
 * libdwarf reads the file through our object interface: sections come straight out of
 * libelf's read-only mapping of the file (page cache pages, shared and reclaimable) instead
 * of being read into malloc()ed copies, and libdwarf does not load the ELF symbol table for
 * itself. Compressed sections (SHF_COMPRESSED) are inflated here, so libdwarf sees plain
 * DWARF; old-style .zdebug_* sections are left to libdwarf, which inflates them itself.
 */

static pthread_mutex_t handles_lock = PTHREAD_MUTEX_INITIALIZER;
static struct op_dwarf *handles_head, *handles_tail;
static size_t handles_bytes;
static size_t handles_budget = DEFAULT_HANDLE_BUDGET;
static uint64_t handle_idle_ns = DEFAULT_HANDLE_IDLE_NS;
static size_t handles_open;
static uint64_t handles_checked_ns;
static uint64_t handles_trimmed_ns;
/* inflated sections kept (struct zsec): files holding some, most recently used first */
static struct op_dwarf *inflated_head, *inflated_tail;
static size_t inflated_bytes, inflated_mem_bytes; /* all copies; those in memory */
static size_t inflated_budget = DEFAULT_INFLATED_BUDGET;
static size_t spilled_budget = DEFAULT_SPILLED_BUDGET;
static uint64_t inflations, inflated_reused;

/* The kept copies exceed one of their bounds (handles_lock held). */
static bool inflated_over(void)
{
	return inflated_mem_bytes > inflated_budget ||
	       inflated_bytes - inflated_mem_bytes > spilled_budget;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * Give the memory of closed instances back to the system: libdwarf frees many small blocks,
 * which glibc otherwise keeps in the arena of the thread that symbolized.
 */
static void heap_trim(void)
{
	malloc_trim(0);
}

/* ---------------------------------------------------------------- inflated sections */

static void zsec_free(struct zsec *z)
{
	if (z->spilled)
		op_spill_free(z->buf, z->size);
	else
		free(z->buf);
	z->buf = NULL;
}

/*
 * The section inflated into @z's own mapping, to a spill file (util/spill.h): its pages leave
 * resident memory now and are read back as they are used. Where the file cannot be written (a
 * full disk), into malloc'd memory. -ENOMEM: neither (@z still maps the section: zsec_free).
 */
static int spill_inflated(struct zsec *z)
{
	struct iovec v = { z->buf, z->size };
	size_t len;
	uint8_t *m = op_spill_copy(&v, 1, &len);
	bool spilled = m != NULL;

	if (!m && !(m = malloc(z->size)))
		return -ENOMEM;
	if (!spilled)
		memcpy(m, z->buf, z->size);
	munmap(z->buf, z->size);
	z->buf = m;
	z->spilled = spilled;
	return 0;
}

static bool inflated_listed(const struct op_dwarf *d)
{
	return d->zprev || d->znext || inflated_head == d;
}

/* handles_lock held */
static void inflated_unlink(struct op_dwarf *d)
{
	if (!inflated_listed(d))
		return;
	if (d->zprev)
		d->zprev->znext = d->znext;
	else
		inflated_head = d->znext;
	if (d->znext)
		d->znext->zprev = d->zprev;
	else
		inflated_tail = d->zprev;
	d->zprev = d->znext = NULL;
}

/* handles_lock held */
static void inflated_push(struct op_dwarf *d)
{
	d->zprev = NULL;
	d->znext = inflated_head;
	if (inflated_head)
		inflated_head->zprev = d;
	inflated_head = d;
	if (!inflated_tail)
		inflated_tail = d;
}

/* Free @d's inflated sections (handles_lock held; its handle closed or closing). */
static void inflated_drop(struct op_dwarf *d)
{
	inflated_unlink(d);
	for (size_t i = 0; i < d->n_zsecs; i++)
		zsec_free(&d->zsecs[i]);
	free(d->zsecs);
	d->zsecs = NULL;
	d->n_zsecs = 0;
	inflated_bytes -= d->zbytes;
	inflated_mem_bytes -= d->zmem_bytes;
	d->zmem_bytes = 0;
	d->zbytes = 0;
}

static void handle_finish(struct op_dwarf *d);
static void handle_unlink(struct op_dwarf *d);

/*
 * Free the inflated sections of the least recently used other files while over the budget.
 * Their handles point into them and are closed first. Files busy in another thread (their
 * lock held) are skipped, as handles_trim() does. handles_lock held.
 */
static size_t inflated_trim(struct op_dwarf *self)
{
	struct op_dwarf *v, *prev;
	size_t freed = 0;

	for (v = inflated_tail; v && inflated_over(); v = prev) {
		prev = v->zprev;
		if (v == self || !v->f || pthread_mutex_trylock(&v->f->lock))
			continue;
		handle_unlink(v);
		handle_finish(v);
		inflated_drop(v);
		pthread_mutex_unlock(&v->f->lock);
		freed++;
	}
	return freed;
}

/*
 * Section @index of @d inflated: the copy kept from an earlier handle, else inflated now
 * (zlib; the copy is kept). NULL: not zlib, damaged, or no memory (the caller lets libelf
 * inflate it into the handle's own memory).
 */
static struct zsec *inflated_get(struct op_dwarf *d, size_t index, Elf_Scn *scn)
{
	size_t hdr = d->is64 ? sizeof(Elf64_Chdr) : sizeof(Elf32_Chdr);
	struct zsec *z, *nz;
	struct libdeflate_decompressor *dc;
	Elf_Data *raw;
	GElf_Chdr ch;
	size_t len;
	bool trim;

	for (size_t i = 0; i < d->n_zsecs; i++) {
		if (d->zsecs[i].index == index) {
			pthread_mutex_lock(&handles_lock);
			inflated_reused++;
			pthread_mutex_unlock(&handles_lock);
			return &d->zsecs[i];
		}
	}
	/* larger than the whole budget: not kept, libelf inflates it into the handle as before */
	if (!gelf_getchdr(scn, &ch) || ch.ch_type != ELFCOMPRESS_ZLIB || !ch.ch_size ||
	    (ch.ch_size > __atomic_load_n(&inflated_budget, __ATOMIC_RELAXED) &&
	     ch.ch_size > __atomic_load_n(&spilled_budget, __ATOMIC_RELAXED)))
		return NULL;
	raw = elf_rawdata(scn, NULL);
	if (!raw || !raw->d_buf || raw->d_size <= hdr)
		return NULL;
	nz = realloc(d->zsecs, (d->n_zsecs + 1) * sizeof(*d->zsecs));
	if (!nz)
		return NULL;
	d->zsecs = nz;
	z = &d->zsecs[d->n_zsecs];
	/* with a spill directory: inflated into a mapping of its own, then copied to a spill file
	 * (spill_inflated) */
	*z = (struct zsec){ index, NULL, (size_t)ch.ch_size, op_spill_available() };
	if (z->spilled) {
		z->buf = mmap(NULL, z->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			      -1, 0);
		if (z->buf == MAP_FAILED)
			z->buf = NULL;
	} else {
		z->buf = malloc(z->size);
	}
	if (!z->buf)
		return NULL;
	/* libdeflate: whole buffers of known size, 2.4x zlib's speed (libc's .debug_info:
	 * 5.8 MB in 8 ms against 20) */
	dc = libdeflate_alloc_decompressor();
	if (!dc ||
	    libdeflate_zlib_decompress(dc, (const uint8_t *)raw->d_buf + hdr, raw->d_size - hdr,
				       z->buf, ch.ch_size, &len) != LIBDEFLATE_SUCCESS ||
	    len != ch.ch_size) {
		if (dc)
			libdeflate_free_decompressor(dc);
		zsec_free(z);
		return NULL;
	}
	libdeflate_free_decompressor(dc);
	if (z->spilled && spill_inflated(z)) {
		zsec_free(z);
		return NULL;
	}
	d->n_zsecs++;
	pthread_mutex_lock(&handles_lock);
	inflations++;
	d->zbytes += z->size;
	inflated_bytes += z->size;
	if (!z->spilled) {
		inflated_mem_bytes += z->size;
		d->zmem_bytes += z->size;
	}
	if (inflated_head != d) {
		inflated_unlink(d);
		inflated_push(d);
	}
	trim = inflated_over();
	pthread_mutex_unlock(&handles_lock);
	if (trim) {
		pthread_mutex_lock(&handles_lock);
		trim = inflated_trim(d) > 0;
		pthread_mutex_unlock(&handles_lock);
		if (trim)
			heap_trim();
	}
	return z;
}

void op_dwarf_set_inflated_budget(size_t bytes)
{
	pthread_mutex_lock(&handles_lock);
	inflated_budget = bytes;
	spilled_budget = bytes;
	pthread_mutex_unlock(&handles_lock);
}

void op_dwarf_inflated_stats(struct op_dwarf_inflated_stats *st)
{
	pthread_mutex_lock(&handles_lock);
	st->bytes = inflated_bytes;
	st->inflations = inflations;
	st->reused = inflated_reused;
	pthread_mutex_unlock(&handles_lock);
}

static int oa_section_info(void *obj, Dwarf_Half index, Dwarf_Obj_Access_Section *out, int *error)
{
	struct op_dwarf *d = obj;
	Elf_Scn *scn = elf_getscn(d->elf, index);
	GElf_Shdr sh;
	GElf_Chdr ch;
	const char *name;

	(void)error;
	if (!scn || !gelf_getshdr(scn, &sh))
		return DW_DLV_NO_ENTRY;
	name = d->shstrndx != SHN_UNDEF ? elf_strptr(d->elf, d->shstrndx, sh.sh_name) : NULL;
	memset(out, 0, sizeof(*out));
	out->addr = sh.sh_addr;
	out->type = sh.sh_type;
	out->size = sh.sh_type == SHT_NOBITS ? 0 : sh.sh_size;
	out->name = name ? name : "";
	for (int k = 0; name && k < N_OWN_SECS; k++)
		if (strcmp(name, own_names[k]) == 0)
			d->own[k].index = index;
	out->link = sh.sh_link;
	out->info = sh.sh_info;
	out->entrysize = sh.sh_entsize;
	if ((sh.sh_flags & SHF_COMPRESSED) && sh.sh_type != SHT_NOBITS) {
		if (!gelf_getchdr(scn, &ch) || ch.ch_size > (1ull << 32))
			out->size = 0; /* unreadable: an empty section */
		else
			out->size = ch.ch_size;
	}
	if (name && strcmp(name, ".debug_info") == 0) {
		d->info_index = index;
		if (d->view_len)
			out->size = d->view_len; /* checked against the section by units_of() */
	}
	/*
	 * Location lists are never read here, but libdwarf 20210528 reads every table header
	 * of .debug_loclists when it loads .debug_info (libc: 1.4 MB inflated, 1,455 headers)
	 */
	if (name && (strcmp(name, ".debug_loclists") == 0 || strcmp(name, ".debug_loc") == 0))
		out->name = "";
	return DW_DLV_OK;
}

static Dwarf_Endianness oa_byte_order(void *obj)
{
	return ((struct op_dwarf *)obj)->msb ? DW_OBJECT_MSB : DW_OBJECT_LSB;
}

static Dwarf_Small oa_length_size(void *obj)
{
	return ((struct op_dwarf *)obj)->is64 ? 8 : 4;
}

static Dwarf_Small oa_pointer_size(void *obj)
{
	return ((struct op_dwarf *)obj)->is64 ? 8 : 4;
}

static Dwarf_Unsigned oa_section_count(void *obj)
{
	return ((struct op_dwarf *)obj)->shnum;
}

static const char *section_name(struct op_dwarf *d, size_t index)
{
	Elf_Scn *scn = elf_getscn(d->elf, index);
	GElf_Shdr sh;

	if (!scn || !gelf_getshdr(scn, &sh) || d->shstrndx == SHN_UNDEF)
		return NULL;
	return elf_strptr(d->elf, d->shstrndx, sh.sh_name);
}

/*
 * Section @index of the open handle's file as plain bytes: a kept inflated copy, libelf's
 * inflation into the handle's memory (not zlib, or no memory for a copy), or the mapping.
 */
static int section_data(struct op_dwarf *d, size_t index, Dwarf_Small **data, size_t *size)
{
	Elf_Scn *scn = elf_getscn(d->elf, index);
	GElf_Shdr sh;
	Elf_Data *ed;

	if (!scn || !gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
		return DW_DLV_NO_ENTRY;
	if (sh.sh_flags & SHF_COMPRESSED) {
		struct zsec *z = inflated_get(d, index, scn);

		if (z) {
			*data = z->buf;
			*size = z->size;
			return DW_DLV_OK;
		}
		d->map_written = true;
		if (elf_compress(scn, 0, 0) < 0)
			return DW_DLV_NO_ENTRY;
		ed = elf_getdata(scn, NULL);
	} else {
		ed = elf_rawdata(scn, NULL);
	}
	if (!ed || (ed->d_size && !ed->d_buf))
		return DW_DLV_NO_ENTRY;
	*data = ed->d_buf;
	*size = ed->d_size;
	return DW_DLV_OK;
}

static int oa_load_section(void *obj, Dwarf_Half index, Dwarf_Small **data, int *error)
{
	struct op_dwarf *d = obj;
	size_t size = 0;
	int kind, k;

	(void)error;
	for (k = 0; k < N_OWN_SECS; k++) {
		if (index != d->own[k].index || !d->own[k].data)
			continue;
		/* loaded by us before libdwarf asked (or the reverse): counted once */
		*data = (Dwarf_Small *)d->own[k].data;
		return DW_DLV_OK;
	}
	if (section_data(d, index, data, &size) != DW_DLV_OK || !*data)
		return DW_DLV_NO_ENTRY;
	if (d->view_len && index == d->info_index) {
		if (d->view_off > size || d->view_len > size - d->view_off)
			return DW_DLV_NO_ENTRY;
		*data += d->view_off;
		size = d->view_len;
	}
	/*
	 * op_dwarf_sane()'s check, on the bytes libdwarf gets (inflated once, and only the
	 * sections it reads: never .debug_loclists): a section whose unit headers do not fit
	 * is not given to it.
	 */
	kind = offsets_kind(section_name(d, index));
	if (kind >= 0 && size && !units_fit(*data, size, kind == 1)) {
		op_debug("malformed DWARF 5 unit headers in %s of %s: not read",
			 section_name(d, index), d->f->path ? d->f->path : "?");
		return DW_DLV_NO_ENTRY;
	}
	for (k = 0; k < N_OWN_SECS; k++) {
		if (index == d->own[k].index) {
			d->own[k].data = *data;
			d->own[k].size = size;
		}
	}
	/*
	 * the sections a handle reads stand for its libdwarf state (roughly proportional), kept
	 * copies included: they bound the handles, the inflated budget bounds the copies
	 */
	pthread_mutex_lock(&handles_lock);
	d->handle_bytes += size;
	if (d->hprev || d->hnext || handles_head == d) /* listed */
		handles_bytes += size;
	pthread_mutex_unlock(&handles_lock);
	return DW_DLV_OK;
}

/* Section @k of own[] through the open handle (libdwarf may never ask for it). */
static const struct own_sec *own_section(struct op_dwarf *d, int k)
{
	Dwarf_Small *data;
	int e;

	if (!d->own[k].data && d->dbg && d->own[k].index)
		oa_load_section(d, (Dwarf_Half)d->own[k].index, &data, &e);
	return &d->own[k];
}

static bool line_section(struct op_dwarf *d)
{
	return own_section(d, OWN_LINE)->data != NULL;
}

static const Dwarf_Obj_Access_Methods oa_methods = {
	.get_section_info = oa_section_info,
	.get_byte_order = oa_byte_order,
	.get_length_size = oa_length_size,
	.get_pointer_size = oa_pointer_size,
	.get_section_count = oa_section_count,
	.load_section = oa_load_section,
	.relocate_a_section = NULL, /* executables and shared objects need none */
};

static bool handle_listed(const struct op_dwarf *d)
{
	return d->hprev || d->hnext || handles_head == d;
}

/* handles_lock held */
static void handle_unlink(struct op_dwarf *d)
{
	if (!handle_listed(d))
		return;
	if (d->hprev)
		d->hprev->hnext = d->hnext;
	else
		handles_head = d->hnext;
	if (d->hnext)
		d->hnext->hprev = d->hprev;
	else
		handles_tail = d->hprev;
	d->hprev = d->hnext = NULL;
	handles_bytes -= d->handle_bytes;
	handles_open--;
}

/* handles_lock held */
static void handle_push(struct op_dwarf *d)
{
	d->hprev = NULL;
	d->hnext = handles_head;
	if (handles_head)
		handles_head->hprev = d;
	handles_head = d;
	if (!handles_tail)
		handles_tail = d;
	handles_bytes += d->handle_bytes;
	handles_open++;
}

/* Close the libdwarf instance and unmap the file (handles_lock held, d unlinked). */
static void handle_finish(struct op_dwarf *d)
{
	Dwarf_Error err = NULL;

	if (d->dbg)
		dwarf_object_finish(d->dbg, &err);
	d->dbg = NULL;
	if (d->elf)
		elf_end(d->elf);
	d->elf = NULL;
	if (d->map)
		munmap(d->map, d->map_len);
	d->map = NULL;
	d->handle_bytes = 0;
	for (int k = 0; k < N_OWN_SECS; k++) {
		d->own[k].data = NULL;
		d->own[k].size = 0;
	}
}

/*
 * Close least recently used handles of other files while the open ones exceed the budget.
 * A handle whose file is busy (its lock held by another thread) is skipped: never block
 * on another file's lock while holding our own.
 */
static void handles_trim(struct op_dwarf *self)
{
	struct op_dwarf *v, *prev;
	size_t closed = 0;

	pthread_mutex_lock(&handles_lock);
	for (v = handles_tail; v && handles_bytes > handles_budget; v = prev) {
		prev = v->hprev;
		if (v == self || !v->f || pthread_mutex_trylock(&v->f->lock))
			continue;
		handle_unlink(v);
		handle_finish(v);
		if (inflated_over())
			inflated_drop(v); /* over its own budget: no reason to keep them */
		pthread_mutex_unlock(&v->f->lock);
		closed++;
	}
	pthread_mutex_unlock(&handles_lock);
	if (closed)
		heap_trim();
}

/* How long @d's handle stays open unused (handles_lock held). */
static uint64_t handle_idle_for(const struct op_dwarf *d)
{
	unsigned int k = d->handle_opens > 1 ? d->handle_opens - 1 : 0;

	return handle_idle_ns << (k < HANDLE_IDLE_DOUBLINGS ? k : HANDLE_IDLE_DOUBLINGS);
}

void op_dwarf_idle(void)
{
	uint64_t now = mono_ns();
	struct op_dwarf *v, *prev;
	size_t closed = 0;
	bool trim;

	if (__atomic_load_n(&handles_checked_ns, __ATOMIC_RELAXED) + 1000000000ull > now)
		return;
	pthread_mutex_lock(&handles_lock);
	if (handles_checked_ns + 1000000000ull > now) {
		pthread_mutex_unlock(&handles_lock); /* another thread just did it */
		return;
	}
	__atomic_store_n(&handles_checked_ns, now, __ATOMIC_RELAXED);
	for (v = handles_tail; v; v = prev) {
		prev = v->hprev;
		if (v->handle_used_ns + handle_idle_for(v) > now)
			continue;
		if (!v->f || pthread_mutex_trylock(&v->f->lock))
			continue;
		handle_unlink(v);
		handle_finish(v);
		if (inflated_over())
			inflated_drop(v); /* over its own budget: no reason to keep them */
		pthread_mutex_unlock(&v->f->lock);
		closed++;
	}
	/*
	 * The open handles' file pages leave our resident memory: they stay in the page cache,
	 * and the next lookup faults in only the pages of the CU it reads (libpython's debug
	 * sections kept 9 MiB resident while its handle stayed open).
	 */
	for (v = handles_head; v; v = v->hnext)
		if (v->map && !v->map_written)
			madvise(v->map, v->map_len, MADV_DONTNEED);
	/* the inflated copies written to files: their pages stay in the page cache */
	for (v = inflated_head; v; v = v->znext) {
		if (!v->f || pthread_mutex_trylock(&v->f->lock))
			continue; /* in use now (and its zsecs may move) */
		for (size_t i = 0; i < v->n_zsecs; i++)
			if (v->zsecs[i].spilled)
				op_spill_release(v->zsecs[i].buf, v->zsecs[i].size);
		pthread_mutex_unlock(&v->f->lock);
	}
	for (v = inflated_tail; v; v = prev) {
		prev = v->zprev;
		if (v->zused_ns + INFLATED_IDLE_NS > now)
			break;
		if (v->dbg || !v->f || pthread_mutex_trylock(&v->f->lock))
			continue; /* in use: its handle is open */
		inflated_drop(v);
		pthread_mutex_unlock(&v->f->lock);
		closed++;
	}
	/* and every 10 s anyway: parsed CUs dropped, files evicted, profiles encoded */
	trim = closed || now - handles_trimmed_ns > 10000000000ull;
	if (trim)
		handles_trimmed_ns = now;
	pthread_mutex_unlock(&handles_lock);
	if (trim)
		heap_trim();
}

/*
 * @d's file for libelf: mapped privately by us (libelf reads sections in place), else as
 * libelf maps it.
 */
static Elf *map_elf(struct op_dwarf *d)
{
	struct stat st;
	Elf *elf;

	if (fstat(d->fd, &st) == 0 && st.st_size > 0) {
		/* private and writable: elf_compress() rewrites a section's header in place */
		d->map = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_PRIVATE, d->fd,
			      0);
		d->map_written = false;
		if (d->map == MAP_FAILED) {
			d->map = NULL;
		} else {
			d->map_len = (size_t)st.st_size;
			elf = elf_memory(d->map, d->map_len);
			if (elf)
				return elf;
			munmap(d->map, d->map_len);
			d->map = NULL;
		}
	}
	return elf_begin(d->fd, ELF_C_READ_MMAP, NULL);
}

static void libdwarf_setup_once(void)
{
	/*
	 * libdwarf's allocation tracking off: with it, every allocation of an instance went
	 * into a search tree (~80,000 nodes, 3 MiB, and a 2.4 MB hash table per open handle)
	 * so that dwarf_finish() could free what callers lost, for 12 % of a CU parse's CPU.
	 * Everything taken from libdwarf here is given back; the one call that leaked on a
	 * damaged header, dwarf_srcfiles(), is replaced by our own file-table reader
	 * (symbol/dwarf_line.c).
	 */
	dwarf_set_de_alloc_flag(0);
}

void op_libdwarf_setup(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, libdwarf_setup_once);
}

/* @d's file mapped for libelf, its header read (kept until the handle closes). */
static bool file_map(struct op_dwarf *d)
{
	GElf_Ehdr eh;

	if (d->elf)
		return true;
	d->elf = map_elf(d);
	if (!d->elf || elf_kind(d->elf) != ELF_K_ELF || !gelf_getehdr(d->elf, &eh) ||
	    elf_getshdrnum(d->elf, &d->shnum) != 0)
		return false;
	if (elf_getshdrstrndx(d->elf, &d->shstrndx) != 0)
		d->shstrndx = SHN_UNDEF;
	d->is64 = eh.e_ident[EI_CLASS] == ELFCLASS64;
	d->msb = eh.e_ident[EI_DATA] == ELFDATA2MSB;
	return true;
}

/*
 * Close the instance over one unit to open one over another: the mapping and the inflated
 * sections stay, and the sections the next instance loads are counted again.
 */
static void view_close(struct op_dwarf *d)
{
	Dwarf_Error err = NULL;

	pthread_mutex_lock(&handles_lock);
	handle_unlink(d);
	pthread_mutex_unlock(&handles_lock);
	dwarf_object_finish(d->dbg, &err);
	d->dbg = NULL;
	d->handle_bytes = 0;
	for (int k = 0; k < N_OWN_SECS; k++)
		d->own[k] = (struct own_sec){ d->own[k].index, NULL, 0 };
}

/*
 * Open (or mark as used) @d's libdwarf instance: over @cu's unit alone when the file is read
 * a unit at a time (then @cu is required), else over the whole file. false: the file (or
 * that unit) cannot be read now.
 */
static bool handle_get(struct op_dwarf *d, const struct dcu *cu)
{
	Dwarf_Error err = NULL;
	bool another_unit = false;
	int res;

	d->handle_used_ns = d->zused_ns = mono_ns();
	if (d->views && !cu)
		return false;
	if (d->views && d->view_opens >= VIEW_OPENS_MAX &&
	    !(d->dbg && cu->unit_off == d->view_off)) {
		/* many of its units in use: an instance over the whole file from now on */
		if (d->dbg)
			view_close(d);
		d->views = false;
		another_unit = true;
	}
	if (d->dbg && d->views && cu->unit_off != d->view_off) {
		view_close(d);
		another_unit = true;
	}
	if (d->dbg) {
		pthread_mutex_lock(&handles_lock);
		if (handles_head != d && handle_listed(d)) {
			handle_unlink(d);
			handle_push(d);
		}
		if (inflated_head != d && inflated_listed(d)) {
			inflated_unlink(d);
			inflated_push(d);
		}
		pthread_mutex_unlock(&handles_lock);
		return true;
	}
	if (d->open_failed)
		return false;
	if (!file_map(d))
		goto fail;
	op_libdwarf_setup();
	d->oai.object = d;
	d->oai.methods = &oa_methods;
	d->handle_bytes = 0;
	d->view_off = d->views ? cu->unit_off : 0;
	d->view_len = d->views ? cu->unit_len : 0;
	if (d->views && d->view_opens < UINT_MAX)
		d->view_opens++;
	res = dwarf_object_init_b(&d->oai, NULL, NULL, DW_GROUPNUMBER_ANY, &d->dbg, &err);
	if (res != DW_DLV_OK) {
		if (res == DW_DLV_ERROR) {
			op_debug("cannot read DWARF of %s: %s", d->f->path ? d->f->path : "?",
				 dwarf_errmsg(err));
			dwarf_dealloc(NULL, err, DW_DLA_ERROR);
		}
		d->dbg = NULL;
		if (d->views)
			return false; /* this unit only: the caller marks it failed */
		goto fail;
	}
	/* a re-open after an idle close, not a move to another unit (HANDLE_IDLE_DOUBLINGS) */
	if (!another_unit && d->handle_opens < UINT_MAX)
		d->handle_opens++;
	pthread_mutex_lock(&handles_lock);
	handle_push(d);
	pthread_mutex_unlock(&handles_lock);
	handles_trim(d);
	return true;
fail:
	if (d->elf)
		elf_end(d->elf);
	d->elf = NULL;
	if (d->map)
		munmap(d->map, d->map_len);
	d->map = NULL;
	for (int k = 0; k < N_OWN_SECS; k++)
		d->own[k] = (struct own_sec){ d->own[k].index, NULL, 0 }; /* pointed into the map */
	pthread_mutex_lock(&handles_lock);
	inflated_drop(d); /* copies libdwarf made while failing to open */
	pthread_mutex_unlock(&handles_lock);
	d->open_failed = true;
	return false;
}

void op_dwarf_set_handle_budget(size_t bytes)
{
	pthread_mutex_lock(&handles_lock);
	handles_budget = bytes;
	pthread_mutex_unlock(&handles_lock);
}

void op_dwarf_set_handle_idle(uint64_t ns)
{
	pthread_mutex_lock(&handles_lock);
	handle_idle_ns = ns;
	handles_checked_ns = 0;
	pthread_mutex_unlock(&handles_lock);
}

void op_dwarf_handle_stats(size_t *open, size_t *bytes)
{
	pthread_mutex_lock(&handles_lock);
	if (open)
		*open = handles_open;
	if (bytes)
		*bytes = handles_bytes;
	pthread_mutex_unlock(&handles_lock);
}

/* ---------------------------------------------------------------- open: CU index */

struct idx_ctx {
	struct op_dwarf *d;
	uint32_t cu;
	size_t cap;
};

static int add_idx(void *ctx, uint64_t lo, uint64_t hi)
{
	struct idx_ctx *c = ctx;

	if (grow((void **)&c->d->idx, &c->cap, c->d->n_idx, sizeof(*c->d->idx)))
		return -ENOMEM;
	c->d->idx[c->d->n_idx++] = (struct cuidx){ lo, hi, c->cu };
	return 0;
}

static int idx_cmp(const void *a, const void *b)
{
	const struct cuidx *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static uint64_t die_lowpc(Dwarf_Debug dbg, Dwarf_Die die)
{
	Dwarf_Error err = NULL;
	Dwarf_Addr lo = 0;

	if (dwarf_lowpc(die, &lo, &err) != DW_DLV_OK)
		lo = 0;
	drop_err(dbg, &err);
	return lo;
}

static void parse_cu(struct op_dwarf *d, struct dcu *cu);

/* Section @name of @d's mapped file as plain bytes (inflated if need be), else false. */
static bool named_section(struct op_dwarf *d, const char *name, Dwarf_Small **data, size_t *size)
{
	for (size_t i = 1; i < d->shnum; i++) {
		const char *n = section_name(d, i);

		if (n && strcmp(n, name) == 0)
			return section_data(d, i, data, size) == DW_DLV_OK && *data;
	}
	return false;
}

struct units_ctx {
	struct op_dwarf *d;
	size_t cap;
	bool *seen;
	bool bad;
};

static int add_arange(void *ctx, uint64_t lo, uint64_t hi, uint64_t unit_off)
{
	struct units_ctx *c = ctx;
	struct op_dwarf *d = c->d;
	size_t a = 0, b = d->n_cus;

	while (a < b) {
		size_t mid = a + (b - a) / 2;

		if (d->cus[mid].unit_off < unit_off)
			a = mid + 1;
		else
			b = mid;
	}
	if (a == d->n_cus || d->cus[a].unit_off != unit_off ||
	    grow((void **)&d->idx, &c->cap, d->n_idx, sizeof(*d->idx))) {
		c->bad = true; /* a range of no unit's: the aranges are not to be trusted */
		return 1;
	}
	c->seen[a] = true;
	if (hi > lo)
		d->idx[d->n_idx++] = (struct cuidx){ lo, hi, (uint32_t)a };
	return 0;
}

/*
 * Index @d one unit at a time (op_dwarf.views) without opening libdwarf: when every unit of
 * .debug_info is a compile unit with ranges in .debug_aranges and no DIE refers outside its
 * unit. False (nothing kept) when the file is to be read whole.
 */
static bool units_of(struct op_dwarf *d)
{
	struct units_ctx c = { .d = d };
	struct op_dwarf_unit *units = NULL;
	Dwarf_Small *info, *ar, *ab;
	size_t n_info, n_ar, n_ab, i;
	long n;

	d->zused_ns = mono_ns(); /* what it inflates counts as used (op_dwarf_idle()) */
	if (!file_map(d) || !named_section(d, ".debug_aranges", &ar, &n_ar) ||
	    !named_section(d, ".debug_abbrev", &ab, &n_ab) ||
	    !named_section(d, ".debug_info", &info, &n_info) ||
	    op_dwarf_abbrev_refs_across(ab, n_ab) != 0)
		return false;
	n = op_dwarf_units(info, n_info, d->msb, &units);
	if (n <= 0 || n > UINT32_MAX)
		goto out;
	d->cus = calloc((size_t)n, sizeof(*d->cus));
	c.seen = calloc((size_t)n, sizeof(*c.seen));
	if (!d->cus || !c.seen)
		goto out;
	for (i = 0; i < (size_t)n; i++)
		d->cus[i] = (struct dcu){ .die_off = units[i].off + units[i].die_off,
					  .unit_off = units[i].off,
					  .unit_len = units[i].len,
					  .version = units[i].version };
	d->n_cus = (size_t)n;
	if (op_dwarf_aranges(ar, n_ar, d->msb, add_arange, &c) < 0 || c.bad)
		goto out;
	for (i = 0; i < d->n_cus && c.seen[i]; i++)
		;
	if (i == d->n_cus)
		d->views = true;

out:
	if (!d->views) {
		free(d->cus);
		free(d->idx);
		d->cus = NULL;
		d->idx = NULL;
		d->n_cus = d->n_idx = 0;
	}
	free(c.seen);
	free(units);
	return d->views;
}

struct op_dwarf *op_dwarf_open(int fd, struct op_file *f)
{
	struct op_dwarf *d;
	Dwarf_Error err = NULL;
	Dwarf_Unsigned hl, next, toff;
	Dwarf_Half ver, asz, lsz, esz, ct;
	Dwarf_Off ab;
	Dwarf_Sig8 sig;
	size_t cap_cus = 0;
	struct idx_ctx ic;
	int res;

	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->fd = dup(fd);
	d->f = f;
	d->budget = DEFAULT_BUDGET;
	if (d->fd < 0) {
		free(d);
		return NULL;
	}
	if (units_of(d))
		goto indexed;
	if (!handle_get(d, NULL)) {
		close(d->fd);
		free(d);
		return NULL;
	}
	ic = (struct idx_ctx){ .d = d };
	for (;;) {
		Dwarf_Die cu_die = NULL;
		struct dcu *cu;
		Dwarf_Off off;
		int n;

		res = dwarf_next_cu_header_d(d->dbg, 1, &hl, &ver, &ab, &asz, &lsz, &esz, &sig,
					     &toff, &next, &ct, &err);
		if (res != DW_DLV_OK)
			break;
		if (dwarf_siblingof_b(d->dbg, NULL, 1, &cu_die, &err) != DW_DLV_OK) {
			drop_err(d->dbg, &err);
			continue;
		}
		if (dwarf_dieoffset(cu_die, &off, &err) != DW_DLV_OK ||
		    grow((void **)&d->cus, &cap_cus, d->n_cus, sizeof(*d->cus))) {
			drop_err(d->dbg, &err);
			dwarf_dealloc_die(cu_die);
			continue;
		}
		cu = &d->cus[d->n_cus];
		memset(cu, 0, sizeof(*cu));
		cu->die_off = off;
		cu->version = ver;
		ic.cu = (uint32_t)d->n_cus++;
		n = die_ranges(d->dbg, cu_die, ver, die_lowpc(d->dbg, cu_die), add_idx, &ic);
		dwarf_dealloc_die(cu_die);
		if (n == 0) {
			/* no CU-level ranges: parse now and index its functions instead */
			size_t i;

			parse_cu(d, cu);
			for (i = 0; i < cu->n_tops; i++)
				add_idx(&ic, cu->tops[i].lo, cu->tops[i].hi);
		}
	}
	if (res == DW_DLV_ERROR) {
		op_debug("DWARF of %s: %s (using what was read)", f->path ? f->path : "?",
			 dwarf_errmsg(err));
		drop_err(d->dbg, &err);
	}
indexed:
	if (!d->n_cus) {
		op_dwarf_free(d);
		return NULL;
	}
	if (d->n_idx)
		qsort(d->idx, d->n_idx, sizeof(*d->idx), idx_cmp);
	/* the handle's sections are bounded globally, not counted per file */
	d->base_bytes = sizeof(*d) + d->n_cus * sizeof(*d->cus) + d->n_idx * sizeof(*d->idx);
	return d;
}

static void cu_clear(struct dcu *cu)
{
	for (size_t i = 0; i < cu->n_nodes; i++)
		free(cu->nodes[i].rows);
	free(cu->all_rows);
	cu->all_rows = NULL;
	cu->n_all_rows = 0;
	cu->expanded = 0;
	free(cu->nodes);
	free(cu->ranges);
	free(cu->tops);
	free(cu->files);
	cu->nodes = NULL;
	cu->ranges = NULL;
	cu->tops = NULL;
	cu->files = NULL;
	cu->n_nodes = cu->cap_nodes = cu->n_ranges = cu->cap_ranges = 0;
	cu->n_tops = cu->n_files = 0;
	cu->has_lines = false;
	cu->bytes = 0;
	cu->parsed = false;
}

void op_dwarf_free(struct op_dwarf *d)
{
	size_t i;

	if (!d)
		return;
	for (i = 0; i < d->n_cus; i++)
		cu_clear(&d->cus[i]);
	free(d->cus);
	free(d->idx);
	pthread_mutex_lock(&handles_lock);
	handle_unlink(d);
	handle_finish(d);
	inflated_drop(d);
	pthread_mutex_unlock(&handles_lock);
	if (d->fd >= 0)
		close(d->fd);
	free(d);
}

size_t op_dwarf_bytes(const struct op_dwarf *d)
{
	return d ? d->base_bytes + d->parsed_bytes : 0;
}

void op_dwarf_set_budget(struct op_dwarf *d, size_t bytes)
{
	if (d)
		d->budget = bytes;
}

/* ---------------------------------------------------------------- CU parsing */

/* File @idx of @cu in a table of DWARF @version */
static const char *file_at(const struct dcu *cu, unsigned version, uint64_t idx)
{
	/* DWARF 5 numbers files from 0, earlier versions from 1 */
	if (version < 5) {
		if (idx == 0)
			return NULL;
		idx--;
	}
	return idx < cu->n_files ? cu->files[idx] : NULL;
}

/* A file by a DIE's index (DW_AT_call_file, DW_AT_decl_file) */
static const char *cu_file(const struct dcu *cu, Dwarf_Unsigned idx)
{
	return file_at(cu, cu->version, idx);
}

static int line_cmp(const void *a, const void *b)
{
	const struct dline *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

/*
 * Whether DWARF 5 file 0 of @cu is not the CU's primary source file (Go writes "?" there).
 * libdwarf before 0.5 starts a DWARF 5 line program's file register at 0 instead of 1, so rows
 * that never set the file report file 0; where file 0 is a placeholder they mean file 1.
 */
static bool file0_is_placeholder(struct op_dwarf *d, const struct dcu *cu, Dwarf_Die cu_die)
{
	Dwarf_Error err = NULL;
	char *name = NULL;
	bool res;

	if (cu->n_files < 2 || !cu->files[0] || !cu->files[1])
		return false;
	if (dwarf_diename(cu_die, &name, &err) != DW_DLV_OK || !name) {
		drop_err(d->dbg, &err);
		return false;
	}
	/* the name points into the section: not ours to free */
	res = strcmp(base_name(cu->files[0]), base_name(name)) != 0;
	return res;
}

/* Index of @file in the CU's file list, + 1; 0 when absent. */
static uint32_t file_slot(const struct dcu *cu, const char *file)
{
	size_t i;

	for (i = 0; file && i < cu->n_files; i++)
		if (cu->files[i] == file)
			return (uint32_t)i + 1;
	return 0;
}

/* A function's line rows, sorted, 12 bytes each relative to the lowest address. */
struct rowset {
	struct crow *rows;
	uint32_t n;
	uint64_t base;
};

/* Keep sorted @rows as 12-byte rows relative to the lowest address (rows past 4 GiB dropped). */
static void compact_rows(const struct dcu *cu, const struct dline *rows, size_t n,
			 struct rowset *out)
{
	size_t i, m = 0;
	const char *last_file = NULL;
	uint32_t last_slot = 0;

	*out = (struct rowset){ NULL, 0, 0 };
	if (!n || n >= UINT32_MAX)
		return;
	out->rows = malloc((n + 1) * sizeof(*out->rows));
	if (!out->rows)
		return;
	out->base = rows[0].addr;
	for (i = 0; i < n; i++) {
		struct crow *r = &out->rows[m];

		if (rows[i].addr - out->base > UINT32_MAX)
			break;
		r->addr = (uint32_t)(rows[i].addr - out->base);
		r->line = rows[i].line;
		if (rows[i].order == 0) {
			r->file = ROW_END;
		} else {
			if (rows[i].file != last_file) {
				last_file = rows[i].file;
				last_slot = file_slot(cu, last_file);
			}
			r->file = last_slot;
		}
		m++;
	}
	/* hostile: rows 4 GiB past the first; what follows the last kept row is unknown */
	if (i < n)
		out->rows[m++] = (struct crow){ UINT32_MAX, 0, ROW_END };
	out->n = (uint32_t)m;
}

/* Rows a function keeps: those at its addresses, and for each of its ranges the row before. */
#define ROWSET_RANGES 8

struct line_ctx {
	const struct dcu *cu;
	const struct drange *ranges;
	size_t n_ranges;
	struct dline *rows;
	size_t n, cap;
	uint32_t seen; /* rows of the program so far */
	struct dline before[ROWSET_RANGES];
	unsigned version;
};

/* Sorted order: by address, then end-of-sequence rows first, then program order. */
static bool dline_after(const struct dline *a, const struct dline *b)
{
	return a->addr != b->addr ? a->addr > b->addr : a->order > b->order;
}

static int add_row(void *ctx, const struct op_line_row *row)
{
	struct line_ctx *lc = ctx;
	struct dline l;
	uint64_t fno = row->file;
	bool keep = false;

	if (fno == 0 && lc->cu->file0_bogus)
		fno = 1;
	l.addr = row->addr;
	/* file index: the line program's version decides 0- or 1-based */
	l.file = row->end_sequence ? NULL : file_at(lc->cu, lc->version, fno);
	l.line = row->end_sequence ? 0 : row->line;
	/* end-of-sequence rows sort before a sequence starting at the same address */
	l.order = row->end_sequence ? 0 : ++lc->seen;
	for (size_t i = 0; i < lc->n_ranges; i++) {
		const struct drange *g = &lc->ranges[i];

		if (l.addr >= g->lo && l.addr < g->hi) {
			keep = true;
		} else if (l.addr < g->lo && i < ROWSET_RANGES &&
			   (!lc->before[i].addr || dline_after(&l, &lc->before[i]))) {
			lc->before[i] =
				l; /* what covers the range's first bytes, if no row there */
		}
	}
	if (!keep)
		return 0;
	if (grow((void **)&lc->rows, &lc->cap, lc->n, sizeof(*lc->rows)))
		return -ENOMEM;
	lc->rows[lc->n++] = l;
	return 0;
}

static bool line_section(struct op_dwarf *d);

/*
 * The line rows of the code at @ranges (a function's), from the CU's line program read
 * again: a CU's whole table stays resident nowhere (python3.11's: 7 MiB). Needs the open
 * handle.
 */
static void rowset_for(struct op_dwarf *d, const struct dcu *cu, const struct drange *ranges,
		       size_t n_ranges, struct rowset *out)
{
	struct line_ctx lc = { .cu = cu, .ranges = ranges, .n_ranges = n_ranges };

	*out = (struct rowset){ NULL, 0, 0 };
	if (!cu->has_lines || !n_ranges || !line_section(d))
		return;
	if (op_dwarf_line_rows(d->own[OWN_LINE].data, d->own[OWN_LINE].size, cu->stmt_off, d->msb,
			       &lc.version, add_row, &lc) > 0) {
		for (size_t i = 0; i < n_ranges && i < ROWSET_RANGES; i++)
			if (lc.before[i].addr &&
			    !grow((void **)&lc.rows, &lc.cap, lc.n, sizeof(*lc.rows)))
				lc.rows[lc.n++] = lc.before[i];
		if (lc.n)
			qsort(lc.rows, lc.n, sizeof(*lc.rows), line_cmp);
		compact_rows(cu, lc.rows, lc.n, out);
	}
	free(lc.rows);
}

struct files_ctx {
	struct op_dwarf *d;
	const char **files;
	size_t n, cap;
};

static int add_file(void *ctx, const char *path)
{
	struct files_ctx *fc = ctx;

	if (grow((void **)&fc->files, &fc->cap, fc->n, sizeof(*fc->files)))
		return -ENOMEM;
	fc->files[fc->n++] = op_file_intern(fc->d->f, path);
	return 0;
}

/* The CU's DW_AT_comp_dir, pointing into libdwarf's section data (not ours to free). */
static const char *comp_dir(struct op_dwarf *d, Dwarf_Die cu_die)
{
	Dwarf_Error err = NULL;
	Dwarf_Attribute a;
	char *s = NULL;

	if (dwarf_attr(cu_die, DW_AT_comp_dir, &a, &err) != DW_DLV_OK) {
		drop_err(d->dbg, &err);
		return NULL;
	}
	if (dwarf_formstring(a, &s, &err) != DW_DLV_OK)
		s = NULL;
	drop_err(d->dbg, &err);
	dwarf_dealloc_attribute(a);
	return s;
}

/*
 * The CU's file table (paths joined as libdwarf's dwarf_srcfiles() joins them, read by
 * symbol/dwarf_line.c) and where its line program is (rows: rowset_for()).
 */
static void parse_lines(struct op_dwarf *d, struct dcu *cu, Dwarf_Die cu_die)
{
	struct files_ctx fc = { .d = d };
	Dwarf_Unsigned stmt;
	Dwarf_Off stmt_off;
	const struct own_sec *line, *line_str, *str;
	struct op_line_strs strs;
	long n;

	if (attr_udata(d->dbg, cu_die, DW_AT_stmt_list, &stmt))
		stmt_off = stmt;
	else if (!attr_ref(d->dbg, cu_die, DW_AT_stmt_list, &stmt_off))
		return;
	line = own_section(d, OWN_LINE);
	if (!line->data)
		return;
	line_str = own_section(d, OWN_LINE_STR);
	str = own_section(d, OWN_STR);
	strs = (struct op_line_strs){ line_str->data, line_str->size, str->data, str->size };
	n = op_dwarf_line_files(line->data, line->size, stmt_off, d->msb, &strs,
				comp_dir(d, cu_die), add_file, &fc);
	if (n > 0 && (size_t)n == fc.n) {
		const char **exact = realloc(fc.files, fc.n * sizeof(*fc.files));

		cu->files = exact ? exact : fc.files;
		cu->n_files = fc.n;
	} else {
		/* none, malformed, or out of memory: no names rather than wrong ones */
		free(fc.files);
	}
	/* the file register of rows (libdwarf before 0.5 started it at 0 in DWARF 5) */
	cu->file0_bogus = cu->version >= 5 && file0_is_placeholder(d, cu, cu_die);
	cu->stmt_off = stmt_off;
	cu->has_lines = true;
}

/* Name, linkage name and declaration line, following abstract_origin and specification. */
static void fn_info(struct op_dwarf *d, Dwarf_Die die, const char **name, const char **linkage,
		    int64_t *decl_line, int depth)
{
	Dwarf_Error err = NULL;
	Dwarf_Unsigned v;
	Dwarf_Off ref;
	Dwarf_Die other;

	if (!*linkage) {
		*linkage = attr_str(d, die, DW_AT_linkage_name);
		if (!*linkage)
			*linkage = attr_str(d, die, DW_AT_MIPS_linkage_name);
	}
	if (!*name)
		*name = attr_str(d, die, DW_AT_name);
	if (!*decl_line && attr_udata(d->dbg, die, DW_AT_decl_line, &v))
		*decl_line = (int64_t)v;
	if ((*name && *linkage && *decl_line) || depth >= MAX_ORIGIN_DEPTH)
		return;
	if (!attr_ref(d->dbg, die, DW_AT_abstract_origin, &ref) &&
	    !attr_ref(d->dbg, die, DW_AT_specification, &ref))
		return;
	if (dwarf_offdie_b(d->dbg, ref, 1, &other, &err) != DW_DLV_OK) {
		drop_err(d->dbg, &err);
		return;
	}
	fn_info(d, other, name, linkage, decl_line, depth + 1);
	dwarf_dealloc_die(other);
}

/* @nd's display name, linkage (system) name and declaration line, from its DIE. */
static void node_names(struct op_dwarf *d, struct dnode *nd, Dwarf_Die die)
{
	const char *name = NULL, *linkage = NULL;
	int64_t decl_line = 0;

	fn_info(d, die, &name, &linkage, &decl_line, 0);
	nd->system_name = linkage ? linkage : name;
	/* a mangled linkage name demangles to the qualified name; an unmangled one is an asm
	 * label (glibc's __GI_*), where the source name reads better */
	nd->name = linkage ? op_file_demangle(d->f, linkage) : NULL;
	if (!nd->name || nd->name == linkage)
		nd->name = name ? name : linkage;
	nd->decl_line = decl_line;
}

struct node_ctx {
	struct op_dwarf *d;
	struct dcu *cu;
};

static int add_node_range(void *ctx, uint64_t lo, uint64_t hi)
{
	struct node_ctx *c = ctx;
	struct dcu *cu = c->cu;

	if (grow((void **)&cu->ranges, &cu->cap_ranges, cu->n_ranges, sizeof(*cu->ranges)))
		return -ENOMEM;
	cu->ranges[cu->n_ranges++] = (struct drange){ lo, hi };
	return 0;
}

static void walk(struct op_dwarf *d, struct dcu *cu, Dwarf_Die die, uint32_t parent, int depth,
		 uint64_t cu_base);

static void visit(struct op_dwarf *d, struct dcu *cu, Dwarf_Die die, Dwarf_Off off, uint32_t parent,
		  int depth, uint64_t cu_base)
{
	Dwarf_Error err = NULL;
	Dwarf_Half tag;
	struct node_ctx nc = { d, cu };
	uint32_t me;
	size_t first;
	int n;

	if (dwarf_tag(die, &tag, &err) != DW_DLV_OK) {
		drop_err(d->dbg, &err);
		return;
	}
	switch (tag) {
	case DW_TAG_subprogram:
	case DW_TAG_inlined_subroutine:
		break;
	case DW_TAG_class_type:
	case DW_TAG_structure_type:
	case DW_TAG_union_type:
		if (cu->lang_c)
			return; /* members only */
				/* fall through */
	case DW_TAG_lexical_block:
	case DW_TAG_namespace:
	case DW_TAG_module:
		/* may hold inlined calls or function definitions */
		walk(d, cu, die, parent, depth + 1, cu_base);
		return;
	default:
		return;
	}
	if (tag == DW_TAG_inlined_subroutine && parent == NONE)
		return; /* an inline instance outside any function: ignore */
	first = cu->n_ranges;
	n = die_ranges(d->dbg, die, cu->version, cu_base, add_node_range, &nc);
	if (n <= 0) {
		/* declaration or abstract instance: nothing at an address, but a nested
		 * definition (e.g. a local class's method) may still have code */
		if (tag == DW_TAG_subprogram && !cu->lang_c)
			walk(d, cu, die, parent, depth + 1, cu_base);
		return;
	}
	if (grow((void **)&cu->nodes, &cu->cap_nodes, cu->n_nodes, sizeof(*cu->nodes))) {
		cu->n_ranges = first;
		return;
	}
	me = (uint32_t)cu->n_nodes++;
	{
		struct dnode *nd = &cu->nodes[me];
		Dwarf_Unsigned v;

		memset(nd, 0, sizeof(*nd));
		nd->die_off = off;
		nd->parent = parent;
		nd->depth = (uint16_t)(parent == NONE ? 0 : cu->nodes[parent].depth + 1);
		nd->range_first = (uint32_t)first;
		nd->range_count = (uint32_t)n;
		if (tag == DW_TAG_inlined_subroutine) {
			if (attr_udata(d->dbg, die, DW_AT_call_file, &v))
				nd->call_file = cu_file(cu, v);
			if (attr_udata(d->dbg, die, DW_AT_call_line, &v))
				nd->call_line = (int64_t)v;
		}
	}
	/*
	 * A top-level function's name and inner tree wait for an address in it (expand()):
	 * most functions of a CU are never sampled, and their names (and demangling them)
	 * were a tenth of a first lookup's time.
	 */
	if (parent == NONE) {
		cu->nodes[me].lazy = true;
	} else {
		node_names(d, &cu->nodes[me], die);
		if (depth < MAX_TREE_DEPTH)
			walk(d, cu, die, me, depth + 1, cu_base);
	}
	cu->nodes[me].sub_first = me + 1;
	cu->nodes[me].subtree_end = (uint32_t)cu->n_nodes;
}

static void walk(struct op_dwarf *d, struct dcu *cu, Dwarf_Die parent_die, uint32_t parent,
		 int depth, uint64_t cu_base)
{
	Dwarf_Error err = NULL;
	Dwarf_Die child, next;
	Dwarf_Off off;

	if (depth >= MAX_TREE_DEPTH)
		return;
	if (dwarf_child(parent_die, &child, &err) != DW_DLV_OK) {
		drop_err(d->dbg, &err);
		return;
	}
	for (;;) {
		/* a tree walked in preorder meets its DIEs in section order: anything else is
		 * corrupt and could loop or blow up */
		if (dwarf_dieoffset(child, &off, &err) != DW_DLV_OK ||
		    (off += d->view_off) <= cu->last_off || ++cu->visited > MAX_DIES_PER_CU) {
			drop_err(d->dbg, &err);
			dwarf_dealloc_die(child);
			break;
		}
		cu->last_off = off;
		visit(d, cu, child, off, parent, depth, cu_base);
		if (dwarf_siblingof_b(d->dbg, child, 1, &next, &err) != DW_DLV_OK) {
			drop_err(d->dbg, &err);
			dwarf_dealloc_die(child);
			break;
		}
		dwarf_dealloc_die(child);
		child = next;
	}
}

static int top_cmp(const void *a, const void *b)
{
	const struct dtop *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int use_cmp(const void *a, const void *b)
{
	const struct dcu *x = *(struct dcu *const *)a, *y = *(struct dcu *const *)b;

	return x->last_use < y->last_use ? -1 : x->last_use > y->last_use;
}

/* Drop parsed CUs, least recently used first, until at most half the budget is left. */
static void drop_parsed(struct op_dwarf *d)
{
	struct dcu **v;
	size_t i, n = 0;

	v = malloc(d->n_cus * sizeof(*v));
	for (i = 0; v && i < d->n_cus; i++)
		if (d->cus[i].parsed)
			v[n++] = &d->cus[i];
	if (!v) {
		/* no room to sort: drop them all */
		for (i = 0; i < d->n_cus; i++)
			if (d->cus[i].parsed)
				cu_clear(&d->cus[i]);
		d->parsed_bytes = 0;
		return;
	}
	qsort(v, n, sizeof(*v), use_cmp);
	for (i = 0; i < n && d->parsed_bytes > d->budget / 2; i++) {
		d->parsed_bytes -= v[i]->bytes;
		cu_clear(v[i]);
	}
	free(v);
}

static void parse_cu(struct op_dwarf *d, struct dcu *cu)
{
	Dwarf_Error err = NULL;
	Dwarf_Die cu_die;
	size_t i, k;
	struct timespec t0, t1;
	Dwarf_Unsigned lang;
	bool opened;

	if (cu->parsed || cu->failed)
		return;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (d->parsed_bytes > d->budget)
		drop_parsed(d);
	opened = !d->dbg || (d->views && d->view_off != cu->unit_off);
	if (!handle_get(d, cu)) {
		cu->failed = true;
		return;
	}
	if (dwarf_offdie_b(d->dbg, cu->die_off - d->view_off, 1, &cu_die, &err) != DW_DLV_OK) {
		drop_err(d->dbg, &err);
		cu->failed = true;
		return;
	}
	cu->visited = 0;
	cu->last_off = cu->die_off;
	if (attr_udata(d->dbg, cu_die, DW_AT_language, &lang))
		cu->lang_c = lang == DW_LANG_C89 || lang == DW_LANG_C || lang == DW_LANG_C99 ||
			     lang == DW_LANG_C11 || lang == LANG_C17;
	cu->cu_base = die_lowpc(d->dbg, cu_die);
	parse_lines(d, cu, cu_die);
	walk(d, cu, cu_die, NONE, 0, cu->cu_base);
	dwarf_dealloc_die(cu_die);

	for (i = 0; i < cu->n_nodes; i++)
		if (cu->nodes[i].parent == NONE)
			cu->n_tops += cu->nodes[i].range_count;
	cu->tops = cu->n_tops ? calloc(cu->n_tops, sizeof(*cu->tops)) : NULL;
	if (!cu->tops)
		cu->n_tops = 0;
	for (i = 0, k = 0; cu->tops && i < cu->n_nodes; i++) {
		struct dnode *nd = &cu->nodes[i];
		uint32_t r;

		if (nd->parent != NONE)
			continue;
		for (r = 0; r < nd->range_count; r++)
			cu->tops[k++] =
				(struct dtop){ cu->ranges[nd->range_first + r].lo,
					       cu->ranges[nd->range_first + r].hi, (uint32_t)i };
	}
	if (cu->n_tops)
		qsort(cu->tops, cu->n_tops, sizeof(*cu->tops), top_cmp);
	cu->bytes = cu->n_nodes * sizeof(*cu->nodes) + cu->n_ranges * sizeof(*cu->ranges) +
		    cu->n_tops * sizeof(*cu->tops) + cu->n_files * sizeof(*cu->files);
	d->parsed_bytes += cu->bytes;
	cu->parsed = true;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	op_debug("DWARF: parsed CU at 0x%llx of %s: %zu DIEs, %zu functions, %zu bytes kept, "
		 "%.2f ms%s",
		 (unsigned long long)cu->die_off, d->f && d->f->path ? d->f->path : "?",
		 cu->visited, cu->n_nodes, cu->bytes,
		 (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6,
		 opened ? " (handle opened)" : "");
}

/*
 * Functions of one CU whose rows are each read from its line program; past them the whole
 * table is read once and kept, as a CU whose functions are mostly sampled would otherwise
 * read its program once per function.
 */
#define ROWS_PER_FUNCTION_MAX 16

/* Rows for @top (expand()): its own, or the CU's whole table once it has read many. */
static size_t function_rows(struct op_dwarf *d, struct dcu *cu, uint32_t top)
{
	static const struct drange all = { 0, UINT64_MAX };
	struct dnode *nd = &cu->nodes[top];
	struct rowset rs;
	size_t freed = 0;

	if (cu->all_rows)
		return 0;
	if (++cu->expanded <= ROWS_PER_FUNCTION_MAX) {
		rowset_for(d, cu, &cu->ranges[nd->range_first], nd->range_count, &rs);
		nd->rows = rs.rows;
		nd->n_rows = rs.n;
		nd->rows_base = rs.base;
		return rs.n * sizeof(struct crow);
	}
	rowset_for(d, cu, &all, 1, &rs);
	if (!rs.rows)
		return 0;
	for (size_t i = 0; i < cu->n_nodes; i++) {
		freed += cu->nodes[i].n_rows * sizeof(struct crow);
		free(cu->nodes[i].rows);
		cu->nodes[i].rows = NULL;
		cu->nodes[i].n_rows = 0;
	}
	cu->all_rows = rs.rows;
	cu->n_all_rows = rs.n;
	cu->all_rows_base = rs.base;
	/* the caller adds what it returns; freed rows come off first */
	cu->bytes -= freed;
	d->parsed_bytes -= freed;
	return rs.n * sizeof(struct crow);
}

/*
 * Read the names and inner tree of top-level function @top of @cu (its nodes are appended,
 * so they stay contiguous). Once: a function whose DIE cannot be read now stays alone and
 * without a DWARF name (the symbol table names it).
 */
static void expand(struct op_dwarf *d, struct dcu *cu, uint32_t top)
{
	Dwarf_Error err = NULL;
	Dwarf_Die die;
	size_t first = cu->n_nodes, first_range = cu->n_ranges, bytes;

	if (!cu->nodes[top].lazy)
		return;
	cu->nodes[top].lazy = false;
	if (!handle_get(d, cu))
		return;
	if (dwarf_offdie_b(d->dbg, cu->nodes[top].die_off - d->view_off, 1, &die, &err) !=
	    DW_DLV_OK) {
		drop_err(d->dbg, &err);
		return;
	}
	node_names(d, &cu->nodes[top], die);
	/* the walk's order check starts at the function's own DIE */
	cu->last_off = cu->nodes[top].die_off;
	walk(d, cu, die, top, 1, cu->cu_base);
	dwarf_dealloc_die(die);
	cu->nodes[top].sub_first = (uint32_t)first;
	cu->nodes[top].subtree_end = (uint32_t)cu->n_nodes;
	bytes = (cu->n_nodes - first) * sizeof(*cu->nodes) +
		(cu->n_ranges - first_range) * sizeof(*cu->ranges) + function_rows(d, cu, top);
	cu->bytes += bytes;
	d->parsed_bytes += bytes;
}

/* ---------------------------------------------------------------- lookup */

static struct dcu *find_cu(struct op_dwarf *d, uint64_t addr)
{
	size_t lo = 0, hi = d->n_idx, i, back;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->idx[mid].lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* ranges of different CUs should not overlap; look back a little in case */
	for (i = lo, back = 0; i > 0 && back < 16; i--, back++)
		if (addr < d->idx[i - 1].hi)
			return &d->cus[d->idx[i - 1].cu];
	return NULL;
}

/* File and line of the row covering @addr; false before any row or past a sequence end. */
static bool find_line(const struct dcu *cu, const struct crow *rows, size_t n, uint64_t base,
		      uint64_t addr, const char **file, int64_t *line)
{
	size_t lo = 0, hi = n;
	const struct crow *r;
	uint64_t rel;

	if (!n || addr < base)
		return false;
	rel = addr - base;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (rows[mid].addr <= rel)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return false;
	r = &rows[lo - 1];
	if (r->file == ROW_END)
		return false;
	*file = r->file && r->file - 1 < cu->n_files ? cu->files[r->file - 1] : NULL;
	*line = r->line;
	return true;
}

static bool node_has(const struct dcu *cu, const struct dnode *nd, uint64_t addr)
{
	uint32_t r;

	for (r = 0; r < nd->range_count; r++) {
		const struct drange *g = &cu->ranges[nd->range_first + r];

		if (addr >= g->lo && addr < g->hi)
			return true;
	}
	return false;
}

int op_dwarf_lookup(struct op_dwarf *d, uint64_t addr, struct op_sym_result *out)
{
	const char *line_file = NULL;
	int64_t line_no = 0;
	bool line;
	const struct dnode *nd;
	struct dcu *cu;
	size_t lo, hi;
	uint32_t top = NONE, best, i;
	const char *file;
	int64_t lineno;

	out->n = 0;
	if (!d)
		return -ENOENT;
	cu = find_cu(d, addr);
	if (!cu)
		return -ENOENT;
	cu->last_use = ++d->tick;
	parse_cu(d, cu);
	if (!cu->parsed)
		return -ENOENT;

	lo = 0;
	hi = cu->n_tops;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cu->tops[mid].lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && addr < cu->tops[lo - 1].hi)
		top = cu->tops[lo - 1].node;
	if (top == NONE) {
		/* no function DIE here: still report file and line if the line table has it */
		struct drange one = { addr, addr + 1 };
		struct rowset rs = { NULL, 0, 0 };

		if (cu->all_rows)
			rs = (struct rowset){ cu->all_rows, cu->n_all_rows, cu->all_rows_base };
		else if (handle_get(d, cu))
			rowset_for(d, cu, &one, 1, &rs);
		line = find_line(cu, rs.rows, rs.n, rs.base, addr, &line_file, &line_no);
		if (rs.rows != cu->all_rows)
			free(rs.rows);
		if (!line || !line_file)
			return -ENOENT;
		out->lines[0] = (struct op_sym_line){ .file = line_file, .line = line_no };
		out->n = 1;
		return 1; /* caller fills in the name */
	}
	expand(d, cu, top);
	nd = &cu->nodes[top];
	if (cu->all_rows)
		line = find_line(cu, cu->all_rows, cu->n_all_rows, cu->all_rows_base, addr,
				 &line_file, &line_no);
	else
		line = find_line(cu, nd->rows, nd->n_rows, nd->rows_base, addr, &line_file,
				 &line_no);
	best = top;
	for (i = cu->nodes[top].sub_first; i < cu->nodes[top].subtree_end; i++)
		if (cu->nodes[i].depth > cu->nodes[best].depth && node_has(cu, &cu->nodes[i], addr))
			best = i;

	file = line ? line_file : NULL;
	lineno = line ? line_no : 0;
	for (nd = &cu->nodes[best]; nd && out->n < OP_MAX_INLINE;
	     nd = nd->parent == NONE ? NULL : &cu->nodes[nd->parent]) {
		out->lines[out->n++] = (struct op_sym_line){
			.name = nd->name,
			.system_name = nd->system_name,
			.file = file,
			.line = lineno,
			.start_line = nd->decl_line,
		};
		/* the caller's position is where this inline instance was called */
		file = nd->call_file;
		lineno = nd->call_line;
	}
	return 0;
}

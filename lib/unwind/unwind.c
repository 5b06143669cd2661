// SPDX-License-Identifier: Apache-2.0
/*
 * User half of the CFI unwinder. See unwind.h.
 *
 * Tables live in the sampler object's maps: unwind_rows (one big array, each table a
 * contiguous range handed out first-fit, written through a mapping of just that range that
 * is dropped right after, so the array does not count in this process's resident memory),
 * unwind_rules (shared and deduplicated across every table, never evicted), unwind_tables (slot →
 * row range) and unwind_procs (pid → sorted executable mappings). A table is written rows first,
 * slot last, and evicted slot first, so the BPF walk never follows a slot into rows being
 * rewritten.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "unwind/cfi.h"
#include "util/log.h"
#include "sampler.skel.h"
#include "sample/proc.h"
#include "sample/sampler.h"
#include "unwind/runtime.h"
#include "unwind/unwind.h"

#define MAX_FILES      8192 /* binaries remembered (with or without a loaded table) */
#define MAX_LOADS      8    /* PT_LOAD segments remembered per binary */
#define PROC_BUCKETS   1024
#define REFRESH_MIN_NS 50000000ull /* at most one unknown-PC refresh per pid per 50 ms */
/* a process unwind_procs had no room for is tried again at most once a second */
#define UNSTORED_RETRY_NS 1000000000ull
/*
 * A PC outside every mapping read so far (ld.so mapping libc right after exec, a dlopen)
 * refreshes sooner, a few times per process: the 50 ms limit made a short-lived child's
 * samples through libc stop at "unknown mapping" for its whole life.
 */
#define QUICK_REFRESH_NS 1000000ull
#define QUICK_REFRESHES	 8
/* a runtime that was not ready (attach() said -EAGAIN: a JVM starting) is offered it again */
#define RT_RETRY_NS 200000000ull
/*
 * Rows of evicted tables kept in memory, all binaries together: on a host running many big
 * binaries one after another (compilers, test binaries) the same tables were evicted and
 * compiled again several times a minute (libLLVM: ~200 ms each). Over the budget, the least
 * recently used binary's copy goes.
 */
#define SAVED_BUDGET (8u << 20)
/* a table that did not fit is compiled again after this, doubling up to the maximum */
#define RETRY_MIN_NS 1000000000ull
#define RETRY_MAX_NS 60000000000ull

struct load_seg {
	uint64_t vaddr, offset, filesz;
	bool exec; /* PF_X */
};

/* One binary. */
struct file_ent {
	char id[48];		     /* build id or content hash (cfi.h), "" for a failed open */
	uint64_t dev, ino;	     /* as in /proc/PID/maps */
	bool fp;		     /* no usable CFI: walk frame pointers through it */
	int slot;		     /* BPF table slot, -1 when not loaded */
	uint32_t first_row, n_slots; /* unwind_rows the table holds: its rows, then its index */
	uint64_t base;		     /* ELF address of row pc 0 */
	struct load_seg load[MAX_LOADS];
	int n_load;
	uint32_t refs; /* processes whose mappings use the slot */
	uint64_t last_used_ns;
	uint32_t need_rows;	       /* rows of a table that did not fit, 0 if none */
	uint64_t retry_ns, backoff_ns; /* when (and after how long) to compile it again */
	/* evicted: its rows and table entry (first_row, index_row relative), or NULL */
	struct op_unwind_row *saved;
	struct op_unwind_table saved_te;
	uint32_t saved_slots;
};

struct proc_ent {
	struct proc_ent *next;
	int pid;
	uint64_t refreshed_ns;
	unsigned int quick;	    /* quick refreshes done */
	bool unstored;		    /* unwind_procs had no room for it at the last refresh */
	uint32_t runtimes;	    /* bit k: runtime k attached (lib/unwind/runtime.h) */
	bool rt_retry;		    /* a runtime asked to be attached again (-EAGAIN) */
	uint64_t exec_ns;	    /* the exec last loaded for (op_unwinder_on_exec), 0 if none */
	struct op_unwind_proc *bpf; /* what unwind_procs holds for this pid */
	int *files;		    /* file_ent indices referenced (refs counted) */
	int n_files;
};

struct extent {
	uint32_t start, len;
};

struct op_unwinder {
	int rows_fd, rules_fd, tables_fd, procs_fd;
	uint32_t max_rows, max_rules, max_tables, max_procs;

	struct extent *free_ext; /* free row ranges, sorted by start, coalesced */
	size_t n_free, cap_free;

	bool *slot_used;
	uint64_t saved_bytes; /* rows of evicted tables kept (file_ent.saved) */

	struct op_unwind_rule *rules; /* global rule set (index = BPF key) */
	uint32_t n_rules;
	uint32_t *rule_hash; /* open addressing, UINT32_MAX empty */
	uint32_t rule_hash_cap;

	struct file_ent *files;
	int n_files;
	int vdso_file; /* index, or -1 (not compiled yet), -2 (unavailable) */

	struct proc_ent *procs[PROC_BUCKETS];
	uint64_t table_bytes;

	struct sampler_bpf *skel;
	struct op_sampler *sampler; /* its programs, in either of the object's instances */
	const struct op_runtime *runtimes[OP_RUNTIME_MAX]; /* by kind; NULL: not enabled */
	struct op_unwinder_stats st;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---------------------------------------------------------------- row space */

static int rows_alloc(struct op_unwinder *u, uint32_t n, uint32_t *start)
{
	for (size_t i = 0; i < u->n_free; i++) {
		if (u->free_ext[i].len < n)
			continue;
		*start = u->free_ext[i].start;
		u->free_ext[i].start += n;
		u->free_ext[i].len -= n;
		if (!u->free_ext[i].len) {
			memmove(&u->free_ext[i], &u->free_ext[i + 1],
				(u->n_free - i - 1) * sizeof(*u->free_ext));
			u->n_free--;
		}
		return 0;
	}
	return -ENOSPC;
}

static void rows_free(struct op_unwinder *u, uint32_t start, uint32_t n)
{
	size_t i = 0;

	if (u->n_free == u->cap_free) {
		size_t nc = u->cap_free * 2;
		struct extent *ne = realloc(u->free_ext, nc * sizeof(*ne));

		if (!ne) {
			/* cannot record it: the rows stay allocated (lost, never reused) */
			op_warn("unwind: out of memory; %u unwind rows are not reused", n);
			return;
		}
		u->free_ext = ne;
		u->cap_free = nc;
	}
	while (i < u->n_free && u->free_ext[i].start < start)
		i++;
	memmove(&u->free_ext[i + 1], &u->free_ext[i], (u->n_free - i) * sizeof(*u->free_ext));
	u->free_ext[i] = (struct extent){ start, n };
	u->n_free++;
	if (i + 1 < u->n_free &&
	    u->free_ext[i].start + u->free_ext[i].len == u->free_ext[i + 1].start) {
		u->free_ext[i].len += u->free_ext[i + 1].len;
		memmove(&u->free_ext[i + 1], &u->free_ext[i + 2],
			(u->n_free - i - 2) * sizeof(*u->free_ext));
		u->n_free--;
	}
	if (i > 0 && u->free_ext[i - 1].start + u->free_ext[i - 1].len == u->free_ext[i].start) {
		u->free_ext[i - 1].len += u->free_ext[i].len;
		memmove(&u->free_ext[i], &u->free_ext[i + 1],
			(u->n_free - i - 1) * sizeof(*u->free_ext));
		u->n_free--;
	}
}

/* ---------------------------------------------------------------- rules */

static uint32_t hash_rule(const struct op_unwind_rule *r)
{
	const uint8_t *p = (const uint8_t *)r;
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < sizeof(*r); i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

/* Double the rule hash (up to twice the rule map's size): it grows with use. */
static int rule_hash_grow(struct op_unwinder *u)
{
	uint32_t nc = u->rule_hash_cap * 2, *nh;

	if (nc < u->rule_hash_cap || u->rule_hash_cap >= 2 * (uint64_t)u->max_rules)
		return -ENOSPC;
	nh = malloc((size_t)nc * sizeof(*nh));
	if (!nh)
		return -ENOMEM;
	memset(nh, 0xff, (size_t)nc * sizeof(*nh));
	for (uint32_t i = 0; i < u->n_rules; i++) {
		uint32_t j = hash_rule(&u->rules[i]) & (nc - 1);

		while (nh[j] != UINT32_MAX)
			j = (j + 1) & (nc - 1);
		nh[j] = i;
	}
	free(u->rule_hash);
	u->rule_hash = nh;
	u->rule_hash_cap = nc;
	return 0;
}

/* Global index of @r, adding it to the BPF rule map if new; UINT32_MAX when full. */
static uint32_t global_rule(struct op_unwinder *u, const struct op_unwind_rule *r)
{
	uint32_t j;

	if (u->n_rules * 2 >= u->rule_hash_cap)
		rule_hash_grow(u); /* on failure, a full table refuses new rules below */
	j = hash_rule(r) & (u->rule_hash_cap - 1);
	while (u->rule_hash[j] != UINT32_MAX) {
		if (!memcmp(&u->rules[u->rule_hash[j]], r, sizeof(*r)))
			return u->rule_hash[j];
		j = (j + 1) & (u->rule_hash_cap - 1);
	}
	if (u->n_rules >= u->max_rules || u->n_rules * 2 >= u->rule_hash_cap)
		return UINT32_MAX;
	if (bpf_map_update_elem(u->rules_fd, &u->n_rules, r, BPF_ANY))
		return UINT32_MAX;
	u->rules[u->n_rules] = *r;
	u->rule_hash[j] = u->n_rules;
	u->table_bytes += sizeof(*r);
	return u->n_rules++;
}

/* ---------------------------------------------------------------- tables */

static void saved_drop(struct op_unwinder *u, struct file_ent *f)
{
	if (!f->saved)
		return;
	free(f->saved);
	f->saved = NULL;
	u->saved_bytes -= (uint64_t)f->saved_slots * sizeof(struct op_unwind_row);
	u->st.saved_bytes = u->saved_bytes;
}

/* Map rows [start, start + n) of unwind_rows; *base and *len to munmap. NULL on failure. */
static struct op_unwind_row *rows_map(struct op_unwinder *u, uint32_t start, uint32_t n,
				      void **base, size_t *len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t lo = (size_t)start * sizeof(struct op_unwind_row);
	size_t hi = lo + (size_t)n * sizeof(struct op_unwind_row);
	size_t off = lo & ~(page - 1);
	char *m;

	*len = ((hi + page - 1) & ~(page - 1)) - off;
	m = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_SHARED, u->rows_fd, (off_t)off);
	if (m == MAP_FAILED)
		return NULL;
	*base = m;
	return (struct op_unwind_row *)(m + (lo - off));
}

/*
 * Keep an evicted table's rows (rule indices stay valid: rules are never evicted; row pcs and
 * the index are relative to the table), making room within SAVED_BUDGET.
 */
static void saved_keep(struct op_unwinder *u, struct file_ent *f, const struct op_unwind_table *te)
{
	uint64_t bytes = (uint64_t)f->n_slots * sizeof(struct op_unwind_row);
	struct op_unwind_row *rows;
	size_t len;
	void *m;

	if (bytes > SAVED_BUDGET)
		return;
	while (u->saved_bytes + bytes > SAVED_BUDGET) {
		struct file_ent *old = NULL;

		for (int i = 0; i < u->n_files; i++)
			if (u->files[i].saved &&
			    (!old || u->files[i].last_used_ns < old->last_used_ns))
				old = &u->files[i];
		if (!old)
			return;
		saved_drop(u, old);
	}
	f->saved = malloc(bytes);
	if (!f->saved)
		return;
	rows = rows_map(u, f->first_row, f->n_slots, &m, &len);
	if (!rows) {
		free(f->saved);
		f->saved = NULL;
		return;
	}
	memcpy(f->saved, rows, bytes);
	munmap(m, len);
	f->saved_te = *te;
	f->saved_te.first_row = 0;
	f->saved_te.index_row = te->n_buckets ? te->index_row - te->first_row : 0;
	f->saved_slots = f->n_slots;
	u->saved_bytes += bytes;
	u->st.saved_bytes = u->saved_bytes;
}

static void unload_table(struct op_unwinder *u, struct file_ent *f)
{
	struct op_unwind_table empty = { 0 }, te;
	uint32_t slot;

	if (f->slot < 0)
		return;
	slot = (uint32_t)f->slot;
	if (!f->saved && bpf_map_lookup_elem(u->tables_fd, &slot, &te) == 0 &&
	    te.first_row == f->first_row)
		saved_keep(u, f, &te);
	bpf_map_update_elem(u->tables_fd, &slot, &empty, BPF_ANY); /* slot first */
	rows_free(u, f->first_row, f->n_slots);
	u->slot_used[slot] = false;
	u->table_bytes -= (uint64_t)f->n_slots * sizeof(struct op_unwind_row);
	f->slot = -1;
	u->st.tables--;
	u->st.evicted++;
}

/* Evict the least recently used table no process references. False if none. */
static bool evict_one(struct op_unwinder *u)
{
	struct file_ent *victim = NULL;

	for (int i = 0; i < u->n_files; i++) {
		struct file_ent *f = &u->files[i];

		if (f->slot >= 0 && !f->refs && (!victim || f->last_used_ns < victim->last_used_ns))
			victim = f;
	}
	if (!victim)
		return false;
	op_debug("unwind: evicting table %s (%u rows)", victim->id, victim->n_slots);
	unload_table(u, victim);
	return true;
}

/* Rows a new table could get: free ones plus those of tables no process references. */
static uint64_t rows_obtainable(const struct op_unwinder *u)
{
	uint64_t n = 0;

	for (size_t i = 0; i < u->n_free; i++)
		n += u->free_ext[i].len;
	for (int i = 0; i < u->n_files; i++)
		if (u->files[i].slot >= 0 && !u->files[i].refs)
			n += u->files[i].n_slots;
	return n;
}

/* unwind_rows a table takes: its rows, then its bucket index, two entries a slot. */
static size_t table_slots(const struct op_cfi_table *t, unsigned int *shift, size_t *n_index)
{
	*n_index = op_cfi_index_entries(t, shift);
	return t->n_rows + (*n_index + 1) / 2;
}

static int load_table(struct op_unwinder *u, struct file_ent *f, const struct op_cfi_table *t)
{
	struct op_unwind_table te = { 0 };
	uint32_t *map, *index = NULL, slot, start, n_slots;
	unsigned int shift;
	size_t n_index, total = table_slots(t, &shift, &n_index);
	int err;

	if (total > u->max_rows)
		return -E2BIG;
	n_slots = (uint32_t)total;
	/* evict only when that makes room: never empty the map for a table that cannot fit */
	if (n_slots > rows_obtainable(u))
		return -ENOSPC;
	for (;;) {
		for (slot = 0; slot < u->max_tables && u->slot_used[slot]; slot++)
			;
		if (slot < u->max_tables && !rows_alloc(u, n_slots, &start))
			break;
		if (!evict_one(u))
			return -ENOSPC;
	}
	map = malloc(t->n_rules * sizeof(*map));
	if (n_index)
		index = calloc(n_index + 1, sizeof(*index)); /* + 1: a whole last slot */
	if (!map || (n_index && !index)) {
		free(map);
		free(index);
		rows_free(u, start, n_slots);
		return -ENOMEM;
	}
	op_cfi_index_fill(t, shift, index, n_index);
	for (size_t i = 0; i < t->n_rules; i++) {
		map[i] = global_rule(u, &t->rules[i]);
		if (map[i] == UINT32_MAX) {
			free(map);
			free(index);
			rows_free(u, start, n_slots);
			op_warn("unwind: rule table full (%u rules); %s walks by frame pointers",
				u->n_rules, f->id);
			return -ENOSPC;
		}
	}
	{
		size_t page = (size_t)sysconf(_SC_PAGESIZE);
		size_t lo = (size_t)start * sizeof(struct op_unwind_row);
		size_t hi = lo + (size_t)n_slots * sizeof(struct op_unwind_row);
		size_t off = lo & ~(page - 1), len = ((hi + page - 1) & ~(page - 1)) - off;
		struct op_unwind_row *rows;
		char *m =
			mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, u->rows_fd, (off_t)off);

		if (m == MAP_FAILED) {
			err = -errno;
			free(map);
			free(index);
			rows_free(u, start, n_slots);
			op_warn("unwind: cannot map unwind rows: %s", strerror(-err));
			return err;
		}
		rows = (struct op_unwind_row *)(m + (lo - off));
		for (size_t i = 0; i < t->n_rows; i++) {
			rows[i].pc = t->rows[i].pc;
			rows[i].rule = map[t->rows[i].rule];
		}
		for (size_t k = 0; k < n_index; k += 2) {
			rows[t->n_rows + k / 2].pc = index[k];
			rows[t->n_rows + k / 2].rule = index[k + 1];
		}
		munmap(m, len);
	}
	free(map);
	free(index);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	te.first_row = start;
	te.n_rows = (uint32_t)t->n_rows;
	if (n_index) {
		te.index_row = start + (uint32_t)t->n_rows;
		te.n_buckets = (uint32_t)n_index - 1;
		te.bucket_shift = shift;
	}
	err = bpf_map_update_elem(u->tables_fd, &slot, &te, BPF_ANY);
	if (err) {
		rows_free(u, start, n_slots);
		return -errno;
	}
	u->slot_used[slot] = true;
	f->slot = (int)slot;
	f->first_row = start;
	f->n_slots = n_slots;
	f->base = t->base;
	u->table_bytes += (uint64_t)n_slots * sizeof(struct op_unwind_row);
	u->st.tables++;
	return 0;
}

/* Load @f's table again from the rows kept when it was evicted: no compile. */
static int load_saved(struct op_unwinder *u, struct file_ent *f)
{
	struct op_unwind_table te = f->saved_te;
	struct op_unwind_row *src = f->saved, *rows;
	uint32_t slot, start, n = f->saved_slots;
	size_t len;
	void *m;
	int err;

	if (n > rows_obtainable(u))
		return -ENOSPC;
	/* ours now: making room below may evict (and keep) other tables, never drop this copy */
	f->saved = NULL;
	u->saved_bytes -= (uint64_t)n * sizeof(*src);
	u->st.saved_bytes = u->saved_bytes;
	for (;;) {
		for (slot = 0; slot < u->max_tables && u->slot_used[slot]; slot++)
			;
		if (slot < u->max_tables && !rows_alloc(u, n, &start))
			break;
		if (!evict_one(u)) {
			free(src);
			return -ENOSPC;
		}
	}
	rows = rows_map(u, start, n, &m, &len);
	if (!rows) {
		err = -errno;
		free(src);
		rows_free(u, start, n);
		return err;
	}
	memcpy(rows, src, (size_t)n * sizeof(*rows));
	munmap(m, len);
	free(src);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	te.first_row = start;
	if (te.n_buckets)
		te.index_row += start;
	if (bpf_map_update_elem(u->tables_fd, &slot, &te, BPF_ANY)) {
		err = -errno;
		rows_free(u, start, n);
		return err;
	}
	u->slot_used[slot] = true;
	f->slot = (int)slot;
	f->first_row = start;
	f->n_slots = n;
	u->table_bytes += (uint64_t)n * sizeof(struct op_unwind_row);
	u->st.tables++;
	u->st.reloaded++;
	op_debug("unwind: table %s loaded again from its kept rows (%u), not compiled", f->id, n);
	return 0;
}

static void read_loads(Elf *elf, struct file_ent *f)
{
	size_t n;

	f->n_load = 0;
	if (elf_getphdrnum(elf, &n))
		return;
	for (size_t i = 0; i < n && f->n_load < MAX_LOADS; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		f->load[f->n_load++] = (struct load_seg){ ph.p_vaddr, ph.p_offset, ph.p_filesz,
							  (ph.p_flags & PF_X) != 0 };
	}
}

/* Compile @t's source (fd or memory image) into file entry @f and load it. */
static void compile_into(struct op_unwinder *u, struct file_ent *f, int fd, const void *img,
			 size_t img_size)
{
	struct op_cfi_table *t = NULL;
	uint64_t t0 = now_ns();
	unsigned int shift;
	size_t n_index;
	Elf *elf;
	int err;

	elf_version(EV_CURRENT);
	elf = img ? elf_memory((char *)img, img_size) : elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf) {
		read_loads(elf, f);
		elf_end(elf);
	}
	err = img ? op_cfi_compile_mem(img, img_size, &t) : op_cfi_compile_fd(fd, &t);
	u->st.compile_ns += now_ns() - t0;
	u->st.compiled++;
	if (err) {
		op_debug("unwind: no CFI table for %s: %s", f->id, strerror(-err));
		f->fp = true;
		return;
	}
	op_debug("unwind: table of %s compiled: %zu rows in %.1f ms", f->id,
		 table_slots(t, &shift, &n_index), (double)(now_ns() - t0) / 1e6);
	err = load_table(u, f, t);
	if (err)
		u->st.tables_full++;
	if (err == -E2BIG) {
		op_warn("unwind: the table of %s has %zu rows, more than the %u the map holds; "
			"its code is walked by frame pointers",
			f->id, table_slots(t, &shift, &n_index), u->max_rows);
		f->fp = true;
	} else if (err) {
		/* back off: without this every refresh of every process mapping it recompiles */
		f->need_rows = (uint32_t)table_slots(t, &shift, &n_index);
		f->backoff_ns = f->backoff_ns ? f->backoff_ns * 2 : RETRY_MIN_NS;
		if (f->backoff_ns > RETRY_MAX_NS)
			f->backoff_ns = RETRY_MAX_NS;
		f->retry_ns = now_ns() + f->backoff_ns;
		op_debug("unwind: cannot load the table of %s (%zu rows): %s; retrying in %llu s",
			 f->id, table_slots(t, &shift, &n_index), strerror(-err),
			 (unsigned long long)(f->backoff_ns / 1000000000ull));
	} else {
		f->need_rows = 0;
		f->backoff_ns = 0;
	}
	op_cfi_table_free(t);
}

static struct file_ent *new_file(struct op_unwinder *u)
{
	struct file_ent *f;

	if (u->n_files == MAX_FILES) {
		/* forget a file no process uses and with no loaded table */
		for (int i = 0; i < u->n_files; i++) {
			if (!u->files[i].refs && u->files[i].slot < 0 && i != u->vdso_file) {
				saved_drop(u, &u->files[i]);
				u->files[i] = u->files[--u->n_files];
				if (u->vdso_file == u->n_files)
					u->vdso_file = i;
				break;
			}
		}
		if (u->n_files == MAX_FILES)
			return NULL;
	}
	f = &u->files[u->n_files++];
	memset(f, 0, sizeof(*f));
	f->slot = -1;
	return f;
}

static int vdso_file(struct op_unwinder *u)
{
	uint64_t base = getauxval(AT_SYSINFO_EHDR);
	FILE *fp;
	char line[512];
	size_t size = 0;
	struct file_ent *f;

	if (u->vdso_file != -1)
		return u->vdso_file;
	u->vdso_file = -2;
	if (!base)
		return -2;
	fp = fopen("/proc/self/maps", "re");
	while (fp && fgets(line, sizeof(line), fp)) {
		unsigned long long lo, hi;

		if (strstr(line, "[vdso]") && sscanf(line, "%llx-%llx", &lo, &hi) == 2 &&
		    lo == base)
			size = hi - lo;
	}
	if (fp)
		fclose(fp);
	if (!size || !(f = new_file(u)))
		return -2;
	snprintf(f->id, sizeof(f->id), "[vdso]");
	compile_into(u, f, -1, (const void *)(uintptr_t)base, size);
	u->vdso_file = (int)(f - u->files);
	return u->vdso_file;
}

/* The binary behind one mapping of @pid, compiled and loaded on first sight. */
static int file_for(struct op_unwinder *u, int pid, const struct op_maps_entry *m)
{
	uint64_t dev = (uint64_t)m->dev_major << 32 | m->dev_minor;
	char path[4200], id[48];
	struct file_ent *f;
	int fd;

	for (int i = 0; i < u->n_files; i++)
		if (u->files[i].ino == m->inode && u->files[i].dev == dev && u->files[i].id[0])
			return i;
	snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", pid,
		 (unsigned long long)m->start, (unsigned long long)m->end);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(path, sizeof(path), "/proc/%d/root%s", pid, m->path);
		fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0)
		return -1;
	if (op_cfi_file_id(fd, id, sizeof(id))) {
		close(fd);
		return -1;
	}
	/* same content under another inode (another container's copy): share the table */
	for (int i = 0; i < u->n_files; i++) {
		if (!strcmp(u->files[i].id, id) && (u->files[i].slot >= 0 || u->files[i].fp)) {
			close(fd);
			if (u->n_files < MAX_FILES) {
				f = new_file(u);
				if (f) {
					*f = u->files[i];
					f->saved = NULL; /* the copy belongs to the first entry */
					f->dev = dev;
					f->ino = m->inode;
					f->refs = 0;
					/* the slot belongs to the first entry; alias by id at use
					 */
					f->slot = -1;
					f->fp = u->files[i].fp;
				}
			}
			return i;
		}
	}
	f = new_file(u);
	if (!f) {
		close(fd);
		return -1;
	}
	snprintf(f->id, sizeof(f->id), "%s", id);
	f->dev = dev;
	f->ino = m->inode;
	compile_into(u, f, fd, NULL, 0);
	close(fd);
	return (int)(f - u->files);
}

/* Bias such that ELF address = run-time address - bias, for a mapping at file @offset. */
static bool mapping_bias(const struct file_ent *f, uint64_t start, uint64_t offset, uint64_t *bias)
{
	/*
	 * An executable mapping starts at its segment's page-rounded offset, which can lie inside
	 * the file range of the read-only segment before it (lld and ld -z separate-code put the
	 * text at vaddr - offset != 0: Rust binaries, for one): the executable segment decides,
	 * the others only when none is executable.
	 */
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < f->n_load; i++) {
			const struct load_seg *s = &f->load[i];

			if (s->exec != !pass)
				continue;
			if (offset >= (s->offset & ~0xfffull) && offset < s->offset + s->filesz) {
				*bias = start - (s->vaddr - (s->offset - offset));
				return true;
			}
		}
	}
	return false;
}

/* ---------------------------------------------------------------- processes */

static struct proc_ent **proc_slot(struct op_unwinder *u, int pid)
{
	struct proc_ent **pp = &u->procs[(unsigned int)pid % PROC_BUCKETS];

	while (*pp && (*pp)->pid != pid)
		pp = &(*pp)->next;
	return pp;
}

static void proc_drop_refs(struct op_unwinder *u, struct proc_ent *p)
{
	for (int i = 0; i < p->n_files; i++)
		if (p->files[i] < u->n_files && u->files[p->files[i]].refs)
			u->files[p->files[i]].refs--;
	p->n_files = 0;
}

/* ---------------------------------------------------------------- language runtimes */

/* Drop what the runtimes attached to @p stored for it. */
static void detach_runtimes(struct op_unwinder *u, struct proc_ent *p)
{
	for (int k = 0; k < OP_RUNTIME_MAX; k++)
		if ((p->runtimes & (1u << k)) && u->runtimes[k])
			u->runtimes[k]->detach(u->runtimes[k]->ctx, p->pid);
	p->runtimes = 0;
}

/*
 * Mark [@c->start, @c->end) of @p's mappings as runtime @kind's: the mapping holding it is
 * split so that only the claimed part dispatches (an interpreter claims one function of its
 * library). False when the claim lies outside every mapping or no room is left to split.
 */
static bool apply_claim(struct op_unwind_proc *b, const struct op_runtime_claim *c, uint8_t kind)
{
	for (uint32_t i = 0; i < b->n; i++) {
		struct op_unwind_mapping e = b->m[i];
		struct op_unwind_mapping parts[3];
		uint32_t np = 0;

		if (c->start < e.start || c->end > e.end || c->start >= c->end)
			continue;
		if (c->start > e.start) {
			parts[np] = e;
			parts[np++].end = c->start;
		}
		parts[np] = e;
		parts[np].start = c->start;
		parts[np].end = c->end;
		parts[np++].runtime = kind;
		if (c->end < e.end) {
			parts[np] = e;
			parts[np++].start = c->end;
		}
		if (b->n + np - 1 > OP_UNWIND_MAX_MAPPINGS)
			return false;
		memmove(&b->m[i + np], &b->m[i + 1], (b->n - i - 1) * sizeof(b->m[0]));
		memcpy(&b->m[i], parts, np * sizeof(parts[0]));
		b->n += np - 1;
		return true;
	}
	return false;
}

/*
 * Offer @p's @n executable mappings @maps (as read, before any claim split them) to every
 * enabled runtime.
 */
static void attach_runtimes(struct op_unwinder *u, struct proc_ent *p,
			    const struct op_runtime_mapping *maps, size_t n)
{
	detach_runtimes(u, p);
	p->rt_retry = false;
	for (int k = 1; k < OP_RUNTIME_MAX; k++) {
		const struct op_runtime *rt = u->runtimes[k];
		struct op_runtime_proc rp = { .pid = p->pid, .maps = maps, .n_maps = n };
		int ret = rt ? rt->attach(rt->ctx, &rp) : 0;

		if (ret == -EAGAIN)
			p->rt_retry = true;
		if (ret <= 0)
			continue;
		p->runtimes |= 1u << k;
		for (size_t c = 0; c < rp.n_claims && c < OP_RUNTIME_MAX_CLAIMS; c++)
			if (!apply_claim(p->bpf, &rp.claims[c], (uint8_t)k))
				op_debug("unwind: pid %d: %s claim %#llx-%#llx not applied", p->pid,
					 rt->name, (unsigned long long)rp.claims[c].start,
					 (unsigned long long)rp.claims[c].end);
	}
}

int op_unwinder_add_runtime(struct op_unwinder *u, const struct op_runtime *rt)
{
	struct bpf_object *obj;
	struct bpf_map *map;
	int slots = 0;

	if (!u || !rt || !rt->kind || rt->kind >= OP_RUNTIME_MAX || !rt->attach || !rt->detach)
		return -EINVAL;
	if (rt->no_unwinder) {
		u->runtimes[rt->kind] = rt;
		return 0;
	}
	obj = u->skel->obj;
	/* every chain's tail-call array gets the runtime's program for that chain */
	bpf_object__for_each_map (map, obj) {
		const char *name = bpf_map__name(map);
		size_t len = strlen(name);
		char pname[128];
		__u32 key = rt->kind;
		int fd;

		if (bpf_map__type(map) != BPF_MAP_TYPE_PROG_ARRAY || len < 6 ||
		    strcmp(name + len - 6, "_progs"))
			continue;
		snprintf(pname, sizeof(pname), "unwind_native_%.*s", (int)(len - 6), name);
		if (op_sampler_prog_fd(u->sampler, pname) < 0)
			continue; /* a chain that is off (not loaded) */
		snprintf(pname, sizeof(pname), "unwind_%s_%.*s", rt->name, (int)(len - 6), name);
		fd = op_sampler_prog_fd(u->sampler, pname);
		if (fd < 0) {
			op_warn("unwind: no BPF program %s for the %s runtime", pname, rt->name);
			return -ENOENT;
		}
		if (bpf_map_update_elem(bpf_map__fd(map), &key, &fd, BPF_ANY)) {
			int err = -errno;

			op_warn("unwind: cannot install %s: %s", pname, strerror(-err));
			return err;
		}
		slots++;
	}
	if (!slots)
		return -ENOENT;
	u->runtimes[rt->kind] = rt;
	return 0;
}

static int refresh(struct op_unwinder *u, int pid)
{
	struct proc_ent **pp = proc_slot(u, pid), *p = *pp;
	struct op_maps_entry *m;
	struct op_runtime_mapping *rmaps = NULL;
	char path[64], *line = NULL;
	size_t cap = 0;
	FILE *fp;
	int err = 0;

	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p)
			return -ENOMEM;
		p->pid = pid;
		p->bpf = calloc(1, sizeof(*p->bpf)); /* n = 0 until /proc/PID/maps is read */
		p->files = malloc(OP_UNWIND_MAX_MAPPINGS * sizeof(*p->files));
		if (!p->bpf || !p->files) {
			free(p->bpf);
			free(p->files);
			free(p);
			return -ENOMEM;
		}
		*pp = p;
	}
	p->refreshed_ns = now_ns();
	u->st.refreshes++;
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	fp = fopen(path, "re");
	if (!fp)
		return -errno; /* gone: kept until exit so we do not retry in a loop */
	m = malloc(sizeof(*m));
	if (!m) {
		fclose(fp);
		return -ENOMEM;
	}
	/* the executable mappings as the runtimes see them (only when one is enabled) */
	for (int k = 0; k < OP_RUNTIME_MAX && !rmaps; k++)
		if (u->runtimes[k])
			rmaps = calloc(OP_UNWIND_MAX_MAPPINGS, sizeof(*rmaps));
	proc_drop_refs(u, p);
	memset(p->bpf, 0, sizeof(*p->bpf));
	while (getline(&line, &cap, fp) > 0 && p->bpf->n < OP_UNWIND_MAX_MAPPINGS) {
		struct op_unwind_mapping *e = &p->bpf->m[p->bpf->n];
		int fi;

		/* the one maps parser (lib/sample/proc.c), fuzzed and tested for odd paths */
		if (op_parse_maps_line(line, m) || !m->executable)
			continue;
		if (rmaps) {
			rmaps[p->bpf->n] =
				(struct op_runtime_mapping){ m->start, m->end, m->offset,
							     m->path[0] ? strdup(m->path) : NULL };
		}
		e->start = m->start;
		e->end = m->end;
		e->table = OP_UNWIND_TABLE_ANON;
		e->bias = 0;
		if (!strcmp(m->path, "[vdso]"))
			fi = vdso_file(u);
		else if (m->path[0] == '/')
			fi = file_for(u, pid, m);
		else
			fi = -1; /* anonymous, [vsyscall], JIT */
		if (fi >= 0) {
			struct file_ent *f = &u->files[fi];
			uint64_t bias;

			/* aliases (same id) resolve to the entry holding the slot */
			if (f->slot < 0 && !f->fp && f->id[0]) {
				for (int i = 0; i < u->n_files; i++)
					if (u->files[i].slot >= 0 &&
					    !strcmp(u->files[i].id, f->id)) {
						fi = i;
						f = &u->files[i];
						break;
					}
			}
			if (f->slot < 0 && !f->fp && f->id[0] && fi != u->vdso_file &&
			    (!f->need_rows || (p->refreshed_ns >= f->retry_ns &&
					       f->need_rows <= rows_obtainable(u)))) {
				/* evicted earlier (rows kept?), or did not fit: compile again */
				int fd = -1;

				if (!f->saved || load_saved(u, f)) {
					snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx",
						 pid, (unsigned long long)m->start,
						 (unsigned long long)m->end);
					fd = open(path, O_RDONLY | O_CLOEXEC);
				}
				if (fd >= 0) {
					compile_into(u, f, fd, NULL, 0);
					close(fd);
				}
			}
			if (f->fp) {
				e->table = OP_UNWIND_TABLE_FP;
			} else if (f->slot >= 0 && mapping_bias(f, m->start, m->offset, &bias)) {
				e->table = (uint32_t)f->slot;
				e->bias = bias + f->base;
				f->refs++;
				f->last_used_ns = p->refreshed_ns;
				p->files[p->n_files++] = fi;
			} else {
				e->table = OP_UNWIND_TABLE_FP; /* could not load: best effort */
			}
		}
		p->bpf->n++;
	}
	free(line);
	free(m);
	fclose(fp);
	if (rmaps) {
		uint32_t n = p->bpf->n;

		attach_runtimes(u, p, rmaps, n);
		for (uint32_t i = 0; i < n; i++)
			free((char *)rmaps[i].path);
		free(rmaps);
	}
	if (bpf_map_update_elem(u->procs_fd, &pid, p->bpf, BPF_ANY)) {
		err = -errno;
		u->st.procs_full++;
		/* the tables stay loaded (others may map them); this process's refs go so that
		 * eviction can reclaim tables only it used */
		proc_drop_refs(u, p);
		if (u->st.procs_full == 1) /* once: the counter tells the rest */
			op_warn("unwind: cannot store the mappings of pid %d: %s (the BPF map "
				"holds "
				"%u processes; set OTELPROF_UNWIND_MAX_PROCS to raise it); "
				"processes "
				"that do not fit are unwound by frame pointers and counted",
				pid, strerror(-err), u->max_procs);
		else
			op_debug("unwind: cannot store the mappings of pid %d: %s", pid,
				 strerror(-err));
		p->unstored = true;
	} else {
		p->unstored = false;
	}
	return err;
}

static void forget(struct op_unwinder *u, int pid)
{
	struct proc_ent **pp = proc_slot(u, pid), *p = *pp;

	if (!p)
		return;
	bpf_map_delete_elem(u->procs_fd, &pid);
	detach_runtimes(u, p);
	proc_drop_refs(u, p);
	*pp = p->next;
	free(p->bpf);
	free(p->files);
	free(p);
}

int op_unwinder_add_pid(struct op_unwinder *u, int pid)
{
	if (!u)
		return -EINVAL;
	return refresh(u, pid);
}

static bool in_known(const struct proc_ent *p, uint64_t pc)
{
	for (uint32_t i = 0; i < p->bpf->n; i++)
		if (pc >= p->bpf->m[i].start && pc < p->bpf->m[i].end)
			return true;
	return false;
}

static bool in_anon(const struct proc_ent *p, uint64_t pc)
{
	for (uint32_t i = 0; i < p->bpf->n; i++)
		if (pc >= p->bpf->m[i].start && pc < p->bpf->m[i].end)
			return p->bpf->m[i].table == OP_UNWIND_TABLE_ANON;
	return false;
}

bool op_unwinder_on_trace(struct op_unwinder *u, const struct op_trace *t)
{
	struct proc_ent *p;
	/* between fork and exec a process runs in its parent's mappings, with its tables */
	int pid = (int)(t->fork_parent ? t->fork_parent : t->hdr.pid);

	if (!u || t->unwind_error == OTELPROF_UNWIND_NO_USER_REGS ||
	    t->unwind_error == OTELPROF_UNWIND_IN_EXEC)
		return false;
	p = *proc_slot(u, pid);
	if (!p) {
		refresh(u, pid);
		return false;
	}
	/* a runtime not ready at the last refresh (a JVM starting): offer it the process again */
	if (p->rt_retry && now_ns() - p->refreshed_ns >= RT_RETRY_NS) {
		refresh(u, pid);
		return false;
	}
	/* no room last time: exits may have made some, try again at the slow rate */
	if (p->unstored) {
		if (now_ns() - p->refreshed_ns < UNSTORED_RETRY_NS)
			return false;
		refresh(u, pid);
		return false;
	}
	if (t->unwind_error != OTELPROF_UNWIND_UNKNOWN_MAPPING &&
	    t->unwind_error != OTELPROF_UNWIND_NO_TABLE)
		return false;
	if (t->n_user && t->unwind_error == OTELPROF_UNWIND_UNKNOWN_MAPPING &&
	    t->n_kernel + t->n_user <= OP_MAX_KERNEL_FRAMES + OP_MAX_USER_FRAMES) {
		uint64_t pc = t->frames[t->n_kernel + t->n_user - 1];

		/* JIT code we already know about: nothing new to learn from /proc */
		if (in_anon(p, pc))
			return false;
		if (p->quick < QUICK_REFRESHES && !in_known(p, pc) &&
		    now_ns() - p->refreshed_ns >= QUICK_REFRESH_NS) {
			p->quick++;
			refresh(u, pid);
			return true;
		}
	}
	if (now_ns() - p->refreshed_ns < REFRESH_MIN_NS)
		return false;
	refresh(u, pid);
	return false;
}

void op_unwinder_on_exec(struct op_unwinder *u, int pid, uint64_t exec_ns)
{
	struct proc_ent *p;

	if (!u)
		return;
	p = *proc_slot(u, pid);
	if (p && exec_ns && p->exec_ns == exec_ns)
		return; /* told early (OP_EV_EXEC_EARLY), now in order: loaded already */
	forget(u, pid);
	refresh(u, pid);
	p = *proc_slot(u, pid);
	if (p)
		p->exec_ns = exec_ns;
}

void op_unwinder_on_exit(struct op_unwinder *u, int pid)
{
	if (u)
		forget(u, pid);
}

uint64_t op_unwinder_table_bytes(const struct op_unwinder *u)
{
	return u ? u->table_bytes : 0;
}

void op_unwinder_stats(const struct op_unwinder *u, struct op_unwinder_stats *st)
{
	if (u)
		*st = u->st;
	else
		memset(st, 0, sizeof(*st));
}

struct op_unwinder *op_unwinder_new(struct op_sampler *sampler)
{
	struct sampler_bpf *skel = sampler ? op_sampler_skel(sampler) : NULL;
	struct op_unwinder *u;
	size_t rows_bytes;
	void *probe;

	if (!skel) {
		errno = EINVAL;
		return NULL;
	}
	u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	u->rows_fd = bpf_map__fd(skel->maps.unwind_rows);
	u->rules_fd = bpf_map__fd(skel->maps.unwind_rules);
	u->tables_fd = bpf_map__fd(skel->maps.unwind_tables);
	u->procs_fd = bpf_map__fd(skel->maps.unwind_procs);
	u->skel = skel;
	u->sampler = sampler;
	u->max_rows = bpf_map__max_entries(skel->maps.unwind_rows);
	u->max_rules = bpf_map__max_entries(skel->maps.unwind_rules);
	u->max_tables = bpf_map__max_entries(skel->maps.unwind_tables);
	u->max_procs = bpf_map__max_entries(skel->maps.unwind_procs);
	u->vdso_file = -1;
	/* the row array must be mappable: tables are written through short-lived mappings */
	rows_bytes = (size_t)sysconf(_SC_PAGESIZE);
	probe = mmap(NULL, rows_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, u->rows_fd, 0);
	if (probe == MAP_FAILED) {
		int err = errno;

		op_warn("unwind: cannot map the unwind row table: %s", strerror(err));
		free(u);
		errno = err;
		return NULL;
	}
	munmap(probe, rows_bytes);
	/* samples of processes without tables wake the reader now (bpf/sampler.bpf.c) */
	skel->bss->unwind_active = true;
	/* the rule hash starts small and doubles with use (rule_hash_grow) */
	u->rule_hash_cap = 4096;
	/* free extents: a few at a time in practice; the list grows when fragmented */
	u->cap_free = 64;
	u->free_ext = malloc(u->cap_free * sizeof(*u->free_ext));
	u->slot_used = calloc(u->max_tables, sizeof(*u->slot_used));
	u->rules = malloc((size_t)u->max_rules * sizeof(*u->rules));
	u->rule_hash = malloc((size_t)u->rule_hash_cap * sizeof(*u->rule_hash));
	u->files = malloc(MAX_FILES * sizeof(*u->files));
	if (!u->free_ext || !u->slot_used || !u->rules || !u->rule_hash || !u->files) {
		op_unwinder_free(u);
		errno = ENOMEM;
		return NULL;
	}
	memset(u->rule_hash, 0xff, (size_t)u->rule_hash_cap * sizeof(*u->rule_hash));
	u->free_ext[0] = (struct extent){ 0, u->max_rows };
	u->n_free = 1;
	return u;
}

void op_unwinder_free(struct op_unwinder *u)
{
	if (!u)
		return;
	for (int b = 0; b < PROC_BUCKETS; b++) {
		while (u->procs[b]) {
			struct proc_ent *p = u->procs[b];

			u->procs[b] = p->next;
			free(p->bpf);
			free(p->files);
			free(p);
		}
	}
	for (int i = 0; u->files && i < u->n_files; i++)
		free(u->files[i].saved);
	free(u->free_ext);
	free(u->slot_used);
	free(u->rules);
	free(u->rule_hash);
	free(u->files);
	free(u);
}

// SPDX-License-Identifier: Apache-2.0
/*
 * The unwind step of the BPF walker (bpf/unwind/step.h), compiled here as ordinary C, run
 * against recorded snapshots of this process: registers and a copy of the stack taken at
 * the bottom of a 40-deep recursion (built -O2, no frame pointers) and inside a signal
 * handler interrupting it. Tables come from the CFI compiler for this executable and libc.
 * Each recursion level records its own return address (__builtin_return_address), so the
 * truth does not depend on any unwinder: the walk must reproduce that chain, cross the
 * signal trampoline, pass through main and end cleanly at the outermost frame (_start).
 */
#include <link.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Snapshot reader used by the step code instead of bpf_probe_read_user. */
struct snapshot {
	uint64_t pc, sp, bp;
	uint64_t base; /* == sp at capture */
	size_t len;
	uint8_t *mem;
};

static struct snapshot *cur_snap;

static int snap_read(uint64_t *dst, uint64_t addr)
{
	if (addr < cur_snap->base || addr + 8 > cur_snap->base + cur_snap->len || addr + 8 < addr)
		return -1;
	memcpy(dst, cur_snap->mem + (addr - cur_snap->base), 8);
	return 0;
}

#include "bpf/unwind/step.h"
#include "unwind/cfi.h"
#include "check.h"

/* bpf/unwind/read_user.h: the step reads the snapshot instead of bpf_probe_read_user */
int op_read_user8(void *dst, __u64 addr)
{
	return snap_read(dst, addr);
}

#define DEPTH 40

static uint64_t stack_top;
static uint64_t truth[DEPTH + 1]; /* truth[d]: return address of recursion level d */
static uint64_t main_ret;	  /* main's return address (into libc) */
static struct snapshot snap_plain, snap_signal;
static volatile int sink;

/*
 * Copy live stack bytes, redzones of other frames included: invisible to AddressSanitizer
 * (SANITIZE=1), which would report the read of those redzones.
 */
__attribute__((no_sanitize_address, noinline)) static void stack_copy(void *dst, uint64_t src,
								       size_t len)
{
	volatile const uint8_t *s = (volatile const uint8_t *)(uintptr_t)src;
	uint8_t *d = dst;

	for (size_t i = 0; i < len; i++)
		d[i] = s[i];
}

/* Capture pc/sp/bp of the calling point and copy the live stack. Must be inlined. */
#define CAPTURE(s)                                                                    \
	do {                                                                          \
		__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2" \
				 : "=r"((s)->pc), "=r"((s)->sp), "=r"((s)->bp));      \
		(s)->base = (s)->sp;                                                  \
		(s)->len = stack_top - (s)->sp;                                       \
		(s)->mem = malloc((s)->len);                                          \
		if ((s)->mem)                                                         \
			stack_copy((s)->mem, (s)->sp, (s)->len);                      \
	} while (0)

static void on_signal(int sig)
{
	(void)sig;
	CAPTURE(&snap_signal);
}

__attribute__((noinline)) static int rec(int d)
{
	int r;

	truth[d] = (uint64_t)__builtin_return_address(0);
	if (d == DEPTH) {
		CAPTURE(&snap_plain);
		raise(SIGUSR1);
		return sink;
	}
	r = rec(d + 1);
	__asm__ volatile("" ::: "memory");
	return r + d; /* keeps the call from becoming a tail call */
}

struct object {
	uint64_t bias;
	uint64_t lo, hi; /* executable range, run-time addresses */
	struct op_cfi_table *t;
};

static struct object objs[64];
static int n_objs;

static int add_object(struct dl_phdr_info *info, size_t size, void *data)
{
	char path[4096];
	uint64_t lo = UINT64_MAX, hi = 0;

	(void)size;
	(void)data;
	if (n_objs == 64)
		return 1;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		if (info->dlpi_addr + ph->p_vaddr < lo)
			lo = info->dlpi_addr + ph->p_vaddr;
		if (info->dlpi_addr + ph->p_vaddr + ph->p_memsz > hi)
			hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
	}
	if (hi == 0)
		return 0;
	snprintf(path, sizeof(path), "%s",
		 info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : "/proc/self/exe");
	objs[n_objs] = (struct object){ info->dlpi_addr, lo, hi, NULL };
	if (op_cfi_compile_path(path, &objs[n_objs].t) == 0)
		n_objs++;
	return 0;
}

/* Walk @s; fills pcs[], returns the frame count; *end_ok tells whether it ended cleanly. */
static int walk(struct snapshot *s, uint64_t *pcs, int max, bool *end_ok, bool *crossed_signal)
{
	struct op_unwind_regs r;
	int n = 0;

	memset(&r, 0, sizeof(r));
	r.pc = s->pc;
	r.sp = s->sp;
	r.bp = s->bp;
	r.bp_valid = 1;
	r.leaf = 1;
	r.exact_pc = 1;
	cur_snap = s;
	*end_ok = false;
	*crossed_signal = false;
	while (n < max) {
		const struct op_unwind_rule *rule = NULL;
		uint64_t look = r.exact_pc ? r.pc : r.pc - 1;
		int ret;

		pcs[n++] = r.pc;
		for (int i = 0; i < n_objs; i++)
			if (look >= objs[i].lo && look < objs[i].hi)
				rule = op_cfi_lookup(objs[i].t, look - objs[i].bias);
		if (!rule) {
			fprintf(stderr, "frame %d: pc %#llx not covered\n", n - 1,
				(unsigned long long)r.pc);
			return n;
		}
		if (rule->flags & OP_RULE_SIGNAL)
			*crossed_signal = true;
		ret = op_unwind_step(&r, rule);
		if (ret == OP_STEP_END) {
			*end_ok = true;
			return n;
		}
		if (ret < 0) {
			fprintf(stderr, "frame %d: pc %#llx: step error %d\n", n - 1,
				(unsigned long long)r.pc, -ret);
			return n;
		}
	}
	return n;
}

/* truth[DEPTH..0] then main_ret must appear as consecutive frames of pcs. */
static bool has_chain(const uint64_t *pcs, int n)
{
	for (int i = 0; i < n; i++) {
		if (pcs[i] != truth[DEPTH])
			continue;
		int k = 0;

		while (k <= DEPTH && i + k < n && pcs[i + k] == truth[DEPTH - k])
			k++;
		if (k == DEPTH + 1 && i + k < n && pcs[i + k] == main_ret)
			return true;
	}
	return false;
}

static void find_stack_top(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4200];
	unsigned long long lo, hi;
	uint64_t here = (uint64_t)(uintptr_t)&line;

	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx-%llx", &lo, &hi) == 2 && here >= lo && here < hi)
			stack_top = hi;
	}
	if (f)
		fclose(f);
}

int main(void)
{
	uint64_t pcs[256];
	bool end_ok, sig;
	int n;

	main_ret = (uint64_t)__builtin_return_address(0);
	find_stack_top();
	if (!stack_top)
		SKIP("cannot find this thread's stack in /proc/self/maps");
	signal(SIGUSR1, on_signal);
	sink = rec(0);
	REQUIRE(snap_plain.mem && snap_signal.mem);

	dl_iterate_phdr(add_object, NULL);
	REQUIRE(n_objs >= 2); /* this executable and libc at least */

	n = walk(&snap_plain, pcs, 256, &end_ok, &sig);
	printf("plain snapshot: %d frames, %s\n", n, end_ok ? "complete" : "incomplete");
	CHECK(end_ok);
	CHECK(has_chain(pcs, n));
	CHECK(!sig);
	/* leaf, 41 levels, main, libc start code, _start */
	CHECK(n >= DEPTH + 1 + 2);

	n = walk(&snap_signal, pcs, 256, &end_ok, &sig);
	printf("signal snapshot: %d frames, %s, %s the signal frame\n", n,
	       end_ok ? "complete" : "incomplete", sig ? "crossed" : "did not cross");
	CHECK(end_ok);
	CHECK(sig);
	CHECK(has_chain(pcs, n));

	/* A damaged stack must end in an error, never loop or invent an endless chain. */
	uint64_t *words = (uint64_t *)snap_plain.mem;

	for (size_t i = 0; i < snap_plain.len / 8; i++)
		if (words[i] == truth[DEPTH - 5])
			words[i] = 0x1234; /* no object there */
	n = walk(&snap_plain, pcs, 256, &end_ok, &sig);
	CHECK(!end_ok);
	CHECK(n < DEPTH);

	for (int i = 0; i < n_objs; i++)
		op_cfi_table_free(objs[i].t);
	free(snap_plain.mem);
	free(snap_signal.mem);
	return check_done();
}

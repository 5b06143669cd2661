/* SPDX-License-Identifier: Apache-2.0 */
/*
 * User half of the CFI unwinder (bpf/unwind/native.bpf.h): compiles unwind tables
 * (lib/unwind/cfi.c) for the binaries a process maps, loads them into the sampler's BPF maps once
 * per file identity (build id, else content hash) however many processes map them, and keeps each
 * process's address ranges → (table, bias) current: on first sight of a pid, on exec, and
 * when a sample ends in an unknown mapping or a missing table (dlopen, mmap), rate-limited.
 * Row space is bounded by the BPF map; tables no live process references are evicted
 * first-fit/LRU when a new one does not fit.
 *
 * Not thread-safe: the caller serialises (otelprof.c calls it under its lock).
 */
#ifndef OTELPROF_UNWIND_H
#define OTELPROF_UNWIND_H

#include <stdint.h>

#include "bpf/types.h"

struct op_unwinder;
struct sampler_bpf;
struct op_sampler;

struct op_runtime;

/* Uses the maps of the loaded skeleton @skel. NULL with errno set on failure. */
struct op_unwinder *op_unwinder_new(struct op_sampler *sampler);
void op_unwinder_free(struct op_unwinder *u);

/* Read @pid's mappings and load what it needs now (targets known in advance). */
int op_unwinder_add_pid(struct op_unwinder *u, int pid);
/*
 * Every trace record: first sight of a pid, or an unknown PC, (re)loads that process. True
 * when it re-read the process's mappings because the PC lay outside all of them (something
 * was mapped since they were read: libc after exec, a dlopen); a few times per process.
 */
bool op_unwinder_on_trace(struct op_unwinder *u, const struct op_trace *t);
/*
 * @pid exec'd at @exec_ns (CLOCK_MONOTONIC): its new program's tables. Told twice, ahead of
 * the samples queued before the exec and then in order, it loads once.
 */
void op_unwinder_on_exec(struct op_unwinder *u, int pid, uint64_t exec_ns);
void op_unwinder_on_exit(struct op_unwinder *u, int pid);

/*
 * Enable a language runtime (lib/unwind/runtime.h): its BPF programs go into every chain's
 * tail-call array, and it is offered each process's mappings from now on. @rt must outlive
 * the unwinder. 0, -EINVAL, -ENOENT (the BPF object has no program for it) or a map error.
 */
int op_unwinder_add_runtime(struct op_unwinder *u, const struct op_runtime *rt);

/* Bytes of unwind rows and rules loaded into BPF maps. */
uint64_t op_unwinder_table_bytes(const struct op_unwinder *u);

struct op_unwinder_stats {
	uint64_t tables;   /* tables loaded now */
	uint64_t compiled; /* tables compiled (cache misses) */
	uint64_t evicted;
	uint64_t refreshes;  /* process mapping reloads */
	uint64_t compile_ns; /* time spent compiling tables */
	/* BPF maps full: a process whose mappings could not be stored (its stacks use frame
	 * pointers until a later refresh finds room), a table that did not fit (rows, rules
	 * or slots; its code uses frame pointers until a retry fits) */
	uint64_t procs_full;
	uint64_t tables_full;
	/*
	 * Evicted tables whose rows were kept in memory (within a byte budget) and loaded again
	 * without compiling when a process mapped the binary again; bytes kept now.
	 */
	uint64_t reloaded;
	uint64_t saved_bytes;
};
void op_unwinder_stats(const struct op_unwinder *u, struct op_unwinder_stats *st);

#endif

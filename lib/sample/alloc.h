/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Allocation probes (bpf/sample/alloc.bpf.h): finds a process's allocator - glibc, jemalloc,
 * tcmalloc or mimalloc, as a library it maps, or an executable that defines malloc itself -
 * and attaches the entry uprobes and the return uprobe to its functions, found by symbol.
 */
#ifndef OTELPROF_ALLOC_H
#define OTELPROF_ALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sampler_bpf;
struct op_alloc_probes;

/* The sampling table for @mean bytes (alloc_exp), then the probe set. NULL: errno. */
struct op_alloc_probes *op_alloc_probes_new(struct sampler_bpf *skel, uint64_t mean);
void op_alloc_probes_free(struct op_alloc_probes *a);
/* Remove every probe (no new samples); op_alloc_probe_process() attaches again. */
void op_alloc_probes_detach(struct op_alloc_probes *a);

/*
 * Probe the allocators @pid maps now. @only_pid: the probes fire in @pid only (a target
 * process); else in every process that runs the same files (whole-system). Files already
 * probed are skipped. Returns the number of allocator files probed now, or a negative error
 * (logged) when none could be.
 */
int op_alloc_probe_process(struct op_alloc_probes *a, int pid, bool only_pid);

/* Forget a sampled allocation of @pid (its process is gone): the in-use map entry. */
void op_alloc_forget(struct op_alloc_probes *a, int pid, uint64_t addr);
/* @pid is gone: forget that it sampled in-process. */
void op_alloc_forget_pid(struct op_alloc_probes *a, int pid);
/* Whether @path is the in-process sampler, libotelprof_alloc.so (its frames are not shown). */
bool op_alloc_is_preload(const char *path);

/*
 * The allocator functions an ELF image defines: @off[i] is the file offset of the function
 * op_alloc_sym_name(i) (0: absent), for i < OP_ALLOC_NSYMS. Returns how many, or -ENOEXEC.
 * Pure (outside input: fuzzed).
 */
#define OP_ALLOC_NSYMS 13
int op_alloc_syms_mem(const void *image, size_t size, uint64_t *off);
const char *op_alloc_sym_name(size_t i);

/* P(an allocation of @size bytes is sampled) at mean @mean: 1 - exp(-size / mean). */
double op_alloc_probability(uint64_t size, uint64_t mean);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* The custom-labels TLS ABI v1 (customlabels.c): fills label_procs for processes using it. */
#ifndef OTELPROF_CUSTOMLABELS_H
#define OTELPROF_CUSTOMLABELS_H

#include <stdint.h>

#include "bpf/types.h"

struct op_runtime;
struct op_runtime_env;

struct op_runtime *op_customlabels_runtime_new(const struct op_runtime_env *env);

struct op_customlabels_stats {
	uint64_t processes;   /* processes whose labels are read now */
	uint64_t bad_version; /* custom_labels_abi_version other than 1 */
	uint64_t unresolved;  /* the variable's TLS offset could not be found */
	uint64_t map_full;    /* label_procs had no room */
};
void op_customlabels_stats(const struct op_runtime *rt, struct op_customlabels_stats *st);

/*
 * Offset from the thread pointer of the TLS symbol at @st_value in an executable whose
 * PT_TLS has @memsz, @align and @vaddr (x86-64 variant II, glibc's placement). Pure.
 */
int64_t op_customlabels_exe_tls_offset(uint64_t memsz, uint64_t align, uint64_t vaddr,
				       uint64_t st_value);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* Go pprof labels (golabels.c): the runtime that fills label_procs for Go programs. */
#ifndef OTELPROF_GOLABELS_H
#define OTELPROF_GOLABELS_H

#include <stdint.h>

#include "bpf/types.h"

struct op_runtime;
struct op_runtime_env;
struct op_runtime_mapping;
struct op_filecache;

struct op_runtime *op_golabels_runtime_new(const struct op_runtime_env *env);

struct op_golabels_stats {
	uint64_t processes;	  /* Go processes whose labels are read now */
	uint64_t from_dwarf;	  /* layouts found in a binary's DWARF (version not in the table) */
	uint64_t unknown_version; /* Go programs whose labels cannot be read: no table row, no DWARF
				   */
	uint64_t map_full;	  /* label_procs had no room */
};
void op_golabels_stats(const struct op_runtime *rt, struct op_golabels_stats *st);

/* The layout of Go release @version ("go1.22.12") from the table; -ENOENT if unknown. */
int op_golabels_layout(const char *version, struct op_label_proc *out);
/*
 * The layout from the DWARF of the ELF file open on @fd (runtime.g.m, runtime.m.curg,
 * runtime.g.labels; go_hmap is left for the caller, who knows the release); -ENOENT when
 * it lacks one of them.
 */
int op_golabels_layout_dwarf_fd(int fd, struct op_label_proc *out);
/* Same, for the binary @pid maps at @m. */
int op_golabels_layout_dwarf(struct op_filecache *files, int pid,
			     const struct op_runtime_mapping *m, struct op_label_proc *out);

#endif

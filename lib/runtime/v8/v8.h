/* SPDX-License-Identifier: Apache-2.0 */
/*
 * V8 (Node.js) JavaScript frames without any flag (v8.c): detection by the binary's v8dbg_*
 * post-mortem constants, the BPF layout (bpf/runtime/v8.bpf.h), the claims of V8's code, and
 * the naming of a frame from its SharedFunctionInfo.
 */
#ifndef OTELPROF_V8_H
#define OTELPROF_V8_H

#include <stdbool.h>
#include <stdint.h>

struct op_runtime;
struct op_runtime_env;

struct op_runtime *op_v8_runtime_new(const struct op_runtime_env *env);

/*
 * What the V8 runtime did and why frames stayed native: the one list of its reasons.
 * bpf_* are the BPF unwinder's counters (enum op_v8_counter).
 */
struct op_v8_stats {
	uint64_t processes;	 /* V8 processes unwound now */
	uint64_t unknown_layout; /* V8 processes of a version or build we do not know: native */
	uint64_t map_full;	 /* v8_procs had no room: native */
	uint64_t named;		 /* frames named */
	uint64_t unnamed;	 /* frames whose function moved or was freed: OP_V8_MOVED */
	uint64_t bpf_frames;	 /* JavaScript frames recorded */
	uint64_t bpf_no_proc;	 /* V8 code met without the process's layout */
	uint64_t bpf_bad_fp;	 /* walks ended at an unreadable frame pointer */
	uint64_t bpf_not_jsfunc; /* frames with a context but no JSFunction: not recorded */
	uint64_t bpf_bad_sfi;	 /* JSFunctions without a SharedFunctionInfo: not recorded */
};
void op_v8_stats(const struct op_runtime *rt, struct op_v8_stats *st);

/*
 * Read V8's post-mortem constants from the ELF file on @fd (the detection attach() runs; for
 * tests and fuzzing): 1 and the V8 release in @major/@minor when its layout is known, 0 when
 * the file has no v8dbg_ constants, -ENOTSUP when it is a V8 we cannot read.
 */
int op_v8_probe_fd(int fd, int *major, int *minor);

/*
 * The name of a frame whose SharedFunctionInfo is no longer the one sampled (the GC moved or
 * freed it before it was named): a marker, never the name of what lives there now.
 */
#define OP_V8_MOVED "[v8: function moved]"

/*
 * The naming decision: the frame's function is still the one sampled when the object at its
 * address is a SharedFunctionInfo (@is_sfi, its words readable) whose name word @name_word has
 * the check the BPF walk put in @payload's top bits (OP_V8_CHECK). Else it is OP_V8_MOVED.
 */
bool op_v8_same_function(bool is_sfi, uint64_t name_word, uint64_t payload);

/* A V8 version the layout is known for (major.minor). */
int op_v8_version_known(int major, int minor);

#endif

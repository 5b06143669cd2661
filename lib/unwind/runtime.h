/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A language runtime (Python, V8, HotSpot, ...) as the rest of the library sees it: the one
 * interface lib/runtime/<name>/ implements, so that no earlier stage knows any runtime.
 *
 * The unwinder (unwind.c) calls attach() whenever it reads a process's mappings (first sight,
 * exec, a new mapping met by a sample). The runtime decides whether it is in the process,
 * fills its own BPF maps for the pid (bpf/runtime/<name>.bpf.h), and claims the address
 * ranges of its code whose frames its BPF unwinder must see: an interpreter's loop function,
 * a JIT's code space. The unwinder marks those ranges in the process's BPF mappings
 * (op_unwind_mapping.runtime), and the native walk hands such frames to the runtime's program
 * (bpf/unwind/runtime.bpf.h). The runtime's frames come back in trace records tagged with its
 * kind (OP_FRAME_TAG, bpf/types.h); the library names them with symbolize().
 *
 * Every callback is called with the library's lock held, from its reader or symbolizer
 * thread; none may call back into the unwinder.
 */
#ifndef OTELPROF_RUNTIME_H
#define OTELPROF_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "binary/filecache.h"
#include "bpf/types.h"

/* One executable mapping of the process, as /proc/PID/maps gives it. */
struct op_runtime_mapping {
	uint64_t start, end, offset;
	const char *path; /* NULL for anonymous memory; "[vdso]" etc. kept */
};

struct sampler_bpf;
struct op_filecache;

/* What a runtime's constructor gets: the loaded BPF object (its maps), the file cache. */
struct op_runtime_env {
	struct sampler_bpf *skel;
	struct op_filecache *files;
};

/* A range of a runtime's code whose frames its BPF unwinder takes. */
struct op_runtime_claim {
	uint64_t start, end;
};

#define OP_RUNTIME_MAX_CLAIMS 16

struct op_runtime_proc {
	int pid;
	const struct op_runtime_mapping *maps; /* executable mappings, sorted by start */
	size_t n_maps;
	/* out: ranges claimed (within the mappings above) */
	struct op_runtime_claim claims[OP_RUNTIME_MAX_CLAIMS];
	size_t n_claims;
};

/* A runtime frame named: the function(s) at it, innermost first, and its address. */
struct op_runtime_frame {
	struct op_sym_result sym;
	uint64_t address; /* what the location's address says (e.g. a bytecode offset) */
};

struct op_runtime {
	const char *name; /* the `tracers` name of the upstream receiver: "python", "v8", ... */
	uint8_t kind;	  /* enum op_runtime_kind: its BPF program slot and frame tag */
	bool no_unwinder; /* watches processes only (attach/detach): no BPF unwinder, no frames */
	void *ctx;
	/*
	 * The process's mappings were (re)read: detect the runtime, fill its BPF state for the
	 * pid, claim ranges in @rp. Returns 1 when the runtime is in the process (and can be
	 * unwound), 0 when it is not, a negative errno when it is but cannot be unwound (an
	 * unknown version: the runtime counts the reason, and its frames stay native).
	 */
	int (*attach)(void *ctx, struct op_runtime_proc *rp);
	/* The process exited or exec'd: drop what attach() stored for @pid. */
	void (*detach)(void *ctx, int pid);
	/*
	 * Name the frame (@payload, @data) of process @pid, as its BPF unwinder recorded it.
	 * Returns 0, or a negative errno (the frame keeps its type and address, no name).
	 */
	int (*symbolize)(void *ctx, int pid, uint64_t payload, uint64_t data,
			 struct op_runtime_frame *out);
	/* Free @ctx. */
	void (*free)(void *ctx);
	/*
	 * Optional: the name of a marker frame ("[python: ...]") when (@payload, @data) is one
	 * the unwinder recorded to say where and why its walk stopped, else NULL. Markers are
	 * left out with send_error_frames off, like "[unwind error: ...]".
	 */
	const char *(*marker)(uint64_t payload, uint64_t data);
};

#endif

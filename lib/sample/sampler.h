/* SPDX-License-Identifier: Apache-2.0 */
/*
 * User half of the sampler (bpf/sampler.bpf.c): loads the skeleton, opens one cpu-clock
 * perf event per online CPU, attaches, and hands every ring buffer record to a callback.
 */
#ifndef OTELPROF_SAMPLER_H
#define OTELPROF_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/types.h"
#include "otelprof.h"

/* Called for each record (struct op_trace / op_proc_event, type in op_event_hdr). */
typedef void (*op_event_fn)(void *ctx, const void *data, size_t size);

struct op_sampler_opts {
	unsigned int frequency_hz;
	bool kernel_stacks;
	bool labels; /* read the labels threads publish (bpf/sample/labels.bpf.h) */
	/* off-CPU: probability that an interval off the CPU is sampled; 0 = off (not loaded) */
	double off_cpu_threshold;
	/* allocations: mean bytes between samples, 0 = off (not loaded); in-use map entries */
	uint64_t alloc_mean;
	uint32_t alloc_inuse_max;
	const int *pids;
	size_t pid_cnt;
	size_t ringbuf_bytes;
	/* short-lived processes' mappings sent at their exit (bpf/types.h, op_exit_maps) */
	bool exit_maps;
	bool idle_frames;		     /* record the idle task's samples (pid 0) */
	const struct otelprof_probe *probes; /* uprobes sampling the stack (probe_links) */
	size_t probe_cnt;
	op_event_fn on_event;
	void *ctx;
};

struct op_sampler;
struct sampler_bpf;

/* Open and load (verify) the programs. Returns 0 or a negative code; *out on success. */
int op_sampler_open(const struct op_sampler_opts *opts, struct op_sampler **out);
/* The loaded skeleton, for subsystems that add maps/programs (unwinder). */
struct sampler_bpf *op_sampler_skel(struct op_sampler *s);
/* The descriptor of the loaded BPF program @name (its object is split in two), or -1. */
int op_sampler_prog_fd(struct op_sampler *s, const char *name);
/* Attach the tracepoints and one perf event per online CPU. */
int op_sampler_attach(struct op_sampler *s);
/*
 * Detach the perf events and the off-CPU tracepoint (no new samples); the exec/exit
 * tracepoints stay until close.
 */
void op_sampler_detach(struct op_sampler *s);
/*
 * Wait up to @timeout_ms for a wakeup, then deliver every queued record (most records do
 * not wake the reader: @timeout_ms bounds how late they are seen). Returns records handled
 * or < 0.
 */
int op_sampler_poll(struct op_sampler *s, int timeout_ms);
/* End a wait in op_sampler_poll() now (any thread). */
void op_sampler_wake(struct op_sampler *s);
/* Deliver every record queued now, without waiting. */
int op_sampler_drain(struct op_sampler *s);
/* Sum of the per-CPU counters (enum op_counter) into @out[OP_CNT_MAX]. */
int op_sampler_counters(struct op_sampler *s, uint64_t *out);
/* Pause (or resume) on-CPU sampling: the perf program returns at once while paused. */
void op_sampler_pause(struct op_sampler *s, bool paused);
void op_sampler_close(struct op_sampler *s);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otelprof.h - whole-system CPU profiler on eBPF, with OTLP profiles and pprof output.
 *
 * This is the only public header of libotelprof. Every exported symbol starts with
 * `otelprof_`.
 *
 * Lifecycle
 *   struct otelprof *p = otelprof_open(&opts);   // loads and verifies the BPF programs
 *   otelprof_start(p);                           // attaches to cpu-clock on every online CPU
 *   ... every report interval:
 *   otelprof_collect(p, OTELPROF_FORMAT_OTLP, &buf, &len);  // samples since last collect
 *   otelprof_buf_free(buf);
 *   otelprof_stop(p);                            // detaches; samples taken so far are kept
 *   otelprof_collect(p, ...);                    // delivers the remainder
 *   otelprof_close(p);
 *
 * Threading
 *   One handle may be used from several threads: otelprof_collect(), otelprof_get_stats(),
 *   otelprof_start() and otelprof_stop() serialise internally. otelprof_close() must not race
 *   with any other call on the same handle. While started, the library runs one thread of its
 *   own that drains the BPF ring buffer; it never calls back into user code except through the
 *   log callback.
 *
 * Privileges
 *   Root, or CAP_BPF + CAP_PERFMON (load and attach), CAP_SYS_PTRACE (read other processes'
 *   memory maps), CAP_DAC_READ_SEARCH (open binaries through /proc/PID/root and map_files) and
 *   CAP_SYSLOG (kernel symbol addresses). otelprof_open() fails with -EPERM and logs which
 *   capability is missing.
 *
 * Errors
 *   Functions returning int return 0 on success or a negative errno-style code; codes in the
 *   range [OTELPROF_ERR_BASE, OTELPROF_ERR_LAST] are the library's own. Constructors return
 *   NULL and set errno. otelprof_strerror() names any code. The library never prints: it
 *   reports through the log callback (see otelprof_set_log()).
 *
 * Memory
 *   Buffers returned by the library are owned by it and released with otelprof_buf_free().
 *   Every free/close function accepts NULL.
 */
#ifndef OTELPROF_H
#define OTELPROF_H

#ifndef __VMLINUX_H__ /* bpf/ programs include this header for the shared enums */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

#ifndef OTELPROF_API
#define OTELPROF_API __attribute__((visibility("default")))
#endif

#define OTELPROF_VERSION_MAJOR	0
#define OTELPROF_VERSION_MINOR	1
#define OTELPROF_VERSION_PATCH	0
#define OTELPROF_VERSION_STRING "0.1.0"
#define OTELPROF_VERSION_NUMBER \
	(OTELPROF_VERSION_MAJOR * 10000 + OTELPROF_VERSION_MINOR * 100 + OTELPROF_VERSION_PATCH)

/*
 * otelprof_version_number() - version of the library loaded at run time, encoded as
 * OTELPROF_VERSION_NUMBER is. Compare with the compile-time macro to detect a mismatch.
 * otelprof_version_string() - the same as "MAJOR.MINOR.PATCH". Both are thread-safe.
 */
OTELPROF_API unsigned int otelprof_version_number(void);
OTELPROF_API const char *otelprof_version_string(void);

/* Library-specific error codes (returned negated, like errno values). */
enum otelprof_error {
	OTELPROF_ERR_BASE = 4000,
	OTELPROF_ERR_NO_BTF = 4000,	 /* kernel has no BTF (/sys/kernel/btf/vmlinux) */
	OTELPROF_ERR_BPF_LOAD = 4001,	 /* BPF programs failed to load or verify */
	OTELPROF_ERR_PERF_EVENT = 4002,	 /* perf_event_open(cpu-clock) failed */
	OTELPROF_ERR_NO_SUCH_PID = 4003, /* a target pid does not exist */
	OTELPROF_ERR_OPTS = 4004,	 /* invalid option value */
	OTELPROF_ERR_ENCODE = 4005,	 /* profile encoding failed */
	OTELPROF_ERR_STATE = 4006,	 /* call not valid in the handle's current state */
	OTELPROF_ERR_LAST = 4006,
};

/*
 * otelprof_strerror() - a static, lower-case description of @err (negative or positive,
 * errno or OTELPROF_ERR_*). Never returns NULL. Thread-safe.
 */
OTELPROF_API const char *otelprof_strerror(int err);

enum otelprof_log_level {
	OTELPROF_LOG_ERROR = 0,
	OTELPROF_LOG_WARN = 1,
	OTELPROF_LOG_INFO = 2,
	OTELPROF_LOG_DEBUG = 3,
};

/*
 * otelprof_log_fn - receives one message (no trailing newline) of the library or of libbpf.
 * May be called from any thread, including the library's own; must not call back into the
 * library.
 */
typedef void (*otelprof_log_fn)(enum otelprof_log_level level, const char *msg, void *ctx);

/*
 * otelprof_set_log() - route the library's (and libbpf's) messages up to @max_level to @fn.
 * @fn NULL silences the library. Process-wide, like libbpf_set_print(); the default is no
 * output. Returns the previous callback. Call before otelprof_open() if you want load-time
 * messages; safe to call at any time.
 */
OTELPROF_API otelprof_log_fn otelprof_set_log(otelprof_log_fn fn, void *ctx,
					      enum otelprof_log_level max_level);

/* Flags for otelprof_opts.flags. */
#define OTELPROF_F_NO_KERNEL_STACKS (1u << 0) /* do not record kernel frames */
#define OTELPROF_F_NO_SYMBOLIZE	    (1u << 1) /* addresses + build ids only, no names */
#define OTELPROF_F_FRAME_POINTERS   (1u << 2) /* walk user stacks with frame pointers only */
/*
 * Do not read the labels threads publish (Go pprof labels, the custom-labels TLS ABI), nor
 * link samples to the spans they name.
 */
#define OTELPROF_F_NO_LABELS (1u << 3)
/*
 * Do not read processes' OpenTelemetry resource attributes (OTEL_SERVICE_NAME,
 * OTEL_RESOURCE_ATTRIBUTES) from their environment.
 */
#define OTELPROF_F_NO_ENV_RESOURCE (1u << 4)
/*
 * Leave the process's malloc alone. By default otelprof_open() sets glibc's malloc for a
 * long-running agent (mallopt): one arena for all threads, and fixed mmap and trim
 * thresholds of 128 KiB, so that what symbolization frees (DWARF state, inflated debug
 * sections, a compiled table) goes back to the system instead of staying in per-thread
 * arenas. Measured on `otelprof record` at 20 Hz: resident memory 37 MiB -> 17 MiB. Set this
 * flag when the host program tunes malloc itself.
 */
#define OTELPROF_F_KEEP_MALLOC (1u << 5)

#define OTELPROF_DEFAULT_FREQUENCY 20
#define OTELPROF_MAX_FREQUENCY	   10000

/* A traced function (struct otelprof_opts.probes). */
struct otelprof_probe {
	const char *binary; /* path of the executable or library */
	const char *symbol; /* its function, by ELF symbol name */
	bool ret;	    /* on return (uretprobe) instead of entry */
};

/*
 * struct otelprof_opts - options for otelprof_open(). Set @sz to sizeof(struct otelprof_opts)
 * (OTELPROF_OPTS_INIT does it); zero fields take defaults. A larger @sz from a newer caller is
 * accepted only if the bytes this library does not know are zero.
 */
struct otelprof_opts {
	size_t sz;
	/* Samples per second per CPU, 1..OTELPROF_MAX_FREQUENCY; 0 = 20. */
	unsigned int frequency_hz;
	/* Processes to profile (their threads included); NULL/0 = the whole system. */
	const int *pids;
	size_t pid_cnt;
	/* OTELPROF_F_* */
	unsigned int flags;
	/*
	 * BPF ring buffer size in bytes (power of two >= 64 KiB); 0 = about two seconds of
	 * samples at the frequency, 256 KiB to 1 MiB per online CPU (1 MiB per CPU with off-CPU,
	 * allocation or probe events on), at most 4 MiB. It counts twice in resident memory
	 * (mapped twice).
	 */
	size_t ringbuf_bytes;
	/*
	 * Off-CPU profiling (callers whose @sz ends before this field do not set it): the
	 * probability, 0..1, that an interval a thread spends off the CPU is recorded - the
	 * upstream receiver's off_cpu_threshold. 0 = off (the default). Recorded intervals carry
	 * their stack where the thread left the CPU, the state it left in and their length,
	 * weighted by 1/probability so that sums estimate the whole off-CPU time.
	 */
	double off_cpu_threshold;

	/*
	 * Drop-in for the upstream receiver (issue 22). Callers whose @sz ends before these
	 * fields do not set them; zero keeps the behaviour above.
	 *
	 * @runtimes_off: comma-separated names of language runtimes (struct op_runtime.name:
	 * "golabels", "customlabels", "python", "v8", "hotspot", ...) not to start - the
	 * upstream receiver's `tracers` without them. NULL = every runtime compiled in.
	 * @include_env_vars: comma-separated names of environment variables read from each
	 * process and added to its resource attributes as process.environment_variable.<NAME>.
	 * @probabilistic_threshold, @probabilistic_interval_ns: probabilistic profiling; at the
	 * start of each interval a random number 0..99 below the threshold turns sampling on for
	 * that interval, otherwise off. Threshold 0 (or >= 100) = always on.
	 * @no_error_frames: no "[unwind error: reason]" marker frame at the end of stacks whose
	 * walk failed (the counters still count them).
	 * @idle_frames: record samples of the idle task (pid 0, its kernel stack) instead of
	 * only counting them.
	 * @clock_sync_interval_ns: how often the offset between the monotonic clock (sample
	 * times in the kernel) and the wall clock (times in profiles) is measured again, so that
	 * a wall clock stepped by NTP shows in sample times; 0 = once, at start.
	 */
	const char *runtimes_off;
	const char *include_env_vars;
	unsigned int probabilistic_threshold;
	uint64_t probabilistic_interval_ns;
	bool no_error_frames;
	bool idle_frames;
	uint64_t clock_sync_interval_ns;
	/*
	 * @probes, @probe_cnt: functions whose every call (or return, @ret) is a sample of the
	 * stack at that point - the upstream receiver's probe_links `uprobe:<binary>:<symbol>`
	 * (`uretprobe:` sets @ret). In every process that maps @binary (or only the target pids).
	 * Their samples form a profile of their own per process, sample type events/count.
	 */
	const struct otelprof_probe *probes;
	size_t probe_cnt;
	/*
	 * @runtimes_wanted: comma-separated runtime names the user asked for by name (the
	 * upstream `tracers`); one this library does not have is warned about once at open.
	 */
	const char *runtimes_wanted;
	/*
	 * Memory allocation profiling (callers whose @sz ends before these fields do not set
	 * them): uprobes on the processes' allocator (glibc, jemalloc, tcmalloc, mimalloc)
	 * sample allocations by bytes, one after an exponentially distributed byte count of mean
	 * @alloc_mean_bytes per thread (as Go and tcmalloc do), and track the sampled addresses
	 * until freed. 0 = off (the default); OTELPROF_ALLOC_DEFAULT_MEAN is 512 KiB. Profiles
	 * get alloc_objects/count, alloc_space/bytes, inuse_objects/count, inuse_space/bytes,
	 * estimates of the whole. @alloc_inuse_max bounds the sampled allocations tracked
	 * (0 = 65536; more are reported as allocated and counted in alloc_untracked).
	 */
	uint64_t alloc_mean_bytes;
	uint32_t alloc_inuse_max;
};

#define OTELPROF_ALLOC_DEFAULT_MEAN (512u << 10)

#define OTELPROF_OPTS_INIT                         \
	{                                          \
		.sz = sizeof(struct otelprof_opts) \
	}

/* Opaque profiler handle. */
struct otelprof;

/*
 * otelprof_open() - validate @opts (NULL = defaults), load and verify the BPF programs.
 * Nothing is sampled until otelprof_start().
 * Returns a handle, or NULL with errno set: EINVAL/OTELPROF_ERR_OPTS for bad options
 * (logged with the offending field), EPERM for missing privileges, OTELPROF_ERR_NO_SUCH_PID,
 * OTELPROF_ERR_NO_BTF, OTELPROF_ERR_BPF_LOAD.
 */
OTELPROF_API struct otelprof *otelprof_open(const struct otelprof_opts *opts);

/*
 * otelprof_start() - attach the sampler to every online CPU and start the library's reader
 * thread. Returns 0, -OTELPROF_ERR_PERF_EVENT, -OTELPROF_ERR_STATE if already started.
 */
OTELPROF_API int otelprof_start(struct otelprof *p);

/*
 * otelprof_stop() - detach from the CPUs, drain the ring buffer and stop the reader thread.
 * Samples already taken remain available to otelprof_collect(). Returns 0 or a negative code;
 * stopping a stopped handle returns 0.
 */
OTELPROF_API int otelprof_stop(struct otelprof *p);

enum otelprof_format {
	/* gzip-compressed pprof (perftools.profiles.Profile), as `go tool pprof` reads. */
	OTELPROF_FORMAT_PPROF = 1,
	/* serialized OTLP ExportProfilesServiceRequest (profiles v1development). */
	OTELPROF_FORMAT_OTLP = 2,
};

/*
 * otelprof_collect() - encode every sample gathered since the previous collect (or start) in
 * @format and reset the gathered set. On success *@data points to a buffer of *@size bytes
 * owned by the library: release it with otelprof_buf_free(). With no samples the result is a
 * valid, empty profile. On failure the gathered samples are kept for the next call. A sample
 * reaches user space up to about 100 ms after it was taken (the reader thread drains the ring
 * buffer at least that often; waking it per sample would cost more than taking the sample),
 * so the last moments before a collect may come in the next one; otelprof_stop() gathers
 * them all.
 * Thread-safe. Returns 0, -EINVAL, -ENOMEM or -OTELPROF_ERR_ENCODE.
 */
OTELPROF_API int otelprof_collect(struct otelprof *p, enum otelprof_format format, void **data,
				  size_t *size);

/* otelprof_buf_free() - release a buffer returned by otelprof_collect(). NULL is a no-op. */
OTELPROF_API void otelprof_buf_free(void *data);

/* Why a user stack walk ended early; indices of otelprof_stats.unwind_errors. */
enum otelprof_unwind_error {
	OTELPROF_UNWIND_OK = 0,
	OTELPROF_UNWIND_NO_TABLE = 1, /* no unwind table for the binary (fell back or stopped) */
	OTELPROF_UNWIND_PC_NOT_COVERED = 2,  /* PC outside every known table row */
	OTELPROF_UNWIND_BAD_MEMORY = 3,	     /* user stack memory unreadable */
	OTELPROF_UNWIND_DEPTH_LIMIT = 4,     /* more frames than the walk allows (truncated) */
	OTELPROF_UNWIND_VERIFIER_LIMIT = 5,  /* loop/tail-call budget exhausted */
	OTELPROF_UNWIND_UNKNOWN_MAPPING = 6, /* PC in anonymous/JIT memory without CFI */
	OTELPROF_UNWIND_BAD_RULE = 7,	     /* unsupported CFA/return-address rule */
	OTELPROF_UNWIND_NO_USER_REGS = 8,    /* kernel thread or registers unavailable */
	/*
	 * sampled inside execve(): the old program's user stack is being replaced (its memory
	 * may already be the new program's) and is not recorded; the kernel frames are
	 */
	OTELPROF_UNWIND_IN_EXEC = 9,
	OTELPROF_UNWIND_ERROR_MAX = 16,
};

/* otelprof_unwind_error_name() - short name of an otelprof_unwind_error ("no_table", ...). */
OTELPROF_API const char *otelprof_unwind_error_name(int reason);

/*
 * struct otelprof_stats - counters since otelprof_open(). Set @sz before the call; the
 * library fills min(@sz, its own size) bytes, so older callers keep working.
 */
struct otelprof_stats {
	size_t sz;
	uint64_t samples;	     /* samples received from the kernel */
	uint64_t lost;		     /* samples the kernel could not queue (ring buffer full) */
	uint64_t dropped;	     /* samples discarded in user space (e.g. memory bound) */
	uint64_t collected;	     /* samples handed out by otelprof_collect() */
	uint64_t processes;	     /* processes currently tracked */
	uint64_t kernel_frames;	     /* kernel frames recorded */
	uint64_t user_frames;	     /* user frames recorded */
	uint64_t unsymbolized;	     /* frames left as mapping + address */
	uint64_t unwind_table_bytes; /* bytes of unwind tables loaded into BPF maps */
	uint64_t unwind_errors[OTELPROF_UNWIND_ERROR_MAX];
	/*
	 * BPF maps of the unwinder that were full (callers whose @sz ends before these fields do
	 * not get them): times a process's mappings found no room in the per-process
	 * map (its stacks are walked by frame pointers until a retry, once a second, finds
	 * room; raise with OTELPROF_UNWIND_MAX_PROCS), and times a binary's unwind table did
	 * not fit the row/rule/table maps (frame pointers for its code; retried with backoff).
	 */
	uint64_t unwind_procs_full;
	uint64_t unwind_tables_full;
	/*
	 * Off-CPU: intervals recorded (stack and length paired), and stacks whose interval never
	 * ended in view (the waiting-thread map evicted it, a record was lost, or it still waits
	 * at the end of a recording beyond the pairing bound).
	 */
	uint64_t off_cpu_intervals;
	uint64_t off_cpu_unpaired;
	/*
	 * Probabilistic profiling (issue 22): intervals begun, and of them those with sampling
	 * on. Both 0 when it is off.
	 */
	uint64_t prob_intervals;
	uint64_t prob_intervals_on;
	/*
	 * Binaries (executables, libraries) open in the file cache now, and bytes of records
	 * the reader has queued that the symbolizer has not handled yet (its backlog).
	 */
	uint64_t binaries;
	uint64_t symbolize_backlog_bytes;
	/*
	 * Allocations: sampled allocations recorded; frees of them seen; sampled allocations not
	 * tracked until freed (the in-use map was full: in alloc_* only); frees of an address
	 * user space did not know (its allocation's record was lost or came late); sampled calls
	 * that returned no memory (enormous sizes: nothing recorded).
	 */
	uint64_t alloc_samples;
	uint64_t alloc_frees;
	uint64_t alloc_untracked;
	uint64_t alloc_unpaired_frees;
	uint64_t alloc_failed;
	/*
	 * Python (issue 15): processes whose CPython frames are unwound now; processes with a
	 * CPython whose version or layout we do not know (their frames stay native); eval-loop
	 * frames replaced by Python frames; eval-loop frames left native because the thread had
	 * no thread state we could find, a read of its frame chain failed, or the chain ran
	 * out before the eval-loop frames did (it changed under the walk); Python frames left
	 * unnamed because their code object was gone or changed when they were named.
	 */
	uint64_t python_processes;
	uint64_t python_unknown_version;
	uint64_t python_frames;
	uint64_t python_native_no_tstate;
	uint64_t python_native_read_failed;
	uint64_t python_native_chain_ended;
	uint64_t python_stale_code;
	/*
	 * JIT code (issue 20). V8: Node processes whose JavaScript frames are unwound, those of a
	 * V8 build we do not know (their frames stay native), JavaScript frames named and not
	 * named (their objects moved or were freed before naming: "[v8: function moved]"),
	 * frames the BPF walk could not take (a frame pointer it could not read; a frame without
	 * a JSFunction). Perf maps: frames named from a /tmp/perf-PID.map or a jitdump file, and
	 * perf map lines skipped as malformed.
	 */
	uint64_t v8_processes;
	uint64_t v8_unknown_layout;
	uint64_t v8_frames_named;
	uint64_t v8_frames_unnamed;
	uint64_t v8_bad_frames;
	uint64_t perfmap_named;
	uint64_t perfmap_bad_lines;
	/*
	 * Own cost (issue 14): how far the symbolizer thread is behind the reader, now: records
	 * read from the ring buffer and not yet symbolized (their bytes: above); and inflated
	 * compressed debug sections kept across libdwarf re-opens (bytes now, and sections
	 * inflated since the start).
	 */
	uint64_t symbolize_backlog;
	uint64_t debug_inflated_bytes;
	uint64_t debug_inflations;
	/*
	 * Samples of a process gone before its exit mappings were read, held back until its exit
	 * record (since the start), and how many are held now.
	 */
	uint64_t samples_parked;
	uint64_t samples_parked_now;
	/*
	 * User frames named from their file's symbol tables while its compressed DWARF waits
	 * for the file to be the innermost frame of OTELPROF_DWARF_AFTER samples (README "Own
	 * cost"): function names without inline frames, files and lines.
	 */
	uint64_t frames_dwarf_deferred;
};

/* otelprof_get_stats() - copy the counters into @st. Thread-safe. Returns 0 or -EINVAL. */
OTELPROF_API int otelprof_get_stats(struct otelprof *p, struct otelprof_stats *st);

/*
 * otelprof_close() - stop if started, unload the BPF programs and free everything.
 * Samples not collected are discarded. NULL is a no-op.
 */
OTELPROF_API void otelprof_close(struct otelprof *p);

#ifdef __cplusplus
}
#endif

#endif /* OTELPROF_H */

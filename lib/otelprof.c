// SPDX-License-Identifier: Apache-2.0
/*
 * The public API: a handle that owns the sampler, the process tracker, the file cache, the
 * kernel symbols and the profile being gathered; a reader thread turns ring buffer records
 * into samples of that profile; otelprof_collect() encodes and resets it.
 */
#include <dirent.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>

#include "util/hash.h"
#include "util/log.h"
#include "otelprof.h"
#include "sample/proc.h"
#include "profile/links.h"
#include "profile/profile.h"
#include "sample/sampler.h"
#include "sample/alloc.h"
#include "symbol/dwarf.h"
#include "symbol/ksyms.h"
#include "symbol/perfmap.h"
#include "symbol/symbolize.h"
#include "runtime/customlabels/customlabels.h"
#include "runtime/golabels/golabels.h"
#include "runtime/python/python.h"
#include "runtime/v8/v8.h"
#include "runtime/hotspot/hotspot.h"
#include "unwind/runtime.h"
#include "unwind/unwind.h"

/*
 * Off-CPU stacks sent when a thread left the CPU, waiting for the record that says how long it
 * was away: one slot per tid (a thread waits once at a time), direct-mapped; a stack whose
 * slot is taken by another thread's, or whose end never comes, is counted unpaired.
 */
#define OFFCPU_PENDING_SLOTS 8192

struct offcpu_pending {
	uint32_t tid; /* 0: free */
	uint32_t size;
	struct op_trace *rec;
};

/*
 * A parked sample (struct otelprof.parked): its copy, and since when. Bounded by bytes and by
 * age: one whose exit record never comes is symbolized with what there is after PARK_MAX_NS.
 */
struct parked_rec {
	int pid;
	uint32_t size;
	uint64_t since_ns;
	struct op_trace *rec;
};

#define PARK_MAX_BYTES (4u << 20)
#define PARK_MAX_NS    (1000000000ull)

/*
 * A frame's location in the current profile, by what determines it: the address and, for
 * user frames, the mapping (file, range, offset, path) it fell in. Each frame otherwise
 * costs a symbolizer lookup and the interning of its function's strings again; at 999 Hz
 * that was most of the agent's CPU. Direct-mapped; anonymous memory (perf maps change as
 * JIT code moves) is not cached.
 */
#define LOC_CACHE_BITS 12
struct loc_cache_ent {
	uint64_t addr, start, end, offset;
	const void *file; /* NULL: a kernel frame */
	uint32_t path_hash;
	uint32_t gen; /* 0: empty */
	uint32_t loc;
	bool leaf, unsymbolized;
	bool deferred; /* named without its file's DWARF, which waits */
};

/*
 * Allocations: sampled allocations not freed yet, by (pid, address), each with its trace (the
 * in-use profile is their snapshot at each collect). Chained hash, ALLOC_BUCKETS heads.
 */
#define ALLOC_BUCKETS 65536
/* Frees that came before their allocation's record (it walks its stack first): a short memory. */
#define ALLOC_EARLY_FREES 256

struct alloc_live {
	struct alloc_live *next;
	uint32_t pid;
	uint32_t size; /* of rec */
	uint64_t addr;
	struct op_trace *rec;
};

struct alloc_state {
	struct op_alloc_probes *probes;
	struct alloc_live **live;
	size_t n_live;
	struct op_alloc_free early[ALLOC_EARLY_FREES];
	unsigned int early_next;
	uint64_t rng;
	bool snapshot_in_profile; /* a collect whose encoding failed kept it: not twice */
};

/* Samples gathered between two collects beyond which new ones are dropped (and counted). */
#define MAX_PENDING_SAMPLES (4u << 20)
/* How long an exited process stays resolvable for samples still in flight. */
#define EXITED_GRACE_NS (10ull * 1000000000ull)
/* Trace records read from the ring buffer but not symbolized yet; beyond this, symbolize now. */
#define MAX_QUEUED_BYTES (32u << 20)
/*
 * Records waiting for the symbolizer thread: [size_t size][record], each padded to 8 bytes.
 * The reader thread does the exec and unwinder work at once and queues traces and exits, so
 * that symbolization (a backlog of samples on a CPU-starved host, a big binary's symbols
 * loading) does not delay reading a new process's mappings until after it has exited, nor
 * loading its unwind tables.
 */
struct trace_queue {
	uint8_t *buf;
	size_t head, tail, cap;
	uint64_t n; /* records queued */
};
/*
 * A collect while sampling symbolizes what is queued for at most this long, and leaves the
 * rest to the symbolizer thread and the next report: a backlog (a big binary's DWARF
 * loading, a CPU-starved host) must not hold a report back, the first one least of all.
 */
#define COLLECT_FLUSH_NS (200ull * 1000000ull)

/*
 * A program as the reader saw it on exec (mappings, their files opened), in the queue as
 * an exec record, so that its samples still resolve when it exited before the symbolizer
 * got to them. Kept from that record to the process's exit record if it was gone by then.
 */
struct exec_snap {
	struct exec_snap *next;
	struct op_proc proc;
};

/* The exec record in the queue: the event, and the snapshot (or NULL). */
struct exec_rec {
	struct op_event_hdr hdr;
	struct exec_snap *snap;
};

struct otelprof {
	struct otelprof_opts opts;
	int *pids;
	unsigned int flags;

	struct op_sampler *sampler;
	struct op_filecache *files;
	struct op_proctab *procs;
	struct op_ksyms *ksyms;
	struct op_perfmaps *perfmaps;		     /* JIT perf maps (/tmp/perf-PID.map) */
	struct op_unwinder *unwinder;		     /* NULL: frame pointers only */
	struct op_runtime *runtimes[OP_RUNTIME_MAX]; /* enabled language runtimes, by kind */

	pthread_mutex_t lock; /* guards everything below and the tracker/cache above */
	struct op_profile *profile;

	pthread_mutex_t u_lock; /* the unwinder */
	pthread_mutex_t q_lock; /* the queue */
	pthread_cond_t q_cond;
	struct trace_queue queue;
	bool queued; /* reader only: records queued since it last woke the symbolizer */
	pthread_t symbolizer;
	struct exec_snap *ghosts; /* exited before symbolization; under lock */
	/*
	 * Mappings young processes had at their exit (OP_EV_EXIT_MAPS), from the reader, until
	 * the symbolizer meets that process's samples (exit_maps_adopt) or its exit record;
	 * under q_lock. The count lets the symbolizer skip the lock when there are none.
	 */
	struct exec_snap *exit_maps;
	atomic_uint n_exit_maps;
	/*
	 * Samples of a process that was gone (from /proc) when the symbolizer met them, with
	 * frames outside what it knew of its mappings: held until its exit record, which comes
	 * after its exit mappings (park_trace); under lock, oldest first.
	 */
	struct parked_rec *parked;
	size_t n_parked, cap_parked, parked_bytes;
	/* frames already turned into locations of the current profile (loc_cache_*); under lock */
	struct loc_cache_ent *loc_cache;
	uint32_t loc_gen;	 /* the current profile's; entries of another are stale */
	int64_t mono_to_unix_ns; /* unix = monotonic + this */
	struct otelprof_stats stats;

	/* off-CPU stacks waiting for the end of their interval, by tid (under lock) */
	struct offcpu_pending *pending;
	/* allocations (under lock; the probes under state_lock) */
	struct alloc_state alloc;

	/* issue 22: copies of the option strings; probabilistic profiling (reader thread) */
	char *runtimes_off, *env_vars, *runtimes_wanted;
	struct otelprof_probe *probes; /* deep copy of opts.probes */
	uint64_t prob_next_ns;	       /* CLOCK_MONOTONIC start of the next interval; 0 = off */
	uint64_t clock_next_ns;	       /* CLOCK_MONOTONIC time of the next clock sync; 0 = never */
	unsigned int prob_seed;

	pthread_mutex_t state_lock; /* serialises start/stop */
	pthread_t reader;
	atomic_bool stopping;
	bool started;
};

OTELPROF_API unsigned int otelprof_version_number(void)
{
	return OTELPROF_VERSION_NUMBER;
}

OTELPROF_API const char *otelprof_version_string(void)
{
	return OTELPROF_VERSION_STRING;
}

OTELPROF_API const char *otelprof_strerror(int err)
{
	static const char *const own[] = {
		[OTELPROF_ERR_NO_BTF - OTELPROF_ERR_BASE] =
			"kernel has no BTF (/sys/kernel/btf/vmlinux missing): use a kernel built "
			"with CONFIG_DEBUG_INFO_BTF=y",
		[OTELPROF_ERR_BPF_LOAD - OTELPROF_ERR_BASE] =
			"cannot load the BPF programs (the log at debug level has the verifier "
			"output)",
		[OTELPROF_ERR_PERF_EVENT - OTELPROF_ERR_BASE] =
			"cannot open or attach the cpu-clock perf event",
		[OTELPROF_ERR_NO_SUCH_PID - OTELPROF_ERR_BASE] = "no such process",
		[OTELPROF_ERR_OPTS - OTELPROF_ERR_BASE] = "invalid option",
		[OTELPROF_ERR_ENCODE - OTELPROF_ERR_BASE] = "profile encoding failed",
		[OTELPROF_ERR_STATE - OTELPROF_ERR_BASE] = "call not valid in this state",
	};

	if (err < 0)
		err = -err;
	if (err >= OTELPROF_ERR_BASE && err <= OTELPROF_ERR_LAST)
		return own[err - OTELPROF_ERR_BASE];
	switch (err) {
	case 0:
		return "success";
	case EPERM:
		return "operation not permitted (run as root or grant CAP_BPF, CAP_PERFMON, "
		       "CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH and CAP_SYSLOG)";
	default:
		return strerror(err); /* glibc's table is static and thread-safe to read */
	}
}

OTELPROF_API const char *otelprof_unwind_error_name(int reason)
{
	static const char *const names[OTELPROF_UNWIND_ERROR_MAX] = {
		[OTELPROF_UNWIND_OK] = "ok",
		[OTELPROF_UNWIND_NO_TABLE] = "no_table",
		[OTELPROF_UNWIND_PC_NOT_COVERED] = "pc_not_covered",
		[OTELPROF_UNWIND_BAD_MEMORY] = "bad_memory",
		[OTELPROF_UNWIND_DEPTH_LIMIT] = "depth_limit",
		[OTELPROF_UNWIND_VERIFIER_LIMIT] = "verifier_limit",
		[OTELPROF_UNWIND_UNKNOWN_MAPPING] = "unknown_mapping",
		[OTELPROF_UNWIND_BAD_RULE] = "bad_rule",
		[OTELPROF_UNWIND_NO_USER_REGS] = "no_user_regs",
		[OTELPROF_UNWIND_IN_EXEC] = "in_exec",
	};

	if (reason < 0 || reason >= OTELPROF_UNWIND_ERROR_MAX || !names[reason])
		return "unknown";
	return names[reason];
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/*
 * Name the capabilities a non-root caller lacks. Returns 0 when everything needed to load
 * and attach is there, -EPERM (after logging) otherwise.
 */
static int check_privileges(void)
{
	static const struct {
		int cap;
		const char *name;
		bool required;
	} caps[] = {
		{ 39 /* CAP_BPF */, "CAP_BPF", true },
		{ 38 /* CAP_PERFMON */, "CAP_PERFMON", true },
		{ CAP_SYS_PTRACE, "CAP_SYS_PTRACE", false },
		{ CAP_DAC_READ_SEARCH, "CAP_DAC_READ_SEARCH", false },
		{ CAP_SYSLOG, "CAP_SYSLOG", false },
	};
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = {};
	char missing[256] = "", optional[256] = "";
	bool fatal = false;

	if (syscall(SYS_capget, &hdr, data))
		return 0; /* cannot tell: let the load itself fail with its own error */
	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		int c = caps[i].cap;
		bool has = data[c / 32].effective & (1u << (c % 32));
		bool sys_admin = data[CAP_SYS_ADMIN / 32].effective & (1u << (CAP_SYS_ADMIN % 32));

		if (has || (sys_admin && (c == 39 || c == 38)))
			continue;
		if (caps[i].required) {
			fatal = true;
			strcat(missing, missing[0] ? ", " : "");
			strcat(missing, caps[i].name);
		} else {
			strcat(optional, optional[0] ? ", " : "");
			strcat(optional, caps[i].name);
		}
	}
	if (fatal) {
		/*
		 * uid 0 without them has a reduced bounding set (a container runtime, systemd's
		 * CapabilityBoundingSet=): "run as root" would not help there.
		 */
		const char *how = "run as root, or grant";

		if (geteuid() == 0)
			how = "running as root, but they are not in its capability set, e.g. "
			      "dropped by a container runtime or systemd: grant";
		op_err("missing capabilities: %s (%s CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE, "
		       "CAP_DAC_READ_SEARCH and CAP_SYSLOG)",
		       missing, how);
		return -EPERM;
	}
	if (optional[0])
		op_warn("missing capabilities: %s: other processes' binaries or kernel symbols may "
			"not resolve (grant them for complete profiles)",
			optional);
	return 0;
}

static int validate_opts(const struct otelprof_opts *in, struct otelprof_opts *out)
{
	size_t sz;

	memset(out, 0, sizeof(*out));
	out->sz = sizeof(*out);
	if (!in)
		goto defaults;
	sz = in->sz;
	if (sz < offsetof(struct otelprof_opts, flags)) {
		op_err("invalid options: sz %zu is too small (initialise with OTELPROF_OPTS_INIT)",
		       sz);
		return -OTELPROF_ERR_OPTS;
	}
	if (sz > sizeof(*out)) {
		for (const char *p = (const char *)in + sizeof(*out); p < (const char *)in + sz;
		     p++)
			if (*p) {
				op_err("invalid options: fields unknown to library version %s are "
				       "set",
				       OTELPROF_VERSION_STRING);
				return -OTELPROF_ERR_OPTS;
			}
		sz = sizeof(*out);
	}
	memcpy(out, in, sz);
	out->sz = sizeof(*out);
defaults:
	if (!out->frequency_hz)
		out->frequency_hz = OTELPROF_DEFAULT_FREQUENCY;
	if (out->frequency_hz > OTELPROF_MAX_FREQUENCY) {
		op_err("invalid frequency %u Hz: use 1 to %u", out->frequency_hz,
		       OTELPROF_MAX_FREQUENCY);
		return -OTELPROF_ERR_OPTS;
	}
	if (out->pid_cnt && !out->pids) {
		op_err("invalid options: pid_cnt is %zu but pids is NULL", out->pid_cnt);
		return -OTELPROF_ERR_OPTS;
	}
	/* NaN fails both comparisons: the !(in range) form refuses it too */
	if (!(out->off_cpu_threshold >= 0.0 && out->off_cpu_threshold <= 1.0)) {
		op_err("invalid off_cpu_threshold %g: the probability that an off-CPU interval is "
		       "recorded, 0 (off) to 1",
		       out->off_cpu_threshold);
		return -OTELPROF_ERR_OPTS;
	}
	if (out->probabilistic_threshold && out->probabilistic_threshold < 100 &&
	    !out->probabilistic_interval_ns) {
		op_err("invalid options: probabilistic_threshold %u needs a "
		       "probabilistic_interval_ns "
		       "(the length of the intervals sampling is on or off), got 0",
		       out->probabilistic_threshold);
		return -OTELPROF_ERR_OPTS;
	}
	if (out->probe_cnt && !out->probes) {
		op_err("invalid options: probe_cnt is %zu but probes is NULL", out->probe_cnt);
		return -OTELPROF_ERR_OPTS;
	}
	for (size_t i = 0; i < out->probe_cnt; i++) {
		if (!out->probes[i].binary || !*out->probes[i].binary || !out->probes[i].symbol ||
		    !*out->probes[i].symbol) {
			op_err("invalid probe %zu: it needs a binary and a symbol "
			       "(uprobe:<binary>:<symbol>)",
			       i);
			return -OTELPROF_ERR_OPTS;
		}
	}
	if (out->alloc_inuse_max > (1u << 24)) {
		op_err("invalid alloc_inuse_max %u: at most %u sampled allocations tracked (0 for "
		       "the default 65536)",
		       out->alloc_inuse_max, 1u << 24);
		return -OTELPROF_ERR_OPTS;
	}
	if (out->pid_cnt > OP_MAX_TARGET_PIDS) {
		op_err("too many target pids (%zu): at most %d", out->pid_cnt, OP_MAX_TARGET_PIDS);
		return -OTELPROF_ERR_OPTS;
	}
	if (out->flags &
	    ~(OTELPROF_F_NO_KERNEL_STACKS | OTELPROF_F_NO_SYMBOLIZE | OTELPROF_F_FRAME_POINTERS |
	      OTELPROF_F_NO_LABELS | OTELPROF_F_NO_ENV_RESOURCE | OTELPROF_F_KEEP_MALLOC)) {
		op_err("invalid options: unknown flags 0x%x", out->flags);
		return -OTELPROF_ERR_OPTS;
	}
	for (size_t i = 0; i < out->pid_cnt; i++) {
		if (out->pids[i] <= 0 || (kill(out->pids[i], 0) && errno == ESRCH)) {
			op_err("no such process: pid %d (check the pid, or omit pids to profile "
			       "the "
			       "whole system)",
			       out->pids[i]);
			return -OTELPROF_ERR_NO_SUCH_PID;
		}
	}
	return 0;
}

static struct op_profile *new_profile(struct otelprof *p)
{
	struct op_profile_opts po = {
		.period_ns = 1000000000ull / p->opts.frequency_hz,
		.start_ns = clock_ns(CLOCK_REALTIME),
		.scope_name = "otelprof",
		.scope_version = OTELPROF_VERSION_STRING,
	};

	p->loc_gen = p->loc_gen + 1 ? p->loc_gen + 1 : 1; /* the cache's entries: another's */
	return op_profile_new(&po);
}

/*
 * The language runtimes compiled in (lib/runtime/<name>/, interface lib/unwind/runtime.h).
 * A constructor returns NULL with errno set when the runtime cannot work here; the others
 * still run.
 */
typedef struct op_runtime *(*runtime_ctor)(const struct op_runtime_env *env);
static const struct {
	const char *name;
	runtime_ctor make;
	bool labels; /* off with OTELPROF_F_NO_LABELS */
} runtime_ctors[] = {
	{ "Go labels", op_golabels_runtime_new, true },
	{ "custom labels", op_customlabels_runtime_new, true },
	{ "Python", op_python_runtime_new, false },
	{ "V8", op_v8_runtime_new, false },
	{ "Java (HotSpot)", op_hotspot_runtime_new, false },
	{ NULL, NULL, false },
};

/* Is @name one of the comma-separated names in @list (NULL: none)? */
static bool name_listed(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *s = list; s && *s;) {
		const char *e = strchr(s, ',');
		size_t l = e ? (size_t)(e - s) : strlen(s);

		if (l == n && !memcmp(s, name, n))
			return true;
		s += l + (e != NULL);
	}
	return false;
}

static void runtimes_open(struct otelprof *p)
{
	struct op_runtime_env env = { op_sampler_skel(p->sampler), p->files };

	for (size_t i = 0; runtime_ctors[i].make; i++) {
		struct op_runtime *rt;
		int err;

		if (runtime_ctors[i].labels && (p->flags & OTELPROF_F_NO_LABELS))
			continue;
		rt = runtime_ctors[i].make(&env);
		if (rt && name_listed(p->runtimes_off, rt->name)) {
			op_info("runtime %s off (not in the tracers)", rt->name);
			if (rt->free)
				rt->free(rt->ctx);
			continue;
		}
		if (!rt) {
			op_warn("%s unavailable (frames stay native, labels unread): %s",
				runtime_ctors[i].name, strerror(errno));
			continue;
		}
		err = op_unwinder_add_runtime(p->unwinder, rt);
		if (err) {
			op_warn("%s unavailable (frames stay native, labels unread): %s", rt->name,
				strerror(-err));
			if (rt->free)
				rt->free(rt->ctx);
			continue;
		}
		p->runtimes[rt->kind] = rt;
	}
}

/* A runtime asked for by name that this library does not have (or that did not start). */
static void runtimes_check_wanted(struct otelprof *p)
{
	for (const char *s = p->runtimes_wanted; s && *s;) {
		const char *e = strchr(s, ',');
		size_t l = e ? (size_t)(e - s) : strlen(s);
		bool have = false;

		for (int k = 0; k < OP_RUNTIME_MAX && !have; k++)
			have = p->runtimes[k] && strlen(p->runtimes[k]->name) == l &&
			       !memcmp(p->runtimes[k]->name, s, l);
		if (!have && l)
			op_warn("tracers: %.*s is named but not running in this library (not built "
				"in, "
				"or unavailable: see above); its code shows as native frames",
				(int)l, s);
		s += l + (e != NULL);
	}
}

static void runtimes_close(struct otelprof *p)
{
	for (int k = 0; k < OP_RUNTIME_MAX; k++) {
		if (p->runtimes[k] && p->runtimes[k]->free)
			p->runtimes[k]->free(p->runtimes[k]->ctx);
		p->runtimes[k] = NULL;
	}
}

/* ------------------------------------------------------------------ record handling */

static uint32_t marker_location(struct otelprof *p, const char *what)
{
	struct op_function_desc fd = { .name = what, .system_name = what };
	struct op_line_desc line = { .function = op_profile_function(p->profile, &fd) };

	return op_profile_location(p->profile, 0, 0, &line, 1, OP_FRAME_ABORT);
}

/* The cache slot for this frame, or NULL (no memory); *hit when it holds the frame. */
static struct loc_cache_ent *loc_cache_slot(struct otelprof *p, const struct loc_cache_ent *k,
					    bool *hit)
{
	uint64_t h = (k->addr ^ (uint64_t)(uintptr_t)k->file ^ (k->start << 7) ^ k->path_hash) *
		     0x9e3779b97f4a7c15ull;
	struct loc_cache_ent *e;

	*hit = false;
	if (!p->loc_cache) {
		p->loc_cache = calloc(1u << LOC_CACHE_BITS, sizeof(*p->loc_cache));
		if (!p->loc_cache)
			return NULL;
	}
	e = &p->loc_cache[h >> (64 - LOC_CACHE_BITS)];
	*hit = e->gen == p->loc_gen && e->addr == k->addr && e->file == k->file &&
	       e->start == k->start && e->end == k->end && e->offset == k->offset &&
	       e->path_hash == k->path_hash && e->leaf == k->leaf;
	return e;
}

/* A location from the cache (counting it as the lookup would have), or OP_PROFILE_ERR. */
static uint32_t loc_cache_get(struct otelprof *p, const struct loc_cache_ent *k,
			      struct loc_cache_ent **slot)
{
	bool hit;

	*slot = loc_cache_slot(p, k, &hit);
	if (!hit)
		return OP_PROFILE_ERR;
	if ((*slot)->unsymbolized)
		p->stats.unsymbolized++;
	return (*slot)->loc;
}

static uint32_t loc_cache_put(struct otelprof *p, struct loc_cache_ent *slot,
			      const struct loc_cache_ent *k, uint32_t loc, bool unsymbolized)
{
	if (slot && loc != OP_PROFILE_ERR) {
		*slot = *k;
		slot->gen = p->loc_gen;
		slot->loc = loc;
		slot->unsymbolized = unsymbolized;
	}
	return loc;
}

static uint32_t kernel_location(struct otelprof *p, uint64_t addr)
{
	struct op_line_desc line = { 0 };
	const char *module = NULL, *sym = NULL;
	char name[256];
	struct loc_cache_ent key = { .addr = addr }, *slot;
	uint32_t loc = loc_cache_get(p, &key, &slot);

	if (loc != OP_PROFILE_ERR)
		return loc;

	if (p->ksyms && !(p->flags & OTELPROF_F_NO_SYMBOLIZE))
		sym = op_ksyms_resolve(p->ksyms, addr, &module);
	if (sym) {
		struct op_function_desc fd = { .system_name = sym, .name = sym };

		if (module) {
			snprintf(name, sizeof(name), "%s [%s]", sym, module);
			fd.name = name;
		}
		line.function = op_profile_function(p->profile, &fd);
	} else {
		p->stats.unsymbolized++;
	}
	/* mapping 0: the builder's shared [kernel.kallsyms] mapping */
	loc = op_profile_location(p->profile, 0, addr, &line, sym ? 1 : 0, OP_FRAME_KERNEL);
	return loc_cache_put(p, slot, &key, loc, !sym);
}

/*
 * One user frame. @leaf: the interrupted PC; other frames are return addresses, looked up
 * at addr - 1 so the call instruction (and its line) is what gets named.
 */
static uint32_t user_location(struct otelprof *p, struct op_proc *proc, uint64_t addr, bool leaf)
{
	struct op_line_desc lines[OP_MAX_INLINE];
	struct op_sym_result sr;
	struct op_mapping_desc md = { 0 };
	struct op_vma *vma = NULL;
	struct op_file *file = NULL;
	uint32_t mapping = 0;
	size_t n = 0;
	struct loc_cache_ent key = { .addr = addr, .leaf = leaf }, *slot = NULL;
	bool deferred = false;
	uint32_t loc;

	if (proc) {
		vma = op_proc_find_vma(proc, addr);
		if (!vma && op_proctab_refresh(p->procs, proc->pid, false) == 0)
			vma = op_proc_find_vma(proc, addr);
	}
	if (vma && vma->path) {
		file = op_proc_vma_file(p->procs, proc, vma);
		key.file = file ? (const void *)file : (const void *)vma; /* never NULL here */
		key.start = vma->start;
		key.end = vma->end;
		key.offset = vma->offset;
		key.path_hash = (uint32_t)op_hash_bytes(vma->path, strlen(vma->path));
		loc = loc_cache_get(p, &key, &slot);
		if (loc != OP_PROFILE_ERR) {
			if (!slot->deferred)
				return loc;
			/* named without the DWARF that waits: again once it is read */
			if (op_file_dwarf_waits(file, leaf)) {
				p->stats.frames_dwarf_deferred++;
				return loc;
			}
		}
	}
	if (vma) {
		md.memory_start = vma->start;
		md.memory_limit = vma->end;
		md.file_offset = vma->offset;
		md.filename = vma->path;
		if (file) {
			/* per file, not per address: one vma must stay one mapping */
			md.has_functions = !(p->flags & OTELPROF_F_NO_SYMBOLIZE);
			md.has_line_numbers = md.has_functions && op_file_has_lines(file);
			md.has_inline_frames = md.has_functions && op_file_has_inline_frames(file);
			md.build_id_gnu = op_file_build_id_gnu(file);
			md.build_id_go = op_file_build_id_go(file);
			md.build_id_htlhash = op_file_htlhash(file);
		}
	}
	if (file && !(p->flags & OTELPROF_F_NO_SYMBOLIZE)) {
		uint64_t off = (leaf ? addr : addr - 1) - vma->start + vma->offset, vaddr;

		if (op_file_offset_to_vaddr(file, off, &vaddr) == 0 &&
		    op_file_symbolize_frame(file, vaddr, leaf, &sr) == 0) {
			deferred = sr.deferred;
			for (size_t i = 0; i < sr.n && i < OP_MAX_INLINE; i++) {
				struct op_function_desc fd = {
					.name = sr.lines[i].name,
					.system_name = sr.lines[i].system_name,
					.filename = sr.lines[i].file,
					.start_line = sr.lines[i].start_line,
				};

				lines[n].function = op_profile_function(p->profile, &fd);
				lines[n].line = sr.lines[i].line;
				lines[n].column = 0;
				n++;
			}
		}
	}
	/* anonymous executable memory (JIT code): the process's perf map, if it writes one */
	if (!n && proc && (!vma || !vma->path) && !(p->flags & OTELPROF_F_NO_SYMBOLIZE)) {
		const char *name =
			op_perfmaps_lookup(p->perfmaps, proc->pid, leaf ? addr : addr - 1);

		if (name) {
			struct op_function_desc fd = { .name = name, .system_name = name };

			lines[n].function = op_profile_function(p->profile, &fd);
			lines[n].line = 0;
			lines[n].column = 0;
			n++;
		}
	}
	if (!n)
		p->stats.unsymbolized++;
	if (vma)
		mapping = op_profile_mapping(p->profile, &md);
	loc = op_profile_location(p->profile, mapping, addr, lines, n,
				  file && op_file_is_go(file) ? OP_FRAME_GO : OP_FRAME_NATIVE);
	if (deferred)
		p->stats.frames_dwarf_deferred++;
	key.deferred = deferred;
	return loc_cache_put(p, slot, &key, loc, !n);
}

static const char *thread_state_name(unsigned int state)
{
	static const char *const names[] = {
		[OP_STATE_NONE] = NULL,
		[OP_STATE_SLEEPING] = "sleeping",
		[OP_STATE_UNINTERRUPTIBLE] = "uninterruptible",
		[OP_STATE_PREEMPTED] = "preempted",
		[OP_STATE_STOPPED] = "stopped",
		[OP_STATE_OTHER] = "other",
	};

	return state < sizeof(names) / sizeof(names[0]) ? names[state] : "other";
}

static enum op_frame_type runtime_frame_type(unsigned int kind)
{
	switch (kind) {
	case OP_RUNTIME_PYTHON:
		return OP_FRAME_CPYTHON;
	case OP_RUNTIME_V8:
		return OP_FRAME_V8JS;
	case OP_RUNTIME_HOTSPOT:
		return OP_FRAME_HOTSPOT;
	}
	return OP_FRAME_NATIVE;
}

/*
 * The first kernel frame of @t to show. An off-CPU stack is taken by the sched_switch
 * program, whose own frames (the BPF program, the tracepoint's bpf_trace_run*) lead it:
 * the stack starts at __schedule, where the thread left the CPU.
 */
static size_t off_cpu_kernel_start(struct otelprof *p, const struct op_trace *t)
{
	size_t i = 0;

	if (t->origin != OP_ORIGIN_OFF_CPU || !p->ksyms)
		return 0;
	for (; i < t->n_kernel && i < 4; i++) {
		const char *module = NULL, *sym = op_ksyms_resolve(p->ksyms, t->frames[i], &module);

		if (!sym || (strncmp(sym, "bpf_prog_", 9) && strncmp(sym, "bpf_trace_run", 13) &&
			     strncmp(sym, "__bpf_trace_", 12)))
			break;
	}
	return i;
}

/* One frame of a language runtime (two trace slots: @payload of the tagged one, @data). */
static uint32_t runtime_location(struct otelprof *p, int pid, unsigned int kind, uint64_t payload,
				 uint64_t data)
{
	const struct op_runtime *rt = kind < OP_RUNTIME_MAX ? p->runtimes[kind] : NULL;
	struct op_line_desc lines[OP_MAX_INLINE];
	struct op_runtime_frame rf = { .address = payload };
	size_t n = 0;

	if (rt && rt->symbolize && !(p->flags & OTELPROF_F_NO_SYMBOLIZE) &&
	    rt->symbolize(rt->ctx, pid, payload, data, &rf) == 0) {
		for (size_t i = 0; i < rf.sym.n && i < OP_MAX_INLINE; i++) {
			struct op_function_desc fd = {
				.name = rf.sym.lines[i].name,
				.system_name = rf.sym.lines[i].system_name,
				.filename = rf.sym.lines[i].file,
				.start_line = rf.sym.lines[i].start_line,
			};

			lines[n].function = op_profile_function(p->profile, &fd);
			lines[n].line = rf.sym.lines[i].line;
			lines[n].column = 0;
			n++;
		}
	}
	if (!n)
		p->stats.unsymbolized++;
	return op_profile_location(p->profile, 0, rf.address, lines, n, runtime_frame_type(kind));
}

/*
 * The dynamic loader (ld.so): the same small file in every process, run before anything else,
 * so opened with the executable (a process of 3 ms spends a third of its samples in it).
 */
static bool is_loader(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strncmp(base, "ld-linux", 8) || !strncmp(base, "ld-musl", 7);
}

/* @sn's executable: @exe (taken over; NULL: none) and its base name. */
static void snap_set_exe(struct exec_snap *sn, char *exe)
{
	const char *slash = exe ? strrchr(exe, '/') : NULL;

	sn->proc.exe_path = exe;
	sn->proc.exe_name = exe ? (char *)(slash ? slash + 1 : exe) : NULL;
}

static struct op_proc *ghost_find(struct otelprof *p, int pid)
{
	for (struct exec_snap *g = p->ghosts; g; g = g->next)
		if (g->proc.pid == pid)
			return &g->proc;
	return NULL;
}

static void snap_free(struct exec_snap *sn)
{
	if (!sn)
		return;
	for (size_t i = 0; i < sn->proc.n_vmas; i++) {
		if (sn->proc.vmas[i].file)
			op_file_put(sn->proc.vmas[i].file);
		free(sn->proc.vmas[i].path);
	}
	free(sn->proc.vmas);
	free(sn->proc.exe_path);
	free(sn->proc.container_id);
	op_resource_free(&sn->proc.resource);
	free(sn);
}

static void ghost_drop(struct otelprof *p, int pid)
{
	for (struct exec_snap **gp = &p->ghosts; *gp; gp = &(*gp)->next) {
		if ((*gp)->proc.pid == pid) {
			struct exec_snap *g = *gp;

			*gp = g->next;
			snap_free(g);
			return;
		}
	}
}

/*
 * A young process's mappings at its exit (bpf/types.h, op_exit_maps), as a snapshot: each
 * file is the one other processes map with that device and inode (the process is gone, and
 * /proc/PID/map_files with it). Reader thread.
 */
static void exit_maps_read(struct otelprof *p, const struct op_exit_maps *e)
{
	struct exec_snap *sn = calloc(1, sizeof(*sn));
	uint32_t n = e->n < OP_EXIT_MAPS_MAX ? e->n : OP_EXIT_MAPS_MAX;

	if (!sn || !(sn->proc.vmas = calloc(n, sizeof(*sn->proc.vmas)))) {
		free(sn);
		return;
	}
	sn->proc.pid = (int)e->hdr.pid;
	for (uint32_t i = 0; i < n; i++) {
		const struct op_exit_vma *ev = &e->v[i];
		struct op_vma *v = &sn->proc.vmas[sn->proc.n_vmas];
		uint64_t dev = makedev(ev->dev >> 20, ev->dev & 0xfffff);
		struct op_file *f =
			ev->ino ? op_filecache_get_mapped(p->files, dev, ev->ino)
				: op_filecache_get(p->files, (int)e->hdr.pid, "[vdso]", 0, 0);
		const char *path = op_file_path(f);

		if (!f || !path || ev->end <= ev->start) {
			op_debug("exit maps of pid %u: no file for %llx-%llx dev %llx ino %llu",
				 e->hdr.pid, (unsigned long long)ev->start,
				 (unsigned long long)ev->end, (unsigned long long)dev,
				 (unsigned long long)ev->ino);
			op_file_put(f);
			continue;
		}
		*v = (struct op_vma){ .start = ev->start,
				      .end = ev->end,
				      .offset = ev->offset,
				      .file = f,
				      .file_tried = true,
				      .dev = dev,
				      .ino = ev->ino,
				      .path = strdup(path) };
		sn->proc.n_vmas++;
	}
	if (!sn->proc.n_vmas) {
		snap_free(sn);
		return;
	}
	pthread_mutex_lock(&p->q_lock);
	sn->next = p->exit_maps;
	p->exit_maps = sn;
	atomic_fetch_add(&p->n_exit_maps, 1);
	pthread_mutex_unlock(&p->q_lock);
}

/* The exit snapshot of @pid, taken off the list, or NULL. */
static struct exec_snap *exit_maps_take(struct otelprof *p, int pid)
{
	struct exec_snap *found = NULL;

	if (!atomic_load(&p->n_exit_maps))
		return NULL;
	pthread_mutex_lock(&p->q_lock);
	for (struct exec_snap **sp = &p->exit_maps; *sp; sp = &(*sp)->next) {
		if ((*sp)->proc.pid == pid) {
			found = *sp;
			*sp = found->next;
			found->next = NULL;
			atomic_fetch_sub(&p->n_exit_maps, 1);
			break;
		}
	}
	pthread_mutex_unlock(&p->q_lock);
	return found;
}

static int vma_start_cmp(const void *a, const void *b)
{
	const struct op_vma *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/*
 * @pid's samples meet its exit snapshot: it becomes the process's ghost, with what the
 * earlier snapshot had that the exit one lacks ([vdso], anonymous JIT code). False: no exit
 * snapshot of @pid waits. Under p->lock.
 */
static bool exit_maps_adopt(struct otelprof *p, int pid)
{
	struct exec_snap *sn = exit_maps_take(p, pid), *old;
	struct op_proc *was;

	if (!sn)
		return false;
	old = NULL;
	for (struct exec_snap **gp = &p->ghosts; *gp; gp = &(*gp)->next) {
		if ((*gp)->proc.pid == pid) {
			old = *gp;
			*gp = old->next;
			break;
		}
	}
	was = old ? &old->proc : op_proctab_get(p->procs, pid);
	if (was) {
		struct op_vma *nv =
			realloc(sn->proc.vmas, (sn->proc.n_vmas + was->n_vmas) * sizeof(*nv));

		if (nv) {
			sn->proc.vmas = nv;
			for (size_t i = 0; i < was->n_vmas; i++) {
				struct op_vma *w = &was->vmas[i];

				if (op_proc_find_vma(&sn->proc, w->start) ||
				    (w->path && w->path[0] == '/'))
					continue; /* the exit snapshot has the files */
				nv[sn->proc.n_vmas] = *w;
				nv[sn->proc.n_vmas].path = w->path ? strdup(w->path) : NULL;
				nv[sn->proc.n_vmas].file = NULL; /* opened again on use ([vdso]) */
				nv[sn->proc.n_vmas].file_tried = false;
				sn->proc.n_vmas++;
			}
			qsort(sn->proc.vmas, sn->proc.n_vmas, sizeof(*nv), vma_start_cmp);
		}
		memcpy(sn->proc.comm, was->comm, sizeof(sn->proc.comm));
		if (was->exe_path)
			snap_set_exe(sn, strdup(was->exe_path));
	}
	snap_free(old);
	sn->next = p->ghosts;
	p->ghosts = sn;
	return true;
}

/* A trace's labels, and the span they name (profile/links.h). */
struct trace_labels {
	struct op_kv kv[OP_MAX_LABELS + 1];
	char key[OP_MAX_LABELS][OP_LABEL_KEY_LEN + 4];
	char val[OP_MAX_LABELS][OP_LABEL_VAL_LEN + 4];
	size_t n;
	uint8_t trace_id[16], span_id[8];
	bool has_trace, has_span;
};

/*
 * The labels sent after @t's frames (@avail bytes of them). A key or value BPF had to cut
 * ends in "…", so that it never reads as the whole one; of equal keys the first wins (the
 * custom-labels ABI's rule). A label set larger than BPF reads gets one more label,
 * otelprof.labels_truncated=true.
 */
static void parse_labels(const struct op_trace *t, const uint8_t *blob, size_t avail,
			 struct trace_labels *tl)
{
	struct op_labels hdr;
	size_t n;

	tl->n = 0;
	tl->has_trace = tl->has_span = false;
	if (!t->ctx_len || t->ctx_len > avail || t->ctx_len < OP_LABELS_HDR_SIZE)
		return;
	memcpy(&hdr, blob, OP_LABELS_HDR_SIZE);
	n = hdr.n;
	if (n > OP_MAX_LABELS || OP_LABELS_HDR_SIZE + n * sizeof(struct op_label) > t->ctx_len)
		return;
	for (size_t i = 0; i < n; i++) {
		struct op_label l;
		bool dup = false;

		memcpy(&l, blob + OP_LABELS_HDR_SIZE + i * sizeof(l), sizeof(l));
		if (!l.klen || l.klen > OP_LABEL_KEY_LEN || l.vlen > OP_LABEL_VAL_LEN)
			continue;
		snprintf(tl->key[tl->n], sizeof(tl->key[0]), "%.*s%s", l.klen, l.key,
			 l.flags & OP_LABEL_KEY_CUT ? "\u2026" : "");
		snprintf(tl->val[tl->n], sizeof(tl->val[0]), "%.*s%s", l.vlen, l.val,
			 l.flags & OP_LABEL_VAL_CUT ? "\u2026" : "");
		for (size_t j = 0; j < tl->n && !dup; j++)
			dup = !strcmp(tl->key[j], tl->key[tl->n]);
		if (dup)
			continue;
		tl->kv[tl->n] = (struct op_kv){ tl->key[tl->n], tl->val[tl->n] };
		if (!(l.flags & OP_LABEL_VAL_CUT)) {
			if (!tl->has_trace &&
			    op_label_trace_id(tl->key[tl->n], tl->val[tl->n], tl->trace_id) == 0)
				tl->has_trace = true;
			else if (!tl->has_span &&
				 op_label_span_id(tl->key[tl->n], tl->val[tl->n], tl->span_id) == 0)
				tl->has_span = true;
		}
		tl->n++;
	}
	if (hdr.flags & OP_LABELS_MORE && tl->n < OP_MAX_LABELS + 1) {
		/* say that labels were left out rather than let the set look complete */
		tl->kv[tl->n++] = (struct op_kv){ "otelprof.labels_truncated", "true" };
	}
}

/*
 * Leading frames of an allocation sampled in-process that are the sampler's own
 * (libotelprof_alloc.so: its marker, its malloc): the stack starts at the caller, as the
 * allocator probes' stacks do.
 */
static size_t alloc_preload_frames(struct op_proc *proc, const struct op_trace *t)
{
	size_t i;

	if (t->origin != OP_ORIGIN_ALLOC || !(t->flags & OP_TRACE_ALLOC_PRELOAD) || !proc)
		return 0;
	for (i = 0; i + 1 < t->n_user; i++) {
		uint64_t pc = t->frames[t->n_kernel + i];
		struct op_vma *v;

		if (OP_FRAME_KIND(pc))
			break;
		v = op_proc_find_vma(proc, i ? pc - 1 : pc);
		if (!v || !op_alloc_is_preload(v->path))
			break;
	}
	return i;
}

/*
 * Add the trace @t as @n_kinds samples, one of each kinds[i] with values[i] (CPU and off-CPU
 * traces: one, of the kind their origin says, with their own value).
 */
static void handle_trace_as(struct otelprof *p, const struct op_trace *t, size_t size,
			    const enum op_sample_kind *kinds, const int64_t *values, size_t n_kinds)
{
	uint32_t locs[OP_MAX_KERNEL_FRAMES + OP_MAX_USER_FRAMES + 2];
	size_t nk = t->n_kernel, nu = t->n_user, n = 0;
	struct op_process_desc pd = { .pid = t->hdr.pid };
	struct op_sample_desc sd;
	struct op_proc *proc, *forked = NULL;
	char thread[OP_COMM_LEN + 1];

	struct op_kv res[OP_RESOURCE_MAX_ATTRS];
	struct trace_labels tl;

	if (nk > OP_MAX_KERNEL_FRAMES || nu > OP_MAX_USER_FRAMES ||
	    size < OP_TRACE_HDR_SIZE + (nk + nu) * sizeof(uint64_t)) {
		p->stats.dropped++;
		return;
	}
	parse_labels(t, (const uint8_t *)&t->frames[nk + nu],
		     size - OP_TRACE_HDR_SIZE - (nk + nu) * sizeof(uint64_t), &tl);
	if (op_profile_sample_count(p->profile) >= MAX_PENDING_SAMPLES) {
		p->stats.dropped++;
		return;
	}
	if (nu)
		exit_maps_adopt(p, (int)t->hdr.pid);
	proc = ghost_find(p, (int)t->hdr.pid);
	if (!proc && nu)
		proc = op_proctab_get(p->procs, t->hdr.pid);
	/*
	 * Between fork and exec the process runs in a copy of its parent's address space: its
	 * native frames are named from the parent's mappings (its own, read now, may already be
	 * another program's), and from its own where the parent's do not cover a PC.
	 */
	if (nu && t->fork_parent) {
		forked = ghost_find(p, (int)t->fork_parent);
		if (!forked)
			forked = op_proctab_get(p->procs, t->fork_parent);
	}

	for (size_t i = off_cpu_kernel_start(p, t); i < nk; i++)
		locs[n++] = kernel_location(p, t->frames[i]);
	for (size_t i = alloc_preload_frames(proc, t); i < nu; i++) {
		uint64_t slot = t->frames[nk + i];
		unsigned int kind = OP_FRAME_KIND(slot);

		if (!kind) {
			locs[n++] = user_location(
				p, forked && op_proc_find_vma(forked, slot) ? forked : proc, slot,
				i == 0);
		} else if (i + 1 < nu) {
			/* a runtime's frame: this slot and the next (bpf/types.h) */
			const struct op_runtime *rt =
				kind < OP_RUNTIME_MAX ? p->runtimes[kind] : NULL;
			const char *mark = rt && rt->marker ? rt->marker(OP_FRAME_PAYLOAD(slot),
									 t->frames[nk + i + 1])
							    : NULL;

			if (!mark)
				locs[n++] = runtime_location(p, (int)t->hdr.pid, kind,
							     OP_FRAME_PAYLOAD(slot),
							     t->frames[nk + i + 1]);
			else if (!p->opts.no_error_frames)
				locs[n++] = marker_location(p, mark);
			i++;
		}
	}
	if (p->opts.no_error_frames)
		; /* send_error_frames off: the stack ends at its last good frame */
	else if (t->flags & OP_TRACE_USER_TRUNCATED)
		locs[n++] = marker_location(p, "[truncated]");
	else if (t->unwind_error != OTELPROF_UNWIND_OK &&
		 t->unwind_error != OTELPROF_UNWIND_NO_USER_REGS &&
		 t->unwind_error != OTELPROF_UNWIND_IN_EXEC) {
		char what[64];

		snprintf(what, sizeof(what), "[unwind error: %s]",
			 otelprof_unwind_error_name(t->unwind_error));
		locs[n++] = marker_location(p, what);
	}
	p->stats.kernel_frames += nk;
	p->stats.user_frames += nu;

	memcpy(thread, t->comm, OP_COMM_LEN);
	thread[OP_COMM_LEN] = '\0';
	if (!proc)
		proc = op_proctab_get(p->procs, t->hdr.pid);
	if (proc) {
		pd.executable_name = proc->exe_name;
		pd.executable_path = proc->exe_path;
		pd.container_id = proc->container_id;
		for (size_t i = 0; i < proc->resource.n && i < OP_RESOURCE_MAX_ATTRS; i++)
			res[i] = (struct op_kv){ proc->resource.kv[2 * i],
						 proc->resource.kv[2 * i + 1] };
		pd.resource = res;
		pd.n_resource = proc->resource.n < OP_RESOURCE_MAX_ATTRS ? proc->resource.n
									 : OP_RESOURCE_MAX_ATTRS;
	} else {
		pd.executable_name = thread;
	}
	sd = (struct op_sample_desc){
		.stack = op_profile_stack(p->profile, locs, n),
		.process = &pd,
		.tid = t->tid,
		.thread_name = thread,
		.cpu = t->cpu,
		.thread_state = t->origin == OP_ORIGIN_OFF_CPU ? thread_state_name(t->state) : NULL,
		.timestamp_ns = t->ktime_ns + p->mono_to_unix_ns,
		.labels = tl.kv,
		.n_labels = tl.n,
		.trace_id = tl.has_trace && tl.has_span ? tl.trace_id : NULL,
		.span_id = tl.has_trace && tl.has_span ? tl.span_id : NULL,
	};
	for (size_t k = 0; k < n_kinds; k++) {
		sd.kind = kinds[k];
		sd.value = values[k];
		if (op_profile_add_sample(p->profile, &sd))
			p->stats.dropped++;
		else if (sd.kind == OP_SAMPLE_OFF_CPU)
			p->stats.off_cpu_intervals++;
		else if (sd.kind == OP_SAMPLE_CPU)
			p->stats.samples++;
	}
}

static void handle_trace(struct otelprof *p, const struct op_trace *t, size_t size)
{
	enum op_sample_kind kind = t->origin == OP_ORIGIN_OFF_CPU ? OP_SAMPLE_OFF_CPU
				   : t->origin == OP_ORIGIN_PROBE ? OP_SAMPLE_PROBE
								  : OP_SAMPLE_CPU;
	int64_t value = (int64_t)t->value;

	handle_trace_as(p, t, size, &kind, &value, 1);
}

/* ------------------------------------------------------------------ allocations */

static uint32_t alloc_bucket(uint32_t pid, uint64_t addr)
{
	uint64_t h = (addr >> 4) * 0x9e3779b97f4a7c15ull ^ (uint64_t)pid * 0xc2b2ae3d27d4eb4full;

	return (uint32_t)(h >> 40) % ALLOC_BUCKETS;
}

/* An unbiased integer for @x: floor(x), plus 1 with probability frac(x). */
static int64_t alloc_round(struct otelprof *p, double x)
{
	int64_t n = (int64_t)x;

	p->alloc.rng = p->alloc.rng * 6364136223846793005ull + 1442695040888963407ull;
	return n + ((double)(p->alloc.rng >> 11) * 0x1p-53 < x - (double)n);
}

/*
 * The sampled allocation @t (size t->value) as samples of @objects and @space, weighted by
 * the inverse of its probability of being sampled: estimates of every allocation's.
 */
static void alloc_add(struct otelprof *p, const struct op_trace *t, size_t size,
		      enum op_sample_kind objects, enum op_sample_kind space)
{
	double prob = op_alloc_probability(t->value, t->mean ? t->mean : p->opts.alloc_mean_bytes);
	enum op_sample_kind kinds[2] = { objects, space };
	int64_t values[2];

	if (!(prob > 0))
		prob = 1;
	values[0] = alloc_round(p, 1.0 / prob);
	values[1] = alloc_round(p, (double)t->value / prob);
	handle_trace_as(p, t, size, kinds, values, 2);
}

/* A sampled allocation's record: allocated, and live until its free. Under lock. */
static void alloc_record(struct otelprof *p, const struct op_trace *t, size_t size)
{
	struct alloc_state *a = &p->alloc;
	struct alloc_live *l;
	uint32_t b;

	p->stats.alloc_samples++;
	alloc_add(p, t, size, OP_SAMPLE_ALLOC_OBJECTS, OP_SAMPLE_ALLOC_SPACE);
	if (t->flags & OP_TRACE_ALLOC_NOTRACK) {
		p->stats.alloc_untracked++;
		return;
	}
	/* freed already (the free's record overtook this one)? */
	for (unsigned int i = 0; i < ALLOC_EARLY_FREES; i++) {
		struct op_alloc_free *e = &a->early[i];

		if (e->hdr.pid == t->hdr.pid && e->addr == t->addr && e->ktime_ns >= t->ktime_ns) {
			e->hdr.pid = 0;
			p->stats.alloc_unpaired_frees--;
			p->stats.alloc_frees++;
			return;
		}
	}
	if (!a->live && !(a->live = calloc(ALLOC_BUCKETS, sizeof(*a->live))))
		goto untracked;
	b = alloc_bucket(t->hdr.pid, t->addr);
	for (l = a->live[b]; l; l = l->next) {
		if (l->pid == t->hdr.pid && l->addr == t->addr) {
			/* the address was handed out again: its free was lost on the way */
			struct op_trace *copy = malloc(size);

			if (!copy)
				goto untracked;
			memcpy(copy, t, size);
			free(l->rec);
			l->rec = copy;
			l->size = (uint32_t)size;
			return;
		}
	}
	l = malloc(sizeof(*l));
	if (l && !(l->rec = malloc(size))) {
		free(l);
		l = NULL;
	}
	if (!l)
		goto untracked;
	memcpy(l->rec, t, size);
	l->pid = t->hdr.pid;
	l->addr = t->addr;
	l->size = (uint32_t)size;
	l->next = a->live[b];
	a->live[b] = l;
	a->n_live++;
	return;
untracked:
	p->stats.alloc_untracked++;
	op_alloc_forget(a->probes, (int)t->hdr.pid, t->addr);
}

/* A sampled allocation was freed. Under lock. */
static void alloc_freed(struct otelprof *p, const struct op_alloc_free *e)
{
	struct alloc_state *a = &p->alloc;
	struct alloc_live **pp, *l;

	for (pp = a->live ? &a->live[alloc_bucket(e->hdr.pid, e->addr)] : NULL; pp && *pp;
	     pp = &(*pp)->next) {
		l = *pp;
		if (l->pid == e->hdr.pid && l->addr == e->addr) {
			*pp = l->next;
			free(l->rec);
			free(l);
			a->n_live--;
			p->stats.alloc_frees++;
			return;
		}
	}
	/* not seen (yet): its record may still be on the way */
	p->stats.alloc_unpaired_frees++;
	a->early[a->early_next++ % ALLOC_EARLY_FREES] = *e;
}

/* @pid is gone or exec'd: its allocations with it (and their in-use map entries). Under lock. */
static void alloc_drop_pid(struct otelprof *p, uint32_t pid)
{
	struct alloc_state *a = &p->alloc;

	op_alloc_forget_pid(a->probes, (int)pid);
	for (size_t b = 0; a->n_live && b < ALLOC_BUCKETS; b++) {
		for (struct alloc_live **pp = &a->live[b], *l; (l = *pp);) {
			if (l->pid != pid) {
				pp = &l->next;
				continue;
			}
			*pp = l->next;
			op_alloc_forget(a->probes, (int)pid, l->addr);
			free(l->rec);
			free(l);
			a->n_live--;
		}
	}
}

/*
 * The in-use profile: every live sampled allocation, into the profile, stamped now (the
 * time the snapshot describes, inside the profile's span; an allocation may be older than
 * the profile). Under lock.
 */
static void alloc_snapshot(struct otelprof *p)
{
	struct alloc_state *a = &p->alloc;
	uint64_t now = clock_ns(CLOCK_MONOTONIC);

	for (size_t b = 0; a->n_live && b < ALLOC_BUCKETS; b++) {
		for (struct alloc_live *l = a->live[b]; l; l = l->next) {
			uint64_t when = l->rec->ktime_ns;

			l->rec->ktime_ns = now;
			alloc_add(p, l->rec, l->size, OP_SAMPLE_INUSE_OBJECTS,
				  OP_SAMPLE_INUSE_SPACE);
			l->rec->ktime_ns =
				when; /* the early-free check compares allocation times */
		}
	}
}

static void alloc_free_all(struct otelprof *p)
{
	struct alloc_state *a = &p->alloc;

	for (size_t b = 0; a->live && b < ALLOC_BUCKETS; b++) {
		while (a->live[b]) {
			struct alloc_live *l = a->live[b];

			a->live[b] = l->next;
			free(l->rec);
			free(l);
		}
	}
	free(a->live);
	a->live = NULL;
	a->n_live = 0;
}

/* Probe the allocators of the targets, or of every process (whole-system). */
static void alloc_attach(struct otelprof *p)
{
	if (p->opts.pid_cnt) {
		for (size_t i = 0; i < p->opts.pid_cnt; i++)
			if (op_alloc_probe_process(p->alloc.probes, p->opts.pids[i], true) <= 0)
				op_warn("pid %d: no allocator found to probe (glibc, jemalloc, "
					"tcmalloc or mimalloc, or an executable defining malloc): "
					"no allocation samples from it",
					p->opts.pids[i]);
	} else {
		DIR *d = opendir("/proc");
		struct dirent *de;

		while (d && (de = readdir(d))) {
			int pid = atoi(de->d_name);

			if (pid > 0 && pid != getpid())
				op_alloc_probe_process(p->alloc.probes, pid, false);
		}
		if (d)
			closedir(d);
	}
}

/* Keep an off-CPU stack until its interval ends (struct offcpu_pending). Under lock. */
static void offcpu_stash(struct otelprof *p, const struct op_trace *t, size_t size)
{
	struct offcpu_pending *slot;
	struct op_trace *copy;

	if (!p->pending) {
		p->pending = calloc(OFFCPU_PENDING_SLOTS, sizeof(*p->pending));
		if (!p->pending) {
			p->stats.off_cpu_unpaired++;
			return;
		}
	}
	slot = &p->pending[t->tid % OFFCPU_PENDING_SLOTS];
	if (slot->tid) {
		/* another stack of this thread (its end was lost) or of a thread in the same slot
		 */
		p->stats.off_cpu_unpaired++;
		free(slot->rec);
		slot->tid = 0;
	}
	copy = malloc(size);
	if (!copy) {
		p->stats.off_cpu_unpaired++;
		return;
	}
	memcpy(copy, t, size);
	*slot = (struct offcpu_pending){ t->tid, (uint32_t)size, copy };
}

/* An interval ended: its stack becomes a sample weighted by its length. Under lock. */
static void offcpu_end(struct otelprof *p, const struct op_offcpu_end *e)
{
	struct offcpu_pending *slot =
		p->pending ? &p->pending[e->tid % OFFCPU_PENDING_SLOTS] : NULL;
	struct op_trace *t;
	double ns;

	if (!slot || slot->tid != e->tid || slot->rec->hdr.pid != e->hdr.pid)
		return; /* its stack was not kept (counted when it was dropped) */
	t = slot->rec;
	/* the sample's time is its end, as the upstream profiler's; weighted to estimate all */
	t->ktime_ns = e->ktime_ns;
	ns = (double)e->ns;
	if (p->opts.off_cpu_threshold > 0 && p->opts.off_cpu_threshold < 1)
		ns /= p->opts.off_cpu_threshold;
	t->value = (uint64_t)ns;
	t->flags &= ~OP_TRACE_OFFCPU_PENDING;
	handle_trace(p, t, slot->size);
	free(slot->rec);
	slot->tid = 0;
	slot->rec = NULL;
}

static void offcpu_free(struct otelprof *p)
{
	for (size_t i = 0; p->pending && i < OFFCPU_PENDING_SLOTS; i++)
		free(p->pending[i].rec);
	free(p->pending);
	p->pending = NULL;
}

#define QUEUE_ALIGN(n) (((n) + 7) & ~(size_t)7)

/* Copy a trace record to the queue. -ENOSPC when full (the caller symbolizes it now). */
static int queue_push(struct trace_queue *q, const void *data, size_t size)
{
	size_t need = sizeof(size_t) + QUEUE_ALIGN(size);

	if (q->tail + need > q->cap && q->head) {
		memmove(q->buf, q->buf + q->head, q->tail - q->head);
		q->tail -= q->head;
		q->head = 0;
	}
	if (q->tail + need > q->cap) {
		size_t cap = q->cap ? q->cap : 64 << 10;
		uint8_t *nb;

		while (cap < q->tail + need)
			cap *= 2;
		if (cap > MAX_QUEUED_BYTES)
			return -ENOSPC;
		nb = realloc(q->buf, cap);
		if (!nb)
			return -ENOSPC;
		q->buf = nb;
		q->cap = cap;
	}
	memcpy(q->buf + q->tail, &size, sizeof(size));
	memcpy(q->buf + q->tail + sizeof(size_t), data, size);
	q->tail += need;
	q->n++;
	return 0;
}

/* Take the oldest record into @out (sizeof(struct op_trace) bytes). Under q_lock. */
static bool queue_pop(struct trace_queue *q, void *out, size_t *size)
{
	size_t len;

	if (q->head == q->tail)
		return false;
	memcpy(&len, q->buf + q->head, sizeof(len));
	/* enqueue() never queues more: a longer one is dropped (size 0) */
	*size = len <= sizeof(struct op_trace) ? len : 0;
	memcpy(out, q->buf + q->head + sizeof(size_t), *size);
	q->head += sizeof(size_t) + QUEUE_ALIGN(len);
	q->n--;
	if (q->head == q->tail) {
		q->head = q->tail = 0;
		if (q->cap > (1u << 20)) {
			/* a backlog is over: give its memory back */
			free(q->buf);
			q->buf = NULL;
			q->cap = 0;
		}
	}
	return true;
}

/* Every plain user frame of @t (a valid trace) inside one of @proc's mappings. */
static bool frames_mapped(struct op_proc *proc, const struct op_trace *t)
{
	size_t nk = t->n_kernel, nu = t->n_user;

	for (size_t i = 0; i < nu; i++) {
		uint64_t slot = t->frames[nk + i];

		if (OP_FRAME_KIND(slot))
			i++; /* a runtime's frame: two slots, no address */
		else if (!op_proc_find_vma(proc, slot))
			return false;
	}
	return true;
}

/*
 * Hold @t back when its process is gone and its frames fall outside the mappings known of it
 * (a child 3 ms old: libc mapped after its exec snapshot), and its exit record is still to
 * come: the reader may not have read the exit mappings BPF sent just before it. True when
 * kept (a copy). Under p->lock.
 */
static bool park_trace(struct otelprof *p, const struct op_trace *t, size_t size)
{
	size_t nk = t->n_kernel, nu = t->n_user;
	int pid = (int)t->hdr.pid;
	struct op_proc *proc;
	struct parked_rec *r;

	if (!nu || (p->flags & OTELPROF_F_NO_SYMBOLIZE) || nk > OP_MAX_KERNEL_FRAMES ||
	    nu > OP_MAX_USER_FRAMES || size < OP_TRACE_HDR_SIZE + (nk + nu) * sizeof(uint64_t) ||
	    p->parked_bytes + size > PARK_MAX_BYTES)
		return false;
	if (exit_maps_adopt(p, pid))
		return false; /* its exit mappings are in: the sample is named from them now */
	proc = ghost_find(p, pid);
	if (!proc)
		proc = op_proctab_get(p->procs, pid);
	if (proc && (proc->exited_ns || frames_mapped(proc, t)))
		return false;
	/* alive (its mappings read again) or gone */
	if (op_proctab_refresh(p->procs, pid, true) != -ESRCH)
		return false;
	if (p->n_parked == p->cap_parked) {
		size_t cap = p->cap_parked ? 2 * p->cap_parked : 64;
		struct parked_rec *nv = realloc(p->parked, cap * sizeof(*nv));

		if (!nv)
			return false;
		p->parked = nv;
		p->cap_parked = cap;
	}
	r = &p->parked[p->n_parked];
	r->rec = malloc(size);
	if (!r->rec)
		return false;
	memcpy(r->rec, t, size);
	r->pid = pid;
	r->size = (uint32_t)size;
	r->since_ns = clock_ns(CLOCK_MONOTONIC);
	p->n_parked++;
	p->parked_bytes += size;
	p->stats.samples_parked++;
	return true;
}

/*
 * Symbolize parked samples: @pid's (its exit record is next), else (@pid 0) those parked at
 * least @min_age_ns ago. Under p->lock.
 */
static void park_release(struct otelprof *p, int pid, uint64_t min_age_ns)
{
	uint64_t now = clock_ns(CLOCK_MONOTONIC);
	size_t k = 0;

	for (size_t i = 0; i < p->n_parked; i++) {
		struct parked_rec r = p->parked[i];

		if (pid ? r.pid == pid : now - r.since_ns >= min_age_ns) {
			handle_trace(p, r.rec, r.size);
			p->parked_bytes -= r.size;
			free(r.rec);
		} else {
			p->parked[k++] = r;
		}
	}
	p->n_parked = k;
}

static void park_free(struct otelprof *p)
{
	for (size_t i = 0; i < p->n_parked; i++)
		free(p->parked[i].rec);
	free(p->parked);
	p->parked = NULL;
	p->n_parked = p->cap_parked = p->parked_bytes = 0;
}

/* One queued record (trace, exec or exit). Under p->lock. */
static void handle_queued(struct otelprof *p, const void *data, size_t size)
{
	const struct op_event_hdr *h = data;

	if (size < sizeof(*h)) {
		p->stats.dropped++;
		return;
	}
	if (p->n_parked && clock_ns(CLOCK_MONOTONIC) - p->parked[0].since_ns >= PARK_MAX_NS)
		park_release(p, 0, PARK_MAX_NS);
	if (h->type == OP_EV_OFFCPU_END && size >= sizeof(struct op_offcpu_end)) {
		offcpu_end(p, data);
	} else if (h->type == OP_EV_ALLOC_FREE && size >= sizeof(struct op_alloc_free)) {
		alloc_freed(p, data);
	} else if (h->type == OP_EV_TRACE && size >= OP_TRACE_HDR_SIZE &&
		   ((const struct op_trace *)data)->origin == OP_ORIGIN_ALLOC) {
		alloc_record(p, data, size);
	} else if (h->type == OP_EV_TRACE && size >= OP_TRACE_HDR_SIZE &&
		   (((const struct op_trace *)data)->flags & OP_TRACE_OFFCPU_PENDING)) {
		offcpu_stash(p, data, size);
	} else if (h->type == OP_EV_EXIT) {
		if (p->n_parked)
			park_release(p, (int)h->pid, 0); /* its exit mappings are in by now */
		alloc_drop_pid(p, h->pid);
		ghost_drop(p, (int)h->pid);
		snap_free(exit_maps_take(p, (int)h->pid)); /* no sample of it met it */
		op_perfmaps_forget(p->perfmaps, (int)h->pid);
		op_proctab_exited(p->procs, h->pid, clock_ns(CLOCK_MONOTONIC));
	} else if (h->type == OP_EV_EXEC && size == sizeof(struct exec_rec)) {
		struct exec_snap *sn = ((const struct exec_rec *)data)->snap;
		struct op_proc *proc;

		alloc_drop_pid(p, h->pid); /* a new address space */
		ghost_drop(p, (int)h->pid);
		if (op_proctab_refresh(p->procs, h->pid, true) == 0 &&
		    (proc = op_proctab_get(p->procs, h->pid))) {
			/* alive: open its executable now, before it can exit */
			for (size_t i = 0; i < proc->n_vmas; i++)
				if (proc->vmas[i].path &&
				    ((proc->exe_path &&
				      !strcmp(proc->vmas[i].path, proc->exe_path)) ||
				     is_loader(proc->vmas[i].path)))
					op_proc_vma_file(p->procs, proc, &proc->vmas[i]);
			snap_free(sn);
		} else if (sn) {
			sn->next = p->ghosts;
			p->ghosts = sn;
		}
	} else if (h->type != OP_EV_TRACE || !park_trace(p, data, size)) {
		handle_trace(p, data, size);
	}
}

/*
 * Symbolize what is queued: everything (@max_ns 0), or until @max_ns have passed (the rest
 * stays queued, in order). Under p->lock.
 */
static void queue_flush(struct otelprof *p, uint64_t max_ns)
{
	struct op_trace *rec = malloc(sizeof(*rec));
	uint64_t end = max_ns ? clock_ns(CLOCK_MONOTONIC) + max_ns : 0;
	size_t size;

	if (!rec)
		return;
	for (;;) {
		bool got;

		if (end && clock_ns(CLOCK_MONOTONIC) >= end)
			break;
		pthread_mutex_lock(&p->q_lock);
		got = queue_pop(&p->queue, rec, &size);
		pthread_mutex_unlock(&p->q_lock);
		if (!got)
			break;
		handle_queued(p, rec, size);
	}
	if (!max_ns && p->n_parked)
		park_release(p, 0, 0); /* the last records: no exit record will come for these */
	free(rec);
}

/* Free the snapshots of exec records still queued (closing without a last collect). */
static void queue_flush_snaps(struct otelprof *p)
{
	struct trace_queue *q = &p->queue;

	for (size_t at = q->head; at < q->tail;) {
		struct exec_rec rec;
		size_t size;

		memcpy(&size, q->buf + at, sizeof(size));
		if (size == sizeof(rec)) {
			memcpy(&rec, q->buf + at + sizeof(size_t), sizeof(rec));
			if (rec.hdr.type == OP_EV_EXEC)
				snap_free(rec.snap);
		}
		at += sizeof(size_t) + QUEUE_ALIGN(size);
	}
	q->head = q->tail = 0;
	q->n = 0;
}

/* Queue a record for the symbolizer; symbolize it now when the queue is full. */
static void enqueue(struct otelprof *p, const void *data, size_t size)
{
	int err;

	pthread_mutex_lock(&p->q_lock);
	err = queue_push(&p->queue, data, size);
	pthread_mutex_unlock(&p->q_lock);
	if (!err)
		p->queued = true; /* the symbolizer is woken once per poll (reader_main) */
	if (err) {
		pthread_mutex_lock(&p->lock);
		handle_queued(p, data, size);
		pthread_mutex_unlock(&p->lock);
	}
}

/*
 * A new program: its mappings and its executable file, read now while it surely lives (it
 * may exit before the symbolizer gets to its samples, and /proc/PID/map_files goes with it).
 * Libraries stay lazy: loading every library of every exec (libLLVM for each clang) here
 * would delay the reader. Takes no lock but the file cache's own.
 */
static struct exec_snap *exec_snapshot(struct otelprof *p, int pid)
{
	struct op_maps_entry *m = malloc(sizeof(*m));
	struct exec_snap *sn = calloc(1, sizeof(*sn));
	char path[64], *line = NULL, *exe;
	size_t cap = 0, vcap = 0;
	FILE *fp;

	if (!m || !sn)
		goto fail;
	sn->proc.pid = pid;
	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	exe = realpath(path, NULL);
	snap_set_exe(sn, exe);
	op_proctab_resource_read(p->procs, pid, &sn->proc.resource);
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	fp = fopen(path, "re");
	if (!fp)
		goto fail;
	while (getline(&line, &cap, fp) > 0) {
		struct op_vma *v;

		if (op_parse_maps_line(line, m) || !m->executable)
			continue;
		if (sn->proc.n_vmas == vcap) {
			size_t nc = vcap ? vcap * 2 : 16;
			struct op_vma *nv = realloc(sn->proc.vmas, nc * sizeof(*nv));

			if (!nv)
				break;
			sn->proc.vmas = nv;
			vcap = nc;
		}
		v = &sn->proc.vmas[sn->proc.n_vmas++];
		*v = (struct op_vma){ .start = m->start,
				      .end = m->end,
				      .offset = m->offset,
				      .deleted = m->deleted,
				      .file_tried = true,
				      .dev = makedev(m->dev_major, m->dev_minor),
				      .ino = m->inode };
		if (m->path[0])
			v->path = strdup(m->path);
		if (v->path && !m->deleted &&
		    ((exe && !strcmp(v->path, exe)) || !strcmp(v->path, "[vdso]") ||
		     is_loader(v->path)))
			v->file = op_filecache_get(p->files, pid, v->path, v->start, v->end);
		else if (v->path && !m->deleted)
			/* a library another process maps (libc): already open, nothing to load */
			v->file = op_filecache_get_mapped(p->files, v->dev, v->ino);
	}
	free(line);
	fclose(fp);
	free(m);
	/* /proc/PID/maps lists mappings by address: already sorted */
	return sn;
fail:
	free(m);
	if (sn)
		free(sn->proc.exe_path);
	free(sn);
	return NULL;
}

static void on_exec(struct otelprof *p, const struct op_proc_event *e)
{
	struct exec_rec rec = { .hdr = e->hdr };

	/* the snapshot first: loading unwind tables may take a while (a big binary) */
	if (!(p->flags & OTELPROF_F_NO_SYMBOLIZE))
		rec.snap = exec_snapshot(p, (int)e->hdr.pid);
	if (rec.snap)
		memcpy(rec.snap->proc.comm, e->comm, sizeof(rec.snap->proc.comm));
	pthread_mutex_lock(&p->u_lock);
	op_unwinder_on_exec(p->unwinder, (int)e->hdr.pid, e->ktime_ns);
	pthread_mutex_unlock(&p->u_lock);
	enqueue(p, &rec, sizeof(rec));
}

/*
 * A sample with a PC outside every mapping read so far made the unwinder re-read @pid's
 * mappings (ld.so has mapped libc since the exec): a new snapshot, queued before that sample,
 * so that its frames and the next ones resolve even when the process (3 ms of life in an exec
 * storm) is gone by the time they are symbolized.
 */
static void on_maps_changed(struct otelprof *p, const struct op_trace *t)
{
	struct exec_rec rec = { .hdr = t->hdr };

	rec.hdr.type = OP_EV_EXEC;
	rec.snap = exec_snapshot(p, (int)t->hdr.pid);
	if (!rec.snap)
		return;
	memcpy(rec.snap->proc.comm, t->comm, sizeof(rec.snap->proc.comm));
	enqueue(p, &rec, sizeof(rec));
}

static void on_event(void *ctx, const void *data, size_t size)
{
	const struct op_event_hdr *h = data;
	struct otelprof *p = ctx;

	switch (h->type) {
	case OP_EV_TRACE:
		if (size >= OP_TRACE_HDR_SIZE) {
			const struct op_trace *t = data;
			bool reread;

			pthread_mutex_lock(&p->u_lock);
			reread = op_unwinder_on_trace(p->unwinder, t);
			pthread_mutex_unlock(&p->u_lock);
			if (reread && t->unwind_error == OTELPROF_UNWIND_UNKNOWN_MAPPING &&
			    !(p->flags & OTELPROF_F_NO_SYMBOLIZE))
				on_maps_changed(p, t);
		}
		if (size > sizeof(struct op_trace))
			size = sizeof(struct op_trace); /* longer than any record BPF writes */
		enqueue(p, data, size);
		break;
	case OP_EV_EXEC:
		if (size >= sizeof(struct op_proc_event))
			on_exec(p, data);
		break;
	case OP_EV_EXEC_EARLY:
		/* the new program's tables now; its mappings for names with the exec in order */
		if (size >= sizeof(struct op_proc_event)) {
			const struct op_proc_event *e = data;

			pthread_mutex_lock(&p->u_lock);
			op_unwinder_on_exec(p->unwinder, (int)e->hdr.pid, e->ktime_ns);
			pthread_mutex_unlock(&p->u_lock);
		}
		break;
	case OP_EV_OFFCPU_END:
		if (size >= sizeof(struct op_offcpu_end))
			enqueue(p, data, sizeof(struct op_offcpu_end));
		break;
	case OP_EV_EXIT_MAPS:
		if (size >= offsetof(struct op_exit_maps, v) &&
		    size >= offsetof(struct op_exit_maps, v) +
				    ((const struct op_exit_maps *)data)->n *
					    sizeof(struct op_exit_vma) &&
		    !(p->flags & OTELPROF_F_NO_SYMBOLIZE))
			exit_maps_read(p, data);
		break;
	case OP_EV_ALLOC_FREE:
		if (size >= sizeof(struct op_alloc_free))
			enqueue(p, data, sizeof(struct op_alloc_free));
		break;
	case OP_EV_EXIT:
		pthread_mutex_lock(&p->u_lock);
		op_unwinder_on_exit(p->unwinder, h->pid);
		pthread_mutex_unlock(&p->u_lock);
		enqueue(p, h, sizeof(*h)); /* after the samples still queued */
		break;
	default:
		pthread_mutex_lock(&p->lock);
		p->stats.dropped++;
		pthread_mutex_unlock(&p->lock);
		break;
	}
}

/*
 * Probabilistic profiling: a new interval begins; sampling is on in it with a chance of
 * threshold in 100 (upstream's probabilistic_threshold and _interval). Reader thread (and
 * start, before it runs).
 */
static void prob_interval(struct otelprof *p)
{
	bool on = (unsigned int)(rand_r(&p->prob_seed) % 100) < p->opts.probabilistic_threshold;
	uint64_t now = clock_ns(CLOCK_MONOTONIC);

	op_sampler_pause(p->sampler, !on);
	p->prob_next_ns = now + p->opts.probabilistic_interval_ns;
	pthread_mutex_lock(&p->lock);
	p->stats.prob_intervals++;
	p->stats.prob_intervals_on += on;
	pthread_mutex_unlock(&p->lock);
	op_debug("probabilistic profiling: sampling %s for the next %llu ms", on ? "on" : "off",
		 (unsigned long long)(p->opts.probabilistic_interval_ns / 1000000));
}

/* The wall clock's offset from the monotonic clock, measured again (clock_sync_interval). */
static void clock_sync(struct otelprof *p)
{
	int64_t off = (int64_t)(clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_MONOTONIC));

	pthread_mutex_lock(&p->lock);
	op_debug("clock sync: wall clock offset moved by %lld ns",
		 (long long)(off - p->mono_to_unix_ns));
	p->mono_to_unix_ns = off;
	pthread_mutex_unlock(&p->lock);
	p->clock_next_ns = p->opts.clock_sync_interval_ns
				   ? clock_ns(CLOCK_MONOTONIC) + p->opts.clock_sync_interval_ns
				   : 0;
}

/* the reader's longest sleep between batches (see reader_main) */
#define READER_POLL_NS (250ull * 1000000ull)

static void *reader_main(void *arg)
{
	struct otelprof *p = arg;

	/*
	 * Ordinary samples are committed without a wakeup (bpf/sampler.bpf.c): the poll returns
	 * on its timeout with a batch, at once for what cannot wait (exec, a process to load),
	 * or when an eighth of the ring is pending. The symbolizer is woken once per poll, not
	 * once per record. On an idle host every wakeup costs the reader and the symbolizer a
	 * switch each, so the batch may wait 250 ms: samples reach the profile at most that
	 * late (a report cut in between has them in the next one); stopping wakes the reader
	 * at once (op_sampler_wake).
	 */
	while (!atomic_load(&p->stopping)) {
		uint64_t now = clock_ns(CLOCK_MONOTONIC), next = now + READER_POLL_NS;
		int n;

		if (p->prob_next_ns && p->prob_next_ns < next)
			next = p->prob_next_ns;
		if (p->clock_next_ns && p->clock_next_ns < next)
			next = p->clock_next_ns;
		n = op_sampler_poll(p->sampler,
				    next > now ? (int)((next - now + 999999) / 1000000) : 0);

		if (p->prob_next_ns && clock_ns(CLOCK_MONOTONIC) >= p->prob_next_ns)
			prob_interval(p);
		if (p->clock_next_ns && clock_ns(CLOCK_MONOTONIC) >= p->clock_next_ns)
			clock_sync(p);

		if (p->queued) {
			p->queued = false;
			pthread_mutex_lock(&p->q_lock);
			pthread_cond_signal(&p->q_cond);
			pthread_mutex_unlock(&p->q_lock);
		}
		if (n < 0)
			usleep(10000);
	}
	return NULL;
}

/* Symbolizes queued records, one at a time under p->lock; runs the tracker's gc when idle. */
static void *symbolizer_main(void *arg)
{
	struct otelprof *p = arg;
	uint64_t last_gc = clock_ns(CLOCK_MONOTONIC);
	struct op_trace *rec = malloc(sizeof(*rec));
	bool parked = false; /* records were parked at the end of the last round */
	size_t size;

	if (!rec) {
		op_err("cannot start the symbolizer: out of memory");
		return NULL;
	}
	while (!atomic_load(&p->stopping)) {
		struct timespec ts;
		uint64_t now;
		bool got;

		pthread_mutex_lock(&p->q_lock);
		got = queue_pop(&p->queue, rec, &size);
		if (!got) {
			/*
			 * The reader signals new records. Otherwise wake for parked records
			 * (every 100 ms) or the next once-a-second clean-up, not more often: an
			 * idle host's agent should sleep.
			 */
			uint64_t wait_ns = 100000000ull;

			now = clock_ns(CLOCK_MONOTONIC);
			if (!parked)
				wait_ns = last_gc + 1000000000ull > now
						  ? last_gc + 1000000000ull - now + 1000000ull
						  : 1000000ull;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += (time_t)(wait_ns / 1000000000ull);
			ts.tv_nsec += (long)(wait_ns % 1000000000ull);
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&p->q_cond, &p->q_lock, &ts);
		}
		pthread_mutex_unlock(&p->q_lock);
		pthread_mutex_lock(&p->lock);
		if (got)
			handle_queued(p, rec, size);
		now = clock_ns(CLOCK_MONOTONIC);
		if (!got && p->n_parked)
			park_release(p, 0, PARK_MAX_NS);
		if (!got && now - last_gc > 1000000000ull) {
			op_proctab_gc(p->procs, now, EXITED_GRACE_NS);
			op_ksyms_idle(p->ksyms);
			/* also when nothing is symbolized: the pages a burst of DWARF reads left
			 * resident leave within a second, not at the next lookup */
			op_dwarf_idle();
			last_gc = now;
		}
		parked = p->n_parked != 0;
		pthread_mutex_unlock(&p->lock);
	}
	free(rec);
	return NULL;
}

/* ------------------------------------------------------------------ lifecycle */

/* OTELPROF_F_KEEP_MALLOC (include/otelprof.h): glibc's malloc set for a long-running agent. */
static void malloc_for_agent(void)
{
	mallopt(M_ARENA_MAX, 1);
	mallopt(M_MMAP_THRESHOLD, 128 << 10);
	mallopt(M_TRIM_THRESHOLD, 128 << 10);
}

/* Kernel symbols, read in a thread of their own while otelprof_open() loads the BPF side. */
static void *ksyms_main(void *arg)
{
	struct otelprof *p = arg;

	p->ksyms = op_ksyms_load(); /* NULL: kernel frames keep their addresses */
	return NULL;
}

OTELPROF_API struct otelprof *otelprof_open(const struct otelprof_opts *opts)
{
	pthread_t ksyms_th;
	bool want_ksyms, ksyms_thread = false;
	struct op_sampler_opts so = { 0 };
	struct otelprof *p;
	int err;

	p = calloc(1, sizeof(*p));
	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&p->lock, NULL);
	pthread_mutex_init(&p->state_lock, NULL);
	pthread_mutex_init(&p->u_lock, NULL);
	pthread_mutex_init(&p->q_lock, NULL);
	pthread_cond_init(&p->q_cond, NULL);
	err = validate_opts(opts, &p->opts);
	if (!err && op_symbolize_config())
		err = -OTELPROF_ERR_OPTS;
	if (err)
		goto fail;
	if (p->opts.pid_cnt) {
		p->pids = calloc(p->opts.pid_cnt, sizeof(int));
		if (!p->pids) {
			err = -ENOMEM;
			goto fail;
		}
		memcpy(p->pids, p->opts.pids, p->opts.pid_cnt * sizeof(int));
		p->opts.pids = p->pids;
	}
	p->flags = p->opts.flags;
	if (!(p->flags & OTELPROF_F_KEEP_MALLOC))
		malloc_for_agent();
	if (p->opts.runtimes_off && *p->opts.runtimes_off &&
	    !(p->runtimes_off = strdup(p->opts.runtimes_off))) {
		err = -ENOMEM;
		goto fail;
	}
	if (p->opts.include_env_vars && *p->opts.include_env_vars &&
	    !(p->env_vars = strdup(p->opts.include_env_vars))) {
		err = -ENOMEM;
		goto fail;
	}
	if (p->opts.runtimes_wanted && *p->opts.runtimes_wanted &&
	    !(p->runtimes_wanted = strdup(p->opts.runtimes_wanted))) {
		err = -ENOMEM;
		goto fail;
	}
	p->opts.runtimes_wanted = p->runtimes_wanted;
	p->opts.runtimes_off = p->runtimes_off;
	p->opts.include_env_vars = p->env_vars;
	if (p->opts.probe_cnt) {
		p->probes = calloc(p->opts.probe_cnt, sizeof(*p->probes));
		if (!p->probes) {
			err = -ENOMEM;
			goto fail;
		}
		for (size_t i = 0; i < p->opts.probe_cnt; i++) {
			p->probes[i].ret = p->opts.probes[i].ret;
			p->probes[i].binary = strdup(p->opts.probes[i].binary);
			p->probes[i].symbol = strdup(p->opts.probes[i].symbol);
			if (!p->probes[i].binary || !p->probes[i].symbol) {
				err = -ENOMEM;
				goto fail;
			}
		}
		p->opts.probes = p->probes;
	}
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		op_err("kernel has no BTF (/sys/kernel/btf/vmlinux): use a kernel built with "
		       "CONFIG_DEBUG_INFO_BTF=y");
		err = -OTELPROF_ERR_NO_BTF;
		goto fail;
	}
	err = check_privileges();
	if (err)
		goto fail;

	p->files = op_filecache_new(0);
	p->procs = p->files ? op_proctab_new(p->files) : NULL;
	op_proctab_read_environ(p->procs, !(p->flags & OTELPROF_F_NO_ENV_RESOURCE));
	if (op_proctab_include_env_vars(p->procs, p->env_vars)) {
		err = -ENOMEM;
		goto fail;
	}
	p->profile = new_profile(p);
	if (!p->files || !p->procs || !p->profile) {
		err = -ENOMEM;
		goto fail;
	}
	/* kallsyms (~70 ms) is read beside the BPF verification, not before it */
	want_ksyms =
		!(p->flags & OTELPROF_F_NO_KERNEL_STACKS) && !(p->flags & OTELPROF_F_NO_SYMBOLIZE);
	if (want_ksyms)
		ksyms_thread = !pthread_create(&ksyms_th, NULL, ksyms_main, p);
	p->perfmaps = op_perfmaps_new(); /* NULL: JIT frames keep their addresses */

	so.frequency_hz = p->opts.frequency_hz;
	so.kernel_stacks = !(p->flags & OTELPROF_F_NO_KERNEL_STACKS);
	so.labels = !(p->flags & OTELPROF_F_NO_LABELS);
	so.off_cpu_threshold = p->opts.off_cpu_threshold;
	so.alloc_mean = p->opts.alloc_mean_bytes;
	so.alloc_inuse_max = p->opts.alloc_inuse_max;
	so.pids = p->opts.pids;
	so.pid_cnt = p->opts.pid_cnt;
	so.ringbuf_bytes = p->opts.ringbuf_bytes;
	so.exit_maps = !(p->flags & OTELPROF_F_NO_SYMBOLIZE);
	so.idle_frames = p->opts.idle_frames;
	so.probes = p->opts.probes;
	so.probe_cnt = p->opts.probe_cnt;
	so.on_event = on_event;
	so.ctx = p;
	err = op_sampler_open(&so, &p->sampler);
	if (ksyms_thread)
		pthread_join(ksyms_th, NULL);
	else if (want_ksyms)
		p->ksyms = op_ksyms_load(); /* no thread: here */
	if (err)
		goto fail;
	if (p->opts.alloc_mean_bytes) {
		p->alloc.rng = clock_ns(CLOCK_MONOTONIC) | 1;
		p->alloc.probes =
			op_alloc_probes_new(op_sampler_skel(p->sampler), p->opts.alloc_mean_bytes);
		if (!p->alloc.probes) {
			err = -errno;
			goto fail;
		}
	}
	if (!(p->flags & OTELPROF_F_FRAME_POINTERS)) {
		p->unwinder = op_unwinder_new(p->sampler);
		if (!p->unwinder)
			op_warn("cfi unwinder unavailable (%s): user stacks use frame pointers "
				"only",
				strerror(errno));
		else
			runtimes_open(p);
	}
	runtimes_check_wanted(p);
	/* Read the targets' maps now, while they surely exist. */
	for (size_t i = 0; i < p->opts.pid_cnt; i++) {
		op_proctab_get(p->procs, p->opts.pids[i]);
		op_unwinder_add_pid(p->unwinder, p->opts.pids[i]);
	}
	return p;
fail:
	otelprof_close(p);
	errno = -err;
	return NULL;
}

OTELPROF_API int otelprof_start(struct otelprof *p)
{
	int err;

	if (!p)
		return -EINVAL;
	pthread_mutex_lock(&p->state_lock);
	if (p->started) {
		err = -OTELPROF_ERR_STATE;
		goto out;
	}
	clock_sync(p);

	err = op_sampler_attach(p->sampler);
	if (err)
		goto out;
	p->prob_next_ns = 0;
	op_sampler_pause(p->sampler, false);
	if (p->opts.probabilistic_threshold && p->opts.probabilistic_threshold < 100) {
		p->prob_seed = (unsigned int)(clock_ns(CLOCK_MONOTONIC) ^ (uint64_t)getpid());
		prob_interval(p);
	}
	if (p->alloc.probes)
		alloc_attach(p);
	atomic_store(&p->stopping, false);
	err = pthread_create(&p->symbolizer, NULL, symbolizer_main, p);
	if (err) {
		op_sampler_detach(p->sampler);
		op_err("cannot start the symbolizer thread: %s", strerror(err));
		err = -err;
		goto out;
	}
	/* named for top -H and /proc/PID/task/TID/comm (the host program's name otherwise) */
	pthread_setname_np(p->symbolizer, "otelprof-symb");
	err = pthread_create(&p->reader, NULL, reader_main, p);
	if (!err)
		pthread_setname_np(p->reader, "otelprof-reader");
	if (err) {
		op_sampler_detach(p->sampler);
		atomic_store(&p->stopping, true);
		pthread_join(p->symbolizer, NULL);
		op_err("cannot start the reader thread: %s", strerror(err));
		err = -err;
		goto out;
	}
	p->started = true;
out:
	pthread_mutex_unlock(&p->state_lock);
	return err;
}

OTELPROF_API int otelprof_stop(struct otelprof *p)
{
	if (!p)
		return -EINVAL;
	pthread_mutex_lock(&p->state_lock);
	if (p->started) {
		/* No new samples, then the thread, then everything already queued. */
		op_sampler_detach(p->sampler);
		op_alloc_probes_detach(p->alloc.probes);
		atomic_store(&p->stopping, true);
		op_sampler_wake(p->sampler);
		pthread_join(p->reader, NULL);
		pthread_mutex_lock(&p->q_lock);
		pthread_cond_broadcast(&p->q_cond);
		pthread_mutex_unlock(&p->q_lock);
		pthread_join(p->symbolizer, NULL);
		op_sampler_drain(p->sampler);
		pthread_mutex_lock(&p->lock);
		queue_flush(p, 0);
		/* threads still off the CPU now: their interval has no end in this recording */
		for (size_t i = 0; p->pending && i < OFFCPU_PENDING_SLOTS; i++)
			p->stats.off_cpu_unpaired += p->pending[i].tid != 0;
		offcpu_free(p);
		pthread_mutex_unlock(&p->lock);
		p->started = false;
	}
	pthread_mutex_unlock(&p->state_lock);
	return 0;
}

OTELPROF_API int otelprof_collect(struct otelprof *p, enum otelprof_format format, void **data,
				  size_t *size)
{
	struct op_profile *next;
	uint8_t *out = NULL;
	size_t len = 0;
	bool started;
	uint64_t n;
	int err;

	if (!p || !data || !size)
		return -EINVAL;
	if (format != OTELPROF_FORMAT_PPROF && format != OTELPROF_FORMAT_OTLP)
		return -EINVAL;
	pthread_mutex_lock(&p->state_lock);
	started = p->started;
	if (!started)
		op_sampler_drain(p->sampler); /* the reader thread is stopped: we are the reader */
	pthread_mutex_unlock(&p->state_lock);

	pthread_mutex_lock(&p->lock);
	/* sampling: the symbolizer thread goes on with what is left after COLLECT_FLUSH_NS */
	queue_flush(p, started ? COLLECT_FLUSH_NS : 0);
	if (!p->alloc.snapshot_in_profile)
		alloc_snapshot(p);
	p->alloc.snapshot_in_profile = true;
	op_profile_set_end(p->profile, clock_ns(CLOCK_REALTIME));
	if (format == OTELPROF_FORMAT_PPROF)
		err = op_encode_pprof(p->profile, &out, &len);
	else
		err = op_encode_otlp(p->profile, &out, &len);
	if (err) {
		/* keep the samples for the next call */
		pthread_mutex_unlock(&p->lock);
		op_err("cannot encode the profile: %s", otelprof_strerror(err));
		return err;
	}
	next = new_profile(p);
	if (!next) {
		pthread_mutex_unlock(&p->lock);
		free(out);
		return -ENOMEM;
	}
	n = op_profile_sample_count(p->profile);
	op_profile_free(p->profile);
	p->profile = next;
	p->alloc.snapshot_in_profile = false;
	p->stats.collected += n;
	pthread_mutex_unlock(&p->lock);

	*data = out;
	*size = len;
	return 0;
}

OTELPROF_API void otelprof_buf_free(void *data)
{
	free(data);
}

OTELPROF_API int otelprof_get_stats(struct otelprof *p, struct otelprof_stats *st)
{
	struct otelprof_stats s;
	struct op_unwinder_stats us;
	uint64_t counters[OP_CNT_MAX];
	size_t sz;

	if (!p || !st || st->sz < sizeof(size_t))
		return -EINVAL;
	sz = st->sz;
	pthread_mutex_lock(&p->lock);
	s = p->stats;
	s.processes = op_proctab_count(p->procs);
	s.samples_parked_now = p->n_parked;
	pthread_mutex_unlock(&p->lock);
	s.binaries = op_filecache_count(p->files);
	pthread_mutex_lock(&p->q_lock);
	s.symbolize_backlog = p->queue.n;
	s.symbolize_backlog_bytes = p->queue.tail - p->queue.head;
	pthread_mutex_unlock(&p->q_lock);
	op_symbolize_inflated_stats(&s.debug_inflated_bytes, &s.debug_inflations);
	pthread_mutex_lock(&p->u_lock);
	s.unwind_table_bytes = op_unwinder_table_bytes(p->unwinder);
	op_unwinder_stats(p->unwinder, &us);
	pthread_mutex_unlock(&p->u_lock);
	s.unwind_procs_full = us.procs_full;
	{
		/* Python (issue 15) */
		struct op_python_stats ps;

		op_python_stats(p->runtimes[OP_RUNTIME_PYTHON], &ps);
		s.python_processes = ps.processes;
		s.python_unknown_version = ps.unknown_version;
		s.python_frames = ps.frames;
		s.python_native_no_tstate = ps.no_tstate + ps.no_proc;
		s.python_native_read_failed = ps.read_failed;
		s.python_native_chain_ended = ps.chain_ended;
		s.python_stale_code = ps.stale_code;
	}
	s.unwind_tables_full = us.tables_full;
	{
		struct op_v8_stats vs;
		struct op_perfmaps_stats ps;

		pthread_mutex_lock(&p->lock);
		op_v8_stats(p->runtimes[OP_RUNTIME_V8], &vs);
		op_perfmaps_stats(p->perfmaps, &ps);
		pthread_mutex_unlock(&p->lock);
		s.v8_processes = vs.processes;
		s.v8_unknown_layout = vs.unknown_layout;
		s.v8_frames_named = vs.named;
		s.v8_frames_unnamed = vs.unnamed;
		s.v8_bad_frames = vs.bpf_bad_fp + vs.bpf_not_jsfunc + vs.bpf_bad_sfi;
		s.perfmap_named = ps.named;
		s.perfmap_bad_lines = ps.bad_lines;
	}
	if (op_sampler_counters(p->sampler, counters) == 0) {
		s.lost = counters[OP_CNT_LOST];
		s.alloc_failed = counters[OP_CNT_ALLOC_FAIL];
		for (int i = 0; i < OTELPROF_UNWIND_ERROR_MAX; i++)
			s.unwind_errors[i] = counters[OP_CNT_UNWIND_BASE + i];
	}
	s.sz = sizeof(s);
	memcpy(st, &s, sz < sizeof(s) ? sz : sizeof(s));
	st->sz = sz;
	return 0;
}

OTELPROF_API void otelprof_close(struct otelprof *p)
{
	if (!p)
		return;
	otelprof_stop(p);
	op_unwinder_free(p->unwinder);
	runtimes_close(p);
	op_alloc_probes_free(p->alloc.probes);
	op_sampler_close(p->sampler);
	offcpu_free(p);
	park_free(p);
	free(p->loc_cache);
	alloc_free_all(p);
	op_profile_free(p->profile);
	while (p->ghosts) {
		struct exec_snap *g = p->ghosts;

		p->ghosts = g->next;
		snap_free(g);
	}
	while (p->exit_maps) {
		struct exec_snap *g = p->exit_maps;

		p->exit_maps = g->next;
		snap_free(g);
	}
	queue_flush_snaps(p);
	free(p->queue.buf);
	op_proctab_free(p->procs);
	op_filecache_free(p->files);
	op_ksyms_free(p->ksyms);
	op_perfmaps_free(p->perfmaps);
	pthread_mutex_destroy(&p->lock);
	pthread_mutex_destroy(&p->state_lock);
	pthread_mutex_destroy(&p->u_lock);
	pthread_mutex_destroy(&p->q_lock);
	pthread_cond_destroy(&p->q_cond);
	free(p->pids);
	free(p->runtimes_off);
	free(p->env_vars);
	free(p->runtimes_wanted);
	for (size_t i = 0; p->probes && i < p->opts.probe_cnt; i++) {
		free((char *)p->probes[i].binary);
		free((char *)p->probes[i].symbol);
	}
	free(p->probes);
	free(p);
}

// SPDX-License-Identifier: Apache-2.0
/* Loads bpf/sampler.bpf.c and attaches it to cpu-clock on every online CPU. */
#include <errno.h>
#include <pthread.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <linux/btf.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/utsname.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf/unwind/tables.h"
#include "util/env.h"
#include "util/log.h"
#include "sample/sampler.h"
#include "sampler.skel.h"
#include "sampler_walk.skel.h"

struct op_sampler {
	struct sampler_bpf *skel;
	/* the walk continuations, verified beside skel's (load_split): one instance each */
	struct sampler_walk_bpf *helper[2];
	struct ring_buffer *rb;
	/* exec_events: read before every record of rb (handle_record), so execs jump the queue */
	struct ring_buffer *exec_rb;
	/* the reader sleeps here: the ring buffers' epoll sets, and wake_fd (op_sampler_wake) */
	int wait_fd, wake_fd;
	struct op_sampler_opts opts;
	int *perf_fds;
	struct bpf_link **perf_links;
	int n_cpus; /* possible CPUs: index space of perf_fds */
	bool attached;
	struct bpf_link *offcpu_link;  /* sched_switch, while attached with off-CPU on */
	struct bpf_link **probe_links; /* opts.probe_cnt uprobes, while attached */
};

/*
 * The default ring buffer. Its pages are allocated at load and mapped twice into this
 * process, so it counts double in resident memory. CPU samples alone: about two seconds of
 * a stalled reader at 2 KiB per sample (a 128-frame stack is 1 KiB), from 256 KiB up to 1 MiB
 * per online CPU (at 20 Hz on 2 CPUs 256 KiB, where a flat 1 MiB per CPU made 4 MiB of the
 * agent's resident memory). Off-CPU intervals, allocations and probe events arrive at rates
 * the frequency does not bound: with any of them on, 1 MiB per CPU. A power of two, at most
 * 4 MiB.
 */
static size_t default_ringbuf(const struct op_sampler_opts *o)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	size_t per_cpu = 1 << 20, want, bytes = 256 << 10;

	if (cpus < 1)
		cpus = 1;
	want = (size_t)cpus * per_cpu;
	if (!o->off_cpu_threshold && !o->alloc_mean && !o->probe_cnt && o->frequency_hz &&
	    (size_t)cpus * o->frequency_hz * 2048 * 2 < want)
		want = (size_t)cpus * o->frequency_hz * 2048 * 2;
	while (bytes < (4u << 20) && bytes < want)
		bytes <<= 1;
	return bytes;
}

static int size_ringbuf(const struct op_sampler_opts *o)
{
	size_t page = sysconf(_SC_PAGESIZE), bytes = o->ringbuf_bytes;

	if (!bytes)
		bytes = default_ringbuf(o);
	if (bytes < 64 << 10 || (bytes & (bytes - 1)) || bytes % page)
		return -1;
	return 0;
}

/* The running kernel is @major.@minor or newer (the task VMA iterator kfuncs: 6.7). */
static bool kernel_at_least(int major, int minor)
{
	struct utsname u;
	int ma, mi;

	if (uname(&u) || sscanf(u.release, "%d.%d", &ma, &mi) != 2)
		return false;
	return ma > major || (ma == major && mi >= minor);
}

static int handle_exec_record(void *ctx, void *data, size_t size)
{
	struct op_sampler *s = ctx;

	if (size >= sizeof(struct op_event_hdr))
		s->opts.on_event(s->opts.ctx, data, size);
	return 0;
}

/*
 * A record of events. The execs ring first: an exec behind a backlog of samples (a busy host,
 * a slow table ahead of it) has its program's tables loaded before the samples ahead of it are
 * handled. Reading an empty ring is two loads from its mapped positions.
 */
static int handle_record(void *ctx, void *data, size_t size)
{
	struct op_sampler *s = ctx;

	ring_buffer__consume(s->exec_rb);
	return handle_exec_record(ctx, data, size);
}

/*
 * OTELPROF_UNWIND_MAX_PROCS: processes the CFI unwinder keeps mappings for in BPF (default
 * 16384; entries are allocated on use, up to ~6 KiB each). Hosts with more live processes
 * raise it; tests lower it to exercise a full map. A bad value is refused, not ignored.
 */
static int set_unwind_procs(struct sampler_bpf *skel)
{
	const char *v;
	unsigned long n;
	int r = op_env_ulong("OTELPROF_UNWIND_MAX_PROCS", 1, 1u << 22, &n, &v);

	if (r == 0)
		return 0;
	if (r < 0) {
		op_err("OTELPROF_UNWIND_MAX_PROCS=%s: want a number of processes from 1 to %u "
		       "(unset it for the default 16384)",
		       v, 1u << 22);
		return -EINVAL;
	}
	return bpf_map__set_max_entries(skel->maps.unwind_procs, (__u32)n);
}

/*
 * Off-CPU (bpf/sample/offcpu.bpf.h): its threshold, and which programs load and attach. The
 * walk's continuations and the runtimes' unwinders are reached by tail calls only, never
 * attached; the sched_switch chain (every program whose name ends in "_sched") and
 * on_sched_switch itself are not even loaded when off-CPU is off, which saves their
 * verification at start.
 */
static void set_offcpu(struct sampler_bpf *skel, double p)
{
	struct bpf_program *prog;

	skel->rodata->offcpu_threshold = p >= 1.0 ? UINT32_MAX : (__u32)(p * (double)UINT32_MAX);
	bpf_object__for_each_program (prog, skel->obj) {
		const char *name = bpf_program__name(prog);
		size_t len = strlen(name);

		if (!strncmp(name, "unwind_", 7) || !strcmp(name, "on_sched_switch"))
			bpf_program__set_autoattach(prog, false);
		if (p <= 0 && (!strcmp(name, "on_sched_switch") ||
			       (len > 6 && !strcmp(name + len - 6, "_sched"))))
			bpf_program__set_autoload(prog, false);
	}
	if (p <= 0)
		bpf_map__set_max_entries(skel->maps.offcpu_start, 1);
}

/* The probe program and its walk chain are loaded only when probes are configured. */
static void set_probes(struct sampler_bpf *skel, bool on)
{
	struct bpf_program *prog;

	bpf_object__for_each_program (prog, skel->obj) {
		const char *name = bpf_program__name(prog);
		size_t len = strlen(name);

		if (strcmp(name, "on_probe") && (len <= 6 || strcmp(name + len - 6, "_probe")))
			continue;
		bpf_program__set_autoattach(prog, false);
		if (!on)
			bpf_program__set_autoload(prog, false);
	}
}

/* Attach the probe program to each traced function (probe_links). */
static int attach_probes(struct op_sampler *s)
{
	if (!s->opts.probe_cnt)
		return 0;
	s->probe_links = calloc(s->opts.probe_cnt, sizeof(*s->probe_links));
	if (!s->probe_links)
		return -ENOMEM;
	for (size_t i = 0; i < s->opts.probe_cnt; i++) {
		const struct otelprof_probe *pr = &s->opts.probes[i];
		LIBBPF_OPTS(bpf_uprobe_opts, uo, .func_name = pr->symbol, .retprobe = pr->ret);

		s->probe_links[i] = bpf_program__attach_uprobe_opts(s->skel->progs.on_probe, -1,
								    pr->binary, 0, &uo);
		if (!s->probe_links[i]) {
			int err = -errno;

			op_err("cannot attach %s to %s in %s: %s (check the binary's path and that "
			       "it "
			       "has the symbol: nm -D %s)",
			       pr->ret ? "uretprobe" : "uprobe", pr->symbol, pr->binary,
			       strerror(-err), pr->binary);
			return -OTELPROF_ERR_PERF_EVENT;
		}
		op_debug("probe %s:%s:%s attached", pr->ret ? "uretprobe" : "uprobe", pr->binary,
			 pr->symbol);
	}
	return 0;
}

/*
 * Allocations (bpf/sample/alloc.bpf.h): the mean, the in-use map's size, and the programs.
 * lib/sample/alloc.c attaches them by symbol, never the skeleton; off, the uprobe chain (names
 * starting "alloc_" or ending "_alloc") is not loaded.
 */
static void set_alloc(struct sampler_bpf *skel, uint64_t mean, uint32_t inuse_max)
{
	struct bpf_program *prog;

	skel->rodata->alloc_mean = mean;
	skel->rodata->alloc_self = (__u32)getpid();
	bpf_object__for_each_program (prog, skel->obj) {
		const char *name = bpf_program__name(prog);
		size_t len = strlen(name);
		bool ours = !strncmp(name, "alloc_", 6) ||
			    (len > 6 && !strcmp(name + len - 6, "_alloc"));

		if (ours)
			bpf_program__set_autoattach(prog, false);
		if (ours && !mean)
			bpf_program__set_autoload(prog, false);
	}
	if (!mean) {
		bpf_map__set_max_entries(skel->maps.alloc_threads, 1);
		bpf_map__set_max_entries(skel->maps.alloc_calls, 1);
		bpf_map__set_max_entries(skel->maps.alloc_inuse, 1);
	} else if (inuse_max) {
		bpf_map__set_max_entries(skel->maps.alloc_inuse, inuse_max);
	}
}

/*
 * Verification is most of the start (1.1 s of CPU on the 2-CPU bench host, before the first
 * sample). The programs are verified in three parts at once, each in its own instance on the
 * same maps: the walk continuations, unwind_native_* (0.23 s) and unwind_interp_* (0.32 s),
 * each in a helper thread, the rest (the sample programs, the runtimes' unwinders: 0.55 s)
 * here. Three threads, not two, also on a host whose other CPU is busy: the scheduler shares
 * CPUs by thread. The helpers' instances are of sampler_walk, the same object built without
 * its kfunc externs (which make libbpf parse the kernel's BTF for an instance whatever it
 * loads) and given an empty BTF to relocate against (empty_btf): libbpf keeps its copy of the
 * kernel's BTF (6.8 MiB) in an instance until it is verified, and three at once were most of
 * the start's peak of memory. One more instance of it, loaded without programs, creates the
 * maps all use and is closed again (the others hold their own descriptors). Any failure:
 * everything in one instance, as before.
 */
#define N_HELPERS 2
static int helper_of(const char *name)
{
	if (!strncmp(name, "unwind_native_", 14))
		return 0;
	if (!strncmp(name, "unwind_interp_", 14))
		return 1;
	return -1;
}

struct helper_load {
	struct sampler_walk_bpf *skel;
	pthread_t th;
	bool started;
	int err;
	double ms;
};

static double ms_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

static void parse_kernel_btf(struct bpf_object *obj);

static void *helper_main(void *arg)
{
	struct helper_load *h = arg;
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	parse_kernel_btf(h->skel->obj);
	h->err = sampler_walk_bpf__load(h->skel);
	if (h->err > 0)
		h->err = -h->err;
	h->ms = ms_since(&t0);
	return NULL;
}

/* Instance @b on the maps of the loaded @a (same maps, same order). */
static int share_maps(struct bpf_object *a, struct bpf_object *b)
{
	struct bpf_map *m = NULL, *n = NULL;

	while ((m = bpf_object__next_map(a, m)) && (n = bpf_object__next_map(b, n)))
		if (bpf_map__reuse_fd(n, bpf_map__fd(m)))
			return -errno;
	return 0;
}

/*
 * libbpf parses the kernel's BTF (5.5 MB) in every instance it loads, reading the file into one
 * buffer and copying it into another, and holds the copy until its programs are verified.
 * Three parses at once put three of both in memory together: 42 MB of the CLI's 44 MB peak.
 * A tp_btf program's attach target, set here, makes libbpf parse it now (libbpf_find_kernel_btf
 * by way of bpf_program__set_attach_target), one parse at a time, so only the copies kept
 * overlap: only s->skel's instance has one, unless off-CPU's walk continuations (tp_btf) are
 * loaded (empty_btf). Nothing for an instance that loads no tp_btf program. A failure changes
 * nothing: the load parses it as before.
 */
static void parse_kernel_btf(struct bpf_object *obj)
{
	static pthread_mutex_t one_at_a_time = PTHREAD_MUTEX_INITIALIZER;
	struct bpf_program *p;

	bpf_object__for_each_program (p, obj) {
		const char *sec = bpf_program__section_name(p);

		if (bpf_program__autoload(p) && !strncmp(sec, "tp_btf/", 7)) {
			pthread_mutex_lock(&one_at_a_time);
			bpf_program__set_attach_target(p, 0, sec + 7);
			pthread_mutex_unlock(&one_at_a_time);
			return;
		}
	}
}

static int load_split_on(struct op_sampler *s, const char *btf_path)
{
	LIBBPF_OPTS(bpf_object_open_opts, o, .btf_custom_path = btf_path);
	struct sampler_walk_bpf *maps = sampler_walk_bpf__open_opts(&o);
	struct bpf_program *p = NULL;
	struct bpf_map *m = NULL, *n = NULL;
	struct helper_load h[N_HELPERS] = { 0 };
	struct timespec t0;
	double ms = 0;
	int err = -ENOMEM, i;

	for (i = 0; i < N_HELPERS; i++)
		h[i].skel = sampler_walk_bpf__open_opts(&o);
	if (!maps || !h[0].skel || !h[1].skel)
		goto whole;
	/* the maps: the sizes and read-only data set on s->skel, no program */
	_Static_assert(sizeof(*maps->rodata) == sizeof(*s->skel->rodata),
		       "sampler_walk: the sampler's read-only data");
	memcpy(maps->rodata, s->skel->rodata, sizeof(*maps->rodata));
	while ((m = bpf_object__next_map(s->skel->obj, m)) &&
	       (n = bpf_object__next_map(maps->obj, n)))
		bpf_map__set_max_entries(n, bpf_map__max_entries(m));
	bpf_object__for_each_program (p, maps->obj)
		bpf_program__set_autoload(p, false);
	if (sampler_walk_bpf__load(maps))
		goto whole;
	if (share_maps(maps->obj, s->skel->obj))
		goto fail;
	for (i = 0; i < N_HELPERS; i++)
		if (share_maps(maps->obj, h[i].skel->obj))
			goto fail;
	/* the others hold the maps now: its memory (about 1 MiB) back before the loads */
	sampler_walk_bpf__destroy(maps);
	maps = NULL;
	/* each program in one instance: the continuations in their helper, if s->skel loads
	 * them */
	bpf_object__for_each_program (p, s->skel->obj) {
		int k = helper_of(bpf_program__name(p));
		bool moved = bpf_program__autoload(p) && k >= 0;

		for (i = 0; i < N_HELPERS; i++)
			bpf_program__set_autoload(bpf_object__find_program_by_name(
							  h[i].skel->obj, bpf_program__name(p)),
						  moved && i == k);
		if (moved)
			bpf_program__set_autoload(p, false);
	}
	parse_kernel_btf(s->skel->obj);
	for (i = 0; i < N_HELPERS; i++) {
		if (pthread_create(&h[i].th, NULL, helper_main, &h[i])) {
			err = -errno;
			goto join;
		}
		h[i].started = true;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	err = sampler_bpf__load(s->skel);
	ms = ms_since(&t0);
join:
	for (i = 0; i < N_HELPERS; i++) {
		if (!h[i].started)
			continue;
		pthread_join(h[i].th, NULL);
		if (!err)
			err = h[i].err;
	}
	if (!err)
		op_debug("BPF programs verified in %.0f ms (sample programs, runtimes' unwinders), "
			 "%.0f ms (native walk) and %.0f ms (interpreter walk), at once",
			 ms, h[0].ms, h[1].ms);
	sampler_walk_bpf__destroy(maps);
	if (err) {
		for (i = 0; i < N_HELPERS; i++)
			sampler_walk_bpf__destroy(h[i].skel);
		/* s->skel shares maps it cannot un-share: the caller opens it again */
		return err;
	}
	for (i = 0; i < N_HELPERS; i++)
		s->helper[i] = h[i].skel;
	return 0;
fail:
	/* s->skel shares maps it cannot un-share: the caller opens it again */
	sampler_walk_bpf__destroy(maps);
	for (i = 0; i < N_HELPERS; i++)
		sampler_walk_bpf__destroy(h[i].skel);
	return -EINVAL;
whole:
	sampler_walk_bpf__destroy(maps);
	for (i = 0; i < N_HELPERS; i++)
		sampler_walk_bpf__destroy(h[i].skel);
	return sampler_bpf__load(s->skel);
}

/*
 * An empty BTF (its header and the empty string) in a memfd; its path in @path, -1 when it
 * cannot be made. The instances of sampler_walk (the maps-only one and the walk
 * continuations) are given it as their btf_custom_path: their programs have no CO-RE
 * relocation (those of the programs an instance does not load are skipped) and, with
 * off-CPU off, no BTF attach target, so libbpf relocates against it instead of parsing the
 * kernel's BTF (5.5 MB read and copied, the copy of 6.8 MiB kept until the instance is
 * verified). Only s->skel's instance parses it then: the start's peak of memory.
 */
static int empty_btf(char *path, size_t len)
{
	struct btf_header h = {
		.magic = BTF_MAGIC, .version = BTF_VERSION, .hdr_len = sizeof(h), .str_len = 1
	};
	char str = 0;
	int fd = memfd_create("otelprof-empty-btf", MFD_CLOEXEC);

	if (fd < 0)
		return -1;
	if (write(fd, &h, sizeof(h)) != (ssize_t)sizeof(h) || write(fd, &str, 1) != 1) {
		close(fd);
		return -1;
	}
	snprintf(path, len, "/proc/self/fd/%d", fd);
	return fd;
}

static int load_split(struct op_sampler *s)
{
	char path[64];
	int fd = empty_btf(path, sizeof(path)), err;

	err = load_split_on(s, fd >= 0 ? path : NULL);
	if (fd >= 0)
		close(fd);
	return err;
}

/* The fd of program @name in either instance, or -1 (not loaded). */
int op_sampler_prog_fd(struct op_sampler *s, const char *name)
{
	struct bpf_program *p = bpf_object__find_program_by_name(s->skel->obj, name);
	int fd = p ? bpf_program__fd(p) : -1;

	for (int i = 0; fd < 0 && i < N_HELPERS; i++) {
		if (!s->helper[i])
			continue;
		p = bpf_object__find_program_by_name(s->helper[i]->obj, name);
		fd = p ? bpf_program__fd(p) : -1;
	}
	return fd;
}

/*
 * Every loaded walk chain's tail-call array (<chain>_progs, bpf/unwind/native.bpf.h) gets its
 * continuations: unwind_native_<chain> and unwind_interp_<chain>. A chain that is off was not
 * loaded and is left empty.
 */
static int fill_chains(struct op_sampler *s)
{
	struct sampler_bpf *skel = s->skel;
	static const struct {
		const char *fmt;
		__u32 slot;
	} conts[] = { { "unwind_native_%.*s", OP_CHAIN_NATIVE },
		      { "unwind_interp_%.*s", OP_CHAIN_INTERP } };
	struct bpf_map *map;

	bpf_object__for_each_map (map, skel->obj) {
		const char *name = bpf_map__name(map);
		size_t len = strlen(name);

		if (bpf_map__type(map) != BPF_MAP_TYPE_PROG_ARRAY || len < 6 ||
		    strcmp(name + len - 6, "_progs"))
			continue;
		for (size_t i = 0; i < sizeof(conts) / sizeof(conts[0]); i++) {
			char pname[128];
			int fd;

			snprintf(pname, sizeof(pname), conts[i].fmt, (int)(len - 6), name);
			fd = op_sampler_prog_fd(s, pname);
			if (fd < 0)
				continue; /* the chain is off */
			if (bpf_map_update_elem(bpf_map__fd(map), &conts[i].slot, &fd, BPF_ANY)) {
				int err = -errno;

				op_err("cannot set up the stack walk (%s): %s", pname,
				       strerror(-err));
				return -OTELPROF_ERR_BPF_LOAD;
			}
		}
	}
	return 0;
}

int op_sampler_open(const struct op_sampler_opts *opts, struct op_sampler **out)
{
	struct op_sampler *s;
	int err;

	if (size_ringbuf(opts)) {
		op_err("invalid ring buffer size %zu: use a power of two of at least 65536 bytes",
		       opts->ringbuf_bytes);
		return -OTELPROF_ERR_OPTS;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->wait_fd = s->wake_fd = -1;
	s->opts = *opts;
	s->n_cpus = libbpf_num_possible_cpus();
	if (s->n_cpus <= 0) {
		free(s);
		return -EINVAL;
	}
	s->perf_fds = calloc(s->n_cpus, sizeof(int));
	s->perf_links = calloc(s->n_cpus, sizeof(*s->perf_links));
	if (!s->perf_fds || !s->perf_links) {
		err = -ENOMEM;
		goto fail;
	}
	for (int i = 0; i < s->n_cpus; i++)
		s->perf_fds[i] = -1;

	s->skel = sampler_bpf__open();
	if (!s->skel) {
		err = -errno;
		op_err("cannot open BPF object: %s", strerror(errno));
		goto fail;
	}
	s->skel->rodata->kernel_stacks = opts->kernel_stacks;
	s->skel->rodata->labels_enabled = opts->labels;
	s->skel->rodata->idle_frames = opts->idle_frames;
	s->skel->rodata->exit_maps = opts->exit_maps && kernel_at_least(6, 7);
	set_probes(s->skel, opts->probe_cnt > 0);
	set_offcpu(s->skel, opts->off_cpu_threshold);
	set_alloc(s->skel, opts->alloc_mean, opts->alloc_inuse_max);
	s->skel->rodata->filter_pids = opts->pid_cnt > 0;
	bpf_map__set_max_entries(s->skel->maps.events,
				 opts->ringbuf_bytes ? opts->ringbuf_bytes : default_ringbuf(opts));
	/*
	 * Most records do not wake the reader (bpf/sampler.bpf.c, wakeup_flags()): it drains the
	 * ring on its poll timeout, or once an eighth of the ring is pending, which leaves the
	 * rest for the records that arrive while it catches up.
	 */
	s->skel->rodata->wakeup_bytes =
		(opts->ringbuf_bytes ? opts->ringbuf_bytes : default_ringbuf(opts)) / 8;

	err = set_unwind_procs(s->skel);
	if (err)
		goto fail;
	err = load_split(s);
	if (err) {
		err = err < 0 ? err : -errno;
		if (err == -EPERM)
			op_err("cannot load BPF program: permission denied (run as root or grant "
			       "CAP_BPF and CAP_PERFMON)");
		else
			op_err("cannot load BPF program: %s (set the log level to debug for the "
			       "verifier output)",
			       strerror(-err));
		err = err == -EPERM ? -EPERM : -OTELPROF_ERR_BPF_LOAD;
		goto fail;
	}
	err = fill_chains(s);
	if (err)
		goto fail;
	for (size_t i = 0; i < opts->pid_cnt; i++) {
		__u32 pid = opts->pids[i];
		__u8 one = 1;

		if (bpf_map__update_elem(s->skel->maps.target_pids, &pid, sizeof(pid), &one,
					 sizeof(one), BPF_ANY)) {
			err = -errno;
			op_err("cannot add pid %u to the target map: %s", pid, strerror(errno));
			goto fail;
		}
	}
	s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.events), handle_record, s, NULL);
	s->exec_rb = ring_buffer__new(bpf_map__fd(s->skel->maps.exec_events), handle_exec_record, s,
				      NULL);
	if (!s->rb || !s->exec_rb) {
		err = -errno;
		op_err("cannot open the BPF ring buffer: %s", strerror(errno));
		goto fail;
	}
	/* an epoll set is itself pollable: ours waits on the ring's set and on wake_fd */
	s->wait_fd = epoll_create1(EPOLL_CLOEXEC);
	s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->wait_fd < 0 || s->wake_fd < 0 ||
	    epoll_ctl(s->wait_fd, EPOLL_CTL_ADD, ring_buffer__epoll_fd(s->rb),
		      &(struct epoll_event){ .events = EPOLLIN, .data.fd = -1 }) ||
	    epoll_ctl(s->wait_fd, EPOLL_CTL_ADD, ring_buffer__epoll_fd(s->exec_rb),
		      &(struct epoll_event){ .events = EPOLLIN, .data.fd = -1 }) ||
	    epoll_ctl(s->wait_fd, EPOLL_CTL_ADD, s->wake_fd,
		      &(struct epoll_event){ .events = EPOLLIN, .data.fd = s->wake_fd })) {
		err = -errno;
		op_err("cannot set up the wait for the BPF ring buffer: %s", strerror(errno));
		goto fail;
	}
	*out = s;
	return 0;
fail:
	op_sampler_close(s);
	return err;
}

struct sampler_bpf *op_sampler_skel(struct op_sampler *s)
{
	return s->skel;
}

/* Parse a CPU list such as "0-3,5" into @online[0 .. n). */
static int read_online_cpus(bool *online, int n)
{
	char buf[4096], *p, *end;
	FILE *f = fopen("/sys/devices/system/cpu/online", "re");
	size_t len;

	if (!f)
		return -errno;
	len = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[len] = '\0';
	for (p = buf; *p && *p != '\n';) {
		long a = strtol(p, &end, 10), b = a;

		if (end == p)
			return -EINVAL;
		p = end;
		if (*p == '-') {
			b = strtol(p + 1, &end, 10);
			p = end;
		}
		for (long c = a; c <= b && c < n; c++)
			online[c] = true;
		if (*p == ',')
			p++;
	}
	return 0;
}

int op_sampler_attach(struct op_sampler *s)
{
	bool *online;
	int err, attached = 0;

	if (s->attached)
		return 0;
	err = sampler_bpf__attach(s->skel);
	if (err) {
		op_err("cannot attach the exec/exit tracepoints: %s", strerror(-err));
		return err;
	}
	online = calloc(s->n_cpus, sizeof(bool));
	if (!online)
		return -ENOMEM;
	err = read_online_cpus(online, s->n_cpus);
	if (err) {
		op_err("cannot read /sys/devices/system/cpu/online: %s", strerror(-err));
		goto out;
	}
	for (int cpu = 0; cpu < s->n_cpus; cpu++) {
		struct perf_event_attr attr = {
			.type = PERF_TYPE_SOFTWARE,
			.config = PERF_COUNT_SW_CPU_CLOCK,
			.size = sizeof(attr),
			.freq = 1,
			.sample_freq = s->opts.frequency_hz,
		};
		int fd;

		if (!online[cpu])
			continue;
		fd = syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0) {
			err = -errno;
			if (err == -EACCES || err == -EPERM)
				op_err("cannot open the cpu-clock perf event on cpu %d: permission "
				       "denied (run as root or grant CAP_PERFMON)",
				       cpu);
			else
				op_err("cannot open the cpu-clock perf event on cpu %d: %s", cpu,
				       strerror(-err));
			err = err == -EACCES || err == -EPERM ? -EPERM : -OTELPROF_ERR_PERF_EVENT;
			goto out;
		}
		s->perf_fds[cpu] = fd;
		s->perf_links[cpu] =
			bpf_program__attach_perf_event(s->skel->progs.on_cpu_sample, fd);
		if (!s->perf_links[cpu]) {
			err = -errno;
			op_err("cannot attach the sampler to cpu %d: %s", cpu, strerror(-err));
			err = -OTELPROF_ERR_PERF_EVENT;
			goto out;
		}
		attached++;
	}
	op_debug("sampling %d CPUs at %u Hz", attached, s->opts.frequency_hz);
	if (s->opts.off_cpu_threshold > 0) {
		s->offcpu_link = bpf_program__attach(s->skel->progs.on_sched_switch);
		if (!s->offcpu_link) {
			err = -errno;
			op_err("cannot attach the off-CPU sampler to sched_switch: %s",
			       strerror(-err));
			err = -OTELPROF_ERR_PERF_EVENT;
			goto out;
		}
	}
	err = attach_probes(s);
	if (err)
		goto out;
	s->attached = true;
	err = 0;
out:
	free(online);
	if (err)
		op_sampler_detach(s);
	return err;
}

void op_sampler_detach(struct op_sampler *s)
{
	if (!s)
		return;
	for (int cpu = 0; cpu < s->n_cpus; cpu++) {
		bpf_link__destroy(s->perf_links[cpu]);
		s->perf_links[cpu] = NULL;
		if (s->perf_fds[cpu] >= 0)
			close(s->perf_fds[cpu]);
		s->perf_fds[cpu] = -1;
	}
	bpf_link__destroy(s->offcpu_link);
	s->offcpu_link = NULL;
	for (size_t i = 0; s->probe_links && i < s->opts.probe_cnt; i++)
		bpf_link__destroy(s->probe_links[i]);
	free(s->probe_links);
	s->probe_links = NULL;
	s->attached = false;
}

int op_sampler_poll(struct op_sampler *s, int timeout_ms)
{
	struct epoll_event ev[3];
	uint64_t v;
	int n = epoll_wait(s->wait_fd, ev, 3, timeout_ms);

	if (n < 0 && errno != EINTR)
		return -errno;
	/* a wakeup is read only when there is one (no extra system call per batch) */
	for (int i = 0; i < n; i++)
		if (ev[i].data.fd == s->wake_fd && read(s->wake_fd, &v, sizeof(v)) < 0 &&
		    errno != EAGAIN)
			return -errno;
	/* records committed without a wakeup are only seen by reading the ring */
	ring_buffer__consume(s->exec_rb);
	n = ring_buffer__consume(s->rb);
	return n == -EINTR ? 0 : n;
}

void op_sampler_wake(struct op_sampler *s)
{
	uint64_t one = 1;

	if (write(s->wake_fd, &one, sizeof(one)) < 0)
		op_debug("cannot wake the reader: %s", strerror(errno));
}

void op_sampler_pause(struct op_sampler *s, bool paused)
{
	if (s && s->skel->bss)
		__atomic_store_n(&s->skel->bss->sampling_paused, paused, __ATOMIC_RELAXED);
}

int op_sampler_drain(struct op_sampler *s)
{
	ring_buffer__consume(s->exec_rb);
	return ring_buffer__consume(s->rb);
}

int op_sampler_counters(struct op_sampler *s, uint64_t *out)
{
	int ncpu = s->n_cpus;
	uint64_t *vals = calloc(ncpu, sizeof(uint64_t));

	if (!vals)
		return -ENOMEM;
	for (__u32 i = 0; i < OP_CNT_MAX; i++) {
		out[i] = 0;
		if (bpf_map__lookup_elem(s->skel->maps.counters, &i, sizeof(i), vals,
					 ncpu * sizeof(uint64_t), 0))
			continue;
		for (int c = 0; c < ncpu; c++)
			out[i] += vals[c];
	}
	free(vals);
	return 0;
}

void op_sampler_close(struct op_sampler *s)
{
	if (!s)
		return;
	if (s->perf_links && s->perf_fds)
		op_sampler_detach(s);
	ring_buffer__free(s->rb);
	ring_buffer__free(s->exec_rb);
	if (s->wait_fd >= 0)
		close(s->wait_fd);
	if (s->wake_fd >= 0)
		close(s->wake_fd);
	sampler_bpf__destroy(s->skel);
	for (int i = 0; i < N_HELPERS; i++)
		sampler_walk_bpf__destroy(s->helper[i]);
	free(s->perf_fds);
	free(s->perf_links);
	free(s);
}

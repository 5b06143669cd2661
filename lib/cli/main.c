// SPDX-License-Identifier: Apache-2.0
/*
 * otelprof - the standalone recorder over libotelprof: one machine, no collector; and the
 * tools to look at a profile: report (HTML), diff, convert (cli/report.c, diff.c, convert.c).
 * Exit codes: 0 success, 1 runtime failure, 2 bad usage; each failure prints one line.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "otelprof.h"

#define MAX_PIDS 4096

const char *prog = "otelprof";
static int verbosity = OTELPROF_LOG_WARN;
static int errors_logged; /* the library already said why: no second, vaguer line */

static void usage_main(FILE *f)
{
	fprintf(f,
		"usage: %s <command> [options]\n"
		"\n"
		"A whole-system CPU profiler on eBPF. Writes pprof (go tool pprof, speedscope,\n"
		"Pyroscope) or OTLP profiles.\n"
		"\n"
		"commands:\n"
		"  record     sample CPU stacks and write a profile (see '%s record --help')\n"
		"  report     one self-contained HTML page: flamegraph, top functions,\n"
		"             executables, processes and threads\n"
		"  diff       what changed between two profiles (terminal table, --html)\n"
		"  convert    pprof <-> OTLP <-> folded stacks\n"
		"  version    print the CLI and library versions\n"
		"\n"
		"options:\n"
		"  -h, --help     this help\n"
		"  -V, --version  same as 'version'\n"
		"\n"
		"'record' needs root, or CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE, "
		"CAP_DAC_READ_SEARCH\n"
		"and CAP_SYSLOG, and a kernel with BTF (/sys/kernel/btf/vmlinux); the other\n"
		"commands need no privileges.\n",
		prog, prog);
}

static void usage_record(FILE *f)
{
	fprintf(f,
		"usage: %s record [options]\n"
		"\n"
		"Sample the CPU stacks of the whole system, or of the given processes, and write\n"
		"one profile when the duration ends or on Ctrl-C / SIGTERM.\n"
		"\n"
		"options:\n"
		"  -p, --pid PID          profile this process (its threads included); repeat for\n"
		"                         more; default: the whole system\n"
		"  -d, --duration SECONDS how long to record (default 10; 0 = until Ctrl-C)\n"
		"  -F, --frequency HZ     samples per second per CPU, 1..%d (default %d)\n"
		"  -o, --output FILE      where to write (default otelprof.pb.gz, or\n"
		"                         otelprof.otlp.pb with --format otlp); '-' = stdout\n"
		"  -f, --format FORMAT    pprof (gzipped, default) or otlp (an OTLP\n"
		"                         ExportProfilesServiceRequest in protobuf)\n"
		"      --no-kernel        do not record kernel frames\n"
		"      --no-symbolize     send addresses and build ids only (no function names)\n"
		"      --frame-pointers   walk user stacks with frame pointers only (no CFI)\n"
		"      --off-cpu[=P]      also record where threads wait off the CPU (sleeps, "
		"locks,\n"
		"                         I/O, preemption): each interval off the CPU is recorded\n"
		"                         with probability P (default 1), weighted by its length\n"
		"                         (pprof sample type off_cpu; go tool pprof\n"
		"                         -sample_index=off_cpu)\n"
		"      --alloc[=MEAN]     also record memory allocations (uprobes on malloc, "
		"free...\n"
		"                         of glibc, jemalloc, tcmalloc, mimalloc): one sampled "
		"per\n"
		"                         MEAN bytes allocated on average (default 512k; suffix "
		"k,\n"
		"                         M), as Go's heap profiles: sample types alloc_objects,\n"
		"                         alloc_space, inuse_objects, inuse_space (go tool pprof\n"
		"                         -sample_index=inuse_space). Every allocator call traps:\n"
		"                         malloc-heavy programs slow down (README)\n"
		"      --no-labels        do not read Go pprof labels or custom-labels TLS labels\n"
		"                         (nor link samples to the spans they name)\n"
		"      --no-env-resource  do not take service.name etc. from processes'\n"
		"                         OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES\n"
		"  -v, --verbose          more log output (repeat for debug)\n"
		"  -q, --quiet            errors only\n"
		"  -h, --help             this help\n"
		"\n"
		"examples:\n"
		"  %s record -d 30 -o host.pb.gz && go tool pprof -top host.pb.gz\n"
		"  %s record -p $(pidof myserver) -F 99 -o myserver.pb.gz\n",
		prog, OTELPROF_MAX_FREQUENCY, OTELPROF_DEFAULT_FREQUENCY, prog, prog);
}

static void log_to_stderr(enum otelprof_log_level level, const char *msg, void *ctx)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };

	if (level == OTELPROF_LOG_ERROR)
		errors_logged++;
	fprintf(stderr, "%s: %s: %s\n", prog, names[level], msg);
}

/* Parse a base-10 integer in [min, max]; 0 on success. */
static int parse_num(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "%s: ", prog);
	fprintf(stderr, fmt, arg);
	fprintf(stderr, " (see '%s record --help')\n", prog);
	return EXIT_USAGE;
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= n;
	}
	return 0;
}

static int cmd_record(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "duration", required_argument, NULL, 'd' },
		{ "frequency", required_argument, NULL, 'F' },
		{ "output", required_argument, NULL, 'o' },
		{ "format", required_argument, NULL, 'f' },
		{ "no-kernel", no_argument, NULL, 'K' },
		{ "no-symbolize", no_argument, NULL, 'S' },
		{ "frame-pointers", no_argument, NULL, 'P' },
		{ "off-cpu", optional_argument, NULL, 'O' },
		{ "alloc", optional_argument, NULL, 'A' },
		{ "no-labels", no_argument, NULL, 'L' },
		{ "no-env-resource", no_argument, NULL, 'E' },
		/* advanced, not in --help: BPF ring buffer bytes (tests of lost samples) */
		{ "ringbuf-bytes", required_argument, NULL, 'R' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct otelprof_opts opts = OTELPROF_OPTS_INIT;
	enum otelprof_format format = OTELPROF_FORMAT_PPROF;
	static int pids[MAX_PIDS];
	const char *output = NULL;
	struct otelprof_stats st = { .sz = sizeof(st) };
	struct otelprof *p = NULL;
	long duration = 10, v;
	size_t npids = 0, len = 0;
	void *buf = NULL;
	int c, fd = -1, err, rc = EXIT_RUNTIME;
	struct timespec t0, now;
	sigset_t stopsigs;

	optind = 1;
	while ((c = getopt_long(argc, argv, "p:d:F:o:f:vqh", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (parse_num(optarg, 1, INT_MAX, &v))
				return usage_error("invalid pid '%s': expected a positive number",
						   optarg);
			if (npids == MAX_PIDS)
				return usage_error("too many --pid options (at most %s)", "4096");
			pids[npids++] = (int)v;
			break;
		case 'd':
			if (parse_num(optarg, 0, 365L * 24 * 3600, &duration))
				return usage_error("invalid duration '%s': expected whole seconds, "
						   "0 for until Ctrl-C",
						   optarg);
			break;
		case 'F':
			if (parse_num(optarg, 1, OTELPROF_MAX_FREQUENCY, &v))
				return usage_error("invalid frequency '%s': expected 1 to 10000 Hz",
						   optarg);
			opts.frequency_hz = (unsigned int)v;
			break;
		case 'o':
			output = optarg;
			break;
		case 'f':
			if (!strcmp(optarg, "pprof"))
				format = OTELPROF_FORMAT_PPROF;
			else if (!strcmp(optarg, "otlp"))
				format = OTELPROF_FORMAT_OTLP;
			else
				return usage_error("invalid format '%s': expected pprof or otlp",
						   optarg);
			break;
		case 'K':
			opts.flags |= OTELPROF_F_NO_KERNEL_STACKS;
			break;
		case 'S':
			opts.flags |= OTELPROF_F_NO_SYMBOLIZE;
			break;
		case 'R':
			if (parse_num(optarg, 1, 1L << 30, &v))
				return usage_error(
					"invalid ring buffer size '%s': expected bytes, a "
					"power of two of at least 65536",
					optarg);
			opts.ringbuf_bytes = (size_t)v;
			break;
		case 'P':
			opts.flags |= OTELPROF_F_FRAME_POINTERS;
			break;
		case 'O': {
			char *end;

			opts.off_cpu_threshold = 1.0;
			if (optarg) {
				errno = 0;
				opts.off_cpu_threshold = strtod(optarg, &end);
				if (errno || end == optarg || *end ||
				    !(opts.off_cpu_threshold > 0 && opts.off_cpu_threshold <= 1))
					return usage_error("invalid --off-cpu '%s': expected the "
							   "probability that "
							   "an off-CPU interval is recorded, above "
							   "0 and at most 1",
							   optarg);
			}
			break;
		}
		case 'A': {
			unsigned long long mean = OTELPROF_ALLOC_DEFAULT_MEAN;
			char *end;

			if (optarg) {
				errno = 0;
				mean = strtoull(optarg, &end, 10);
				if (!errno && end != optarg && (*end == 'k' || *end == 'K'))
					mean <<= 10, end++;
				else if (!errno && end != optarg && (*end == 'm' || *end == 'M'))
					mean <<= 20, end++;
				if (errno || end == optarg || *end || optarg[0] == '-' || !mean ||
				    mean > (1ull << 40))
					return usage_error("invalid --alloc '%s': expected the "
							   "mean bytes between "
							   "sampled allocations, 1 to 1T (e.g. "
							   "524288, 512k, 1M)",
							   optarg);
			}
			opts.alloc_mean_bytes = mean;
			break;
		}
		case 'L':
			opts.flags |= OTELPROF_F_NO_LABELS;
			break;
		case 'E':
			opts.flags |= OTELPROF_F_NO_ENV_RESOURCE;
			break;
		case 'v':
			if (verbosity < OTELPROF_LOG_DEBUG)
				verbosity++;
			break;
		case 'q':
			verbosity = OTELPROF_LOG_ERROR;
			break;
		case 'h':
			usage_record(stdout);
			return 0;
		default:
			/* getopt printed the reason */
			fprintf(stderr, "%s: see '%s record --help'\n", prog, prog);
			return EXIT_USAGE;
		}
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	if (!output)
		output = format == OTELPROF_FORMAT_OTLP ? "otelprof.otlp.pb" : "otelprof.pb.gz";
	opts.pids = npids ? pids : NULL;
	opts.pid_cnt = npids;
	otelprof_set_log(log_to_stderr, NULL, verbosity);

	/* Fail on an unwritable output before spending any time recording. */
	if (strcmp(output, "-")) {
		fd = open(output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0) {
			fprintf(stderr,
				"%s: cannot write output file %s: %s (choose another path "
				"with --output)\n",
				prog, output, strerror(errno));
			return EXIT_RUNTIME;
		}
	} else {
		fd = STDOUT_FILENO;
	}

	/*
	 * Ctrl-C and SIGTERM end the recording: blocked here, so the library's threads (created
	 * from now on) inherit the mask and the main thread sleeps in sigtimedwait() until one
	 * comes or the duration ends (no polling wakeups). One that comes while the programs
	 * load ends the recording as soon as it starts.
	 */
	sigemptyset(&stopsigs);
	sigaddset(&stopsigs, SIGINT);
	sigaddset(&stopsigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stopsigs, NULL);
	p = otelprof_open(&opts);
	if (!p) {
		err = errno;
		if (!errors_logged)
			fprintf(stderr, "%s: cannot start profiling: %s\n", prog,
				otelprof_strerror(err));
		rc = err == OTELPROF_ERR_OPTS ? EXIT_USAGE : EXIT_RUNTIME;
		goto cleanup;
	}
	err = otelprof_start(p);
	if (err) {
		if (!errors_logged)
			fprintf(stderr, "%s: cannot start profiling: %s\n", prog,
				otelprof_strerror(err));
		goto cleanup;
	}
	if (verbosity >= OTELPROF_LOG_INFO)
		fprintf(stderr, "%s: recording %s at %u Hz%s\n", prog,
			npids ? "the given processes" : "the whole system",
			opts.frequency_hz ? opts.frequency_hz : OTELPROF_DEFAULT_FREQUENCY,
			duration ? "" : " until Ctrl-C");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct timespec left = { 3600, 0 };

		if (duration) {
			long ns;

			clock_gettime(CLOCK_MONOTONIC, &now);
			ns = duration * 1000000000L - (now.tv_sec - t0.tv_sec) * 1000000000L -
			     (now.tv_nsec - t0.tv_nsec);
			if (ns <= 0)
				break;
			left = (struct timespec){ ns / 1000000000L, ns % 1000000000L };
		}
		if (sigtimedwait(&stopsigs, NULL, &left) > 0)
			break; /* EAGAIN: the duration is checked again; EINTR: likewise */
	}
	otelprof_stop(p);
	otelprof_get_stats(p, &st);
	err = otelprof_collect(p, format, &buf, &len);
	if (err) {
		fprintf(stderr, "%s: cannot encode the profile: %s\n", prog,
			otelprof_strerror(err));
		goto cleanup;
	}
	err = write_all(fd, buf, len);
	if (err) {
		fprintf(stderr, "%s: cannot write output file %s: %s\n", prog, output,
			strerror(-err));
		goto cleanup;
	}
	if (verbosity >= OTELPROF_LOG_WARN)
		fprintf(stderr,
			"%s: wrote %llu samples (%llu lost, %llu dropped) from %llu processes to "
			"%s\n",
			prog, (unsigned long long)st.samples, (unsigned long long)st.lost,
			(unsigned long long)st.dropped, (unsigned long long)st.processes,
			strcmp(output, "-") ? output : "stdout");
	if (verbosity >= OTELPROF_LOG_WARN && opts.off_cpu_threshold > 0)
		fprintf(stderr, "%s: and %llu off-CPU intervals (%llu without their end)\n", prog,
			(unsigned long long)st.off_cpu_intervals,
			(unsigned long long)st.off_cpu_unpaired);
	if (verbosity >= OTELPROF_LOG_WARN && opts.alloc_mean_bytes)
		fprintf(stderr,
			"%s: and %llu sampled allocations (%llu freed, %llu not tracked to their "
			"free, %llu frees of unknown addresses, %llu sampled calls that failed)\n",
			prog, (unsigned long long)st.alloc_samples,
			(unsigned long long)st.alloc_frees, (unsigned long long)st.alloc_untracked,
			(unsigned long long)st.alloc_unpaired_frees,
			(unsigned long long)st.alloc_failed);
	if (verbosity >= OTELPROF_LOG_WARN && (st.unwind_procs_full || st.unwind_tables_full))
		fprintf(stderr,
			"%s: unwinder maps full: %llu process and %llu table loads did not fit; "
			"their stacks were walked by frame pointers and may be short\n",
			prog, (unsigned long long)st.unwind_procs_full,
			(unsigned long long)st.unwind_tables_full);
	if (verbosity >= OTELPROF_LOG_WARN &&
	    (st.python_processes || st.python_unknown_version || st.python_frames))
		fprintf(stderr,
			"%s: python: %llu processes unwound, %llu of an unknown version (native "
			"frames); %llu eval-loop frames named, left native: %llu no thread state, "
			"%llu read failed, %llu chain ended; %llu code objects gone\n",
			prog, (unsigned long long)st.python_processes,
			(unsigned long long)st.python_unknown_version,
			(unsigned long long)st.python_frames,
			(unsigned long long)st.python_native_no_tstate,
			(unsigned long long)st.python_native_read_failed,
			(unsigned long long)st.python_native_chain_ended,
			(unsigned long long)st.python_stale_code);
	if (verbosity >= OTELPROF_LOG_INFO && st.samples_parked)
		fprintf(stderr,
			"%s: %llu samples of processes gone before their exit mappings were read "
			"waited for them\n",
			prog, (unsigned long long)st.samples_parked);
	if (verbosity >= OTELPROF_LOG_INFO &&
	    (st.v8_processes || st.v8_unknown_layout || st.v8_frames_named))
		fprintf(stderr,
			"%s: v8: %llu JavaScript frames named, %llu not (objects gone), %llu "
			"frames "
			"skipped by the walk; %llu processes of an unknown V8 layout (native "
			"frames)\n",
			prog, (unsigned long long)st.v8_frames_named,
			(unsigned long long)st.v8_frames_unnamed,
			(unsigned long long)st.v8_bad_frames,
			(unsigned long long)st.v8_unknown_layout);
	if (verbosity >= OTELPROF_LOG_INFO && (st.perfmap_named || st.perfmap_bad_lines))
		fprintf(stderr,
			"%s: perf maps: %llu frames named (perf-PID.map and jitdump files), %llu "
			"malformed lines or records skipped\n",
			prog, (unsigned long long)st.perfmap_named,
			(unsigned long long)st.perfmap_bad_lines);
	rc = 0;
cleanup:
	otelprof_buf_free(buf);
	otelprof_close(p);
	if (fd > STDERR_FILENO && rc != 0)
		unlink(output); /* no half-written or empty profile left behind */
	if (fd > STDERR_FILENO && close(fd) && rc == 0) {
		fprintf(stderr, "%s: cannot write output file %s: %s\n", prog, output,
			strerror(errno));
		rc = EXIT_RUNTIME;
	}
	return rc;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage_main(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage_main(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version") ||
	    !strcmp(argv[1], "version")) {
		printf("otelprof %s (library %s)\n", OTELPROF_VERSION_STRING,
		       otelprof_version_string());
		return 0;
	}
	if (!strcmp(argv[1], "record"))
		return cmd_record(argc - 1, argv + 1);
	if (!strcmp(argv[1], "report"))
		return cmd_report(argc - 1, argv + 1);
	if (!strcmp(argv[1], "diff"))
		return cmd_diff(argc - 1, argv + 1);
	if (!strcmp(argv[1], "convert"))
		return cmd_convert(argc - 1, argv + 1);
	fprintf(stderr, "%s: unknown command '%s' (see '%s --help')\n", prog, argv[1], prog);
	return EXIT_USAGE;
}

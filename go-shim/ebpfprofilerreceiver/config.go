package ebpfprofilerreceiver

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/otelprof/otelprof/go-shim/internal/otelprof"
)

// ErrorMode decides what a failure to load or start the profiler does to the collector.
type ErrorMode string

const (
	// ErrorModePropagate fails the collector's start (the default): a node agent that cannot
	// profile should be noticed, not run silently.
	ErrorModePropagate ErrorMode = "propagate"
	// ErrorModeIgnore logs the error and keeps the rest of the collector running without
	// this receiver's data (e.g. a mixed fleet where some kernels lack BTF).
	ErrorModeIgnore ErrorMode = "ignore"
)

// minReporterInterval keeps a typo such as `reporter_interval: 5ms` from turning the receiver
// into a busy loop of tiny exports.
const minReporterInterval = 100 * time.Millisecond

// Config is the `ebpfprofiler` receiver's configuration. Keys shared with the upstream
// OpenTelemetry eBPF profiler's `profiling` receiver (samples_per_second, reporter_interval,
// off_cpu_threshold, verbose_mode) have the same names and meanings there, so a configuration
// can switch between the two by changing the receiver's name.
type Config struct {
	// SamplesPerSecond is the sampling frequency on every CPU, 1..10000 (default 20). Each
	// sample stands for 1e9/samples_per_second nanoseconds of CPU time.
	SamplesPerSecond int `mapstructure:"samples_per_second"`

	// ReporterInterval is how often gathered samples are encoded and sent down the pipeline
	// (default 5s). One report holds one profile per process that ran.
	ReporterInterval time.Duration `mapstructure:"reporter_interval"`

	// Pids restricts profiling to these processes and their threads. Empty (the default)
	// profiles the whole host.
	Pids []int `mapstructure:"pids"`

	// KernelFrames records the kernel part of each stack (default true).
	KernelFrames bool `mapstructure:"kernel_frames"`

	// Symbolize resolves function names, files and lines on the host (default true). With
	// false, frames carry only mapping + address and build ids, for backends that symbolize.
	Symbolize bool `mapstructure:"symbolize"`

	// FramePointersOnly walks user stacks with frame pointers instead of the binaries' unwind
	// tables (default false). Cheaper, but loses frames of code built without frame pointers.
	FramePointersOnly bool `mapstructure:"frame_pointers_only"`

	// Labels reads the labels threads publish - Go pprof labels and the custom-labels TLS
	// ABI of C, C++ and Rust programs - into sample attributes, and links samples to the
	// spans they name (default true).
	Labels bool `mapstructure:"labels"`

	// EnvResource takes each process's service.name and other resource attributes from its
	// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, as its OpenTelemetry SDK does
	// (default true).
	EnvResource bool `mapstructure:"env_resource"`

	// ResourceAttributesOnSamples moves each process's resource attributes (service.name,
	// process.pid, process.executable.*, container.id, OTEL_RESOURCE_ATTRIBUTES) onto its
	// samples' attributes and leaves the resource empty (default false). For backends that do
	// not resolve string-table keys in resource attributes, which this collector line's pdata
	// always writes: Grafana Pyroscope 1.21 refuses such exports (see onsamples.go).
	ResourceAttributesOnSamples bool `mapstructure:"resource_attributes_on_samples"`

	// RingBufferBytes sizes the kernel-to-user ring buffer: a power of two, at least 65536;
	// 0 (the default) = 1 MiB per online CPU, from 1 to 4 MiB. Raise it if the `lost`
	// counter grows.
	RingBufferBytes int `mapstructure:"ring_buffer_bytes"`

	// ErrorMode is what a failure to load or attach the profiler does: `propagate` (default)
	// fails the collector's start, `ignore` logs it and runs without this receiver's data.
	ErrorMode ErrorMode `mapstructure:"error_mode"`

	// OffCPUThreshold turns on off-CPU profiling, with the upstream `profiling` receiver's
	// meaning: the probability, 0 to 1, that an interval a thread spends off the CPU is
	// recorded (0, the default, is off). Recorded intervals are weighted by 1/probability.
	// Off-CPU samples go in a profile of their own per process, sample type
	// off_cpu/nanoseconds, each with the thread.state it left the CPU in.
	OffCPUThreshold float64 `mapstructure:"off_cpu_threshold"`

	// AllocMeanBytes turns on memory allocation profiling (an otelprof key): uprobes on the
	// processes' allocator (glibc, jemalloc, tcmalloc, mimalloc) sample one allocation per
	// AllocMeanBytes bytes allocated on average (524288 is Go's and tcmalloc's default);
	// 0, the default, is off. Four profiles per process: alloc_objects/count,
	// alloc_space/bytes, inuse_objects/count, inuse_space/bytes. Every allocator call traps
	// into the kernel: malloc-heavy programs slow down (README "Memory allocations").
	AllocMeanBytes int64 `mapstructure:"alloc_mean_bytes"`

	// VerboseMode forwards the library's debug messages (and libbpf's) to the collector log
	// (default false: info and above).
	VerboseMode bool `mapstructure:"verbose_mode"`

	// The rest of the upstream receiver's keys (dropin.go: defaults, validation, effects).
	Upstream `mapstructure:",squash"`
}

func createDefaultConfig() *Config {
	return &Config{
		SamplesPerSecond: otelprof.DefaultFrequency,
		ReporterInterval: 5 * time.Second,
		KernelFrames:     true,
		Symbolize:        true,
		Labels:           true,
		EnvResource:      true,
		ErrorMode:        ErrorModePropagate,
		Upstream:         upstreamDefaults(),
	}
}

// Validate checks every key; each error starts with the key it is about. The collector calls
// it before Start and prefixes the receiver's name.
func (cfg *Config) Validate() error {
	var errs []error
	if cfg.SamplesPerSecond < 1 || cfg.SamplesPerSecond > otelprof.MaxFrequency {
		errs = append(errs, fmt.Errorf("samples_per_second: must be between 1 and %d, got %d",
			otelprof.MaxFrequency, cfg.SamplesPerSecond))
	}
	if cfg.ReporterInterval < minReporterInterval {
		errs = append(errs, fmt.Errorf("reporter_interval: must be at least %s, got %s",
			minReporterInterval, cfg.ReporterInterval))
	}
	seen := make(map[int]bool, len(cfg.Pids))
	for _, pid := range cfg.Pids {
		if pid <= 0 {
			errs = append(errs, fmt.Errorf("pids: %d is not a process id (must be > 0; "+
				"leave pids empty to profile the whole host)", pid))
		} else if seen[pid] {
			errs = append(errs, fmt.Errorf("pids: %d is listed twice", pid))
		}
		seen[pid] = true
	}
	if n := cfg.RingBufferBytes; n != 0 && (n < 65536 || n&(n-1) != 0) {
		errs = append(errs, fmt.Errorf("ring_buffer_bytes: must be 0 (1 MiB per CPU, up to 4 MiB) or a power of two "+
			">= 65536, got %d", n))
	}
	// upstream's error_mode is case-insensitive (ErrorMode.UnmarshalText)
	cfg.ErrorMode = ErrorMode(strings.ToLower(string(cfg.ErrorMode)))
	switch cfg.ErrorMode {
	case ErrorModePropagate, ErrorModeIgnore:
	default:
		errs = append(errs, fmt.Errorf("error_mode: must be %q or %q, got %q",
			ErrorModePropagate, ErrorModeIgnore, cfg.ErrorMode))
	}
	if !(cfg.OffCPUThreshold >= 0 && cfg.OffCPUThreshold <= 1) {
		errs = append(errs, fmt.Errorf("off_cpu_threshold: the probability that an off-CPU "+
			"interval is recorded must be between 0 (off) and 1, got %g", cfg.OffCPUThreshold))
	}
	errs = append(errs, cfg.Upstream.validate()...)
	if cfg.AllocMeanBytes < 0 || cfg.AllocMeanBytes > 1<<40 {
		errs = append(errs, fmt.Errorf("alloc_mean_bytes: the mean bytes between sampled "+
			"allocations must be between 0 (off) and 2^40, e.g. 524288, got %d", cfg.AllocMeanBytes))
	}
	return errors.Join(errs...)
}

// options translates the configuration into the library's options.
func (cfg *Config) options() otelprof.Options {
	o := otelprof.Options{
		FrequencyHz:     cfg.SamplesPerSecond,
		PIDs:            cfg.Pids,
		NoKernelStacks:  !cfg.KernelFrames,
		NoSymbolize:     !cfg.Symbolize,
		NoLabels:        !cfg.Labels,
		NoEnvResource:   !cfg.EnvResource,
		FramePointers:   cfg.FramePointersOnly,
		RingBufferBytes: cfg.RingBufferBytes,
		OffCPUThreshold: cfg.OffCPUThreshold,
		AllocMeanBytes:  uint64(cfg.AllocMeanBytes),
	}
	cfg.Upstream.apply(&o)
	return o
}

// Package otelprof is the Go side of libotelprof's C ABI (include/otelprof.h).
//
// Everything that crosses cgo lives in otelprof_cgo.go; builds without cgo, or for another OS,
// get otelprof_stub.go, whose Open fails with ErrUnsupported. Profiles cross the boundary as
// bytes (a serialized OTLP ExportProfilesServiceRequest); no C struct layout is shared with Go
// beyond the option and stats structs read here.
package otelprof

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"
)

// Level is the severity of a library log message (enum otelprof_log_level).
type Level int

const (
	LevelError Level = 0
	LevelWarn  Level = 1
	LevelInfo  Level = 2
	LevelDebug Level = 3
)

// MaxFrequency is OTELPROF_MAX_FREQUENCY: the highest accepted samples per second per CPU.
const MaxFrequency = 10000

// DefaultFrequency is OTELPROF_DEFAULT_FREQUENCY.
const DefaultFrequency = 20

// Options mirrors struct otelprof_opts with Go types. Zero values take the library defaults.
type Options struct {
	// FrequencyHz is samples per second per CPU (0 = 20).
	FrequencyHz int
	// PIDs restricts profiling to these processes and their threads; empty = whole system.
	PIDs []int
	// NoKernelStacks drops kernel frames (OTELPROF_F_NO_KERNEL_STACKS).
	NoKernelStacks bool
	// NoSymbolize leaves frames as mapping + address (OTELPROF_F_NO_SYMBOLIZE).
	NoSymbolize bool
	// FramePointers walks user stacks with frame pointers only (OTELPROF_F_FRAME_POINTERS).
	FramePointers bool
	// OffCPUThreshold is the probability that an off-CPU interval is recorded; 0 = off.
	OffCPUThreshold float64
	// AllocMeanBytes is the mean bytes between sampled allocations; 0 = off.
	AllocMeanBytes uint64
	// NoLabels leaves thread labels unread and samples unlinked (OTELPROF_F_NO_LABELS).
	NoLabels bool
	// NoEnvResource leaves processes' OTEL_* environment unread (OTELPROF_F_NO_ENV_RESOURCE).
	NoEnvResource bool
	// RingBufferBytes sizes the BPF ring buffer (power of two >= 64 KiB; 0 = 1 MiB per
	// online CPU, from 1 to 4 MiB).
	RingBufferBytes int

	// Drop-in for the upstream receiver (issue 22).
	//
	// RuntimesOff names language runtimes (their op_runtime names: golabels, customlabels,
	// python, v8, hotspot, ...) not to start.
	RuntimesOff []string
	// IncludeEnvVars names environment variables added to each process's resource
	// attributes as process.environment_variable.<NAME>.
	IncludeEnvVars []string
	// ProbabilisticThreshold (1..99; 0 or >= 100 = always on) is the chance in 100 that
	// sampling is on during each ProbabilisticInterval.
	ProbabilisticThreshold uint
	ProbabilisticInterval  time.Duration
	// NoErrorFrames drops the "[unwind error: reason]" marker frames.
	NoErrorFrames bool
	// IdleFrames records the idle task's samples (pid 0, kernel stack).
	IdleFrames bool
	// ClockSyncInterval is how often the wall clock's offset is measured again; 0 = once.
	ClockSyncInterval time.Duration
	// Probes are functions whose every call (or return) is a sample (struct otelprof_probe).
	Probes []Probe
	// RuntimesWanted names runtimes asked for by name; the library warns about one it lacks.
	RuntimesWanted []string
}

// Probe is a traced function: Symbol in the executable or library Binary, on return if Ret.
type Probe struct {
	Binary, Symbol string
	Ret            bool
}

// Stats mirrors struct otelprof_stats.
type Stats struct {
	Samples          uint64
	Lost             uint64
	Dropped          uint64
	Collected        uint64
	Processes        uint64
	KernelFrames     uint64
	UserFrames       uint64
	Unsymbolized     uint64
	UnwindTableBytes uint64
	// UnwindErrors maps otelprof_unwind_error_name() to its non-zero counter.
	UnwindErrors map[string]uint64
	// UnwindProcsFull and UnwindTablesFull count processes and unwind tables the BPF maps
	// had no room for (their stacks fall back to frame pointers).
	UnwindProcsFull  uint64
	UnwindTablesFull uint64
	// OffCPUIntervals and OffCPUUnpaired count off-CPU intervals recorded and stacks whose
	// interval never ended in view.
	OffCPUIntervals uint64
	OffCPUUnpaired  uint64
	// ProbIntervals and ProbIntervalsOn count probabilistic profiling's intervals begun and
	// those with sampling on.
	ProbIntervals   uint64
	ProbIntervalsOn uint64
	// Binaries open in the file cache; SymbolizeBacklogBytes is queued, unsymbolized work.
	Binaries              uint64
	SymbolizeBacklogBytes uint64
	// SymbolizeBacklog is how many records the library's symbolizer thread has yet to
	// symbolize (a report leaves them for the next one rather than wait for them).
	SymbolizeBacklog uint64
	// SamplesParked counts samples of processes gone before their exit mappings were read,
	// held back until the exit record so that their frames are named.
	SamplesParked uint64
	// FramesDWARFDeferred counts user frames named from their file's symbol tables while its
	// compressed DWARF waits for the file to be the innermost frame of enough samples
	// (OTELPROF_DWARF_AFTER): names without inline frames, files and lines.
	FramesDWARFDeferred uint64
}

// ErrUnsupported is returned by Open in builds without cgo or for an OS other than Linux.
var ErrUnsupported = errors.New("otelprof: this build has no eBPF profiler " +
	"(it needs linux and cgo: build with CGO_ENABLED=1 on linux, e.g. `make` in the otelprof repository)")

// Error is a failed library call: Op names the C function, Code is the positive error code
// (an errno value or an OTELPROF_ERR_* value) and Msg is otelprof_strerror(Code).
type Error struct {
	Op   string
	Code int
	Msg  string
	// Detail, when set, is what the library logged about this failure (e.g. "missing
	// capabilities: CAP_BPF, CAP_PERFMON (...)"): more precise than Msg, so it replaces it.
	Detail string
}

func (e *Error) Error() string {
	if e.Detail != "" {
		return e.Op + ": " + e.Detail
	}
	hint := ""
	switch syscall.Errno(e.Code) {
	case syscall.EPERM, syscall.EACCES:
		// otelprof_strerror() may already say how to get the privileges.
		if !strings.Contains(e.Msg, "CAP_") {
			hint = " (run as root, or grant CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE, " +
				"CAP_DAC_READ_SEARCH and CAP_SYSLOG)"
		}
	}
	return fmt.Sprintf("%s: %s%s", e.Op, e.Msg, hint)
}

// Is lets errors.Is(err, syscall.EPERM) and friends work on library errors.
func (e *Error) Is(target error) bool {
	if errno, ok := target.(syscall.Errno); ok {
		return int(errno) == e.Code
	}
	return false
}

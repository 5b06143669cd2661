//go:build cgo && linux

package otelprof

// The library is linked statically. The -L below is the repository's default build directory;
// the top-level Makefile (collector-config/collector.mk) puts `-L$(BUILD)` and the same
// libraries in CGO_LDFLAGS, which the linker sees first, so BUILD=... builds link their own copy.
// The library list must match LDLIBS in the top-level Makefile (TestLinkFlagsMatchMakefile).

/*
#cgo CFLAGS: -I${SRCDIR}/../../../include
#cgo LDFLAGS: -L${SRCDIR}/../../../build -l:libotelprof.a -lbpf -lelf -ldwarf -liberty -lprotobuf-c -lz -ldeflate -llzma -lpthread
#include <stdlib.h>
#include <errno.h>
#include "otelprof.h"

extern void goOtelprofLog(int level, char *msg);

static void otelprof_go_log(enum otelprof_log_level level, const char *msg, void *ctx)
{
	(void)ctx;
	goOtelprofLog((int)level, (char *)msg);
}

static otelprof_log_fn otelprof_go_log_fn(void)
{
	return otelprof_go_log;
}
*/
import "C"

import (
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// LogFunc receives one library (or libbpf) message. It may be called from the library's own
// thread and must not call back into the library.
type LogFunc func(level Level, msg string)

var logFn atomic.Pointer[LogFunc]

//export goOtelprofLog
func goOtelprofLog(level C.int, msg *C.char) {
	if fn := logFn.Load(); fn != nil {
		(*fn)(Level(level), C.GoString(msg))
	}
}

// SetLogger routes the library's messages up to max to fn (nil silences it). The callback is
// process-wide, like libbpf_set_print(): the last caller wins.
func SetLogger(fn LogFunc, max Level) {
	if fn == nil {
		logFn.Store(nil)
		C.otelprof_set_log(nil, nil, C.OTELPROF_LOG_ERROR)
		return
	}
	logFn.Store(&fn)
	C.otelprof_set_log(C.otelprof_go_log_fn(), nil, C.enum_otelprof_log_level(max))
}

// Version is the version of the linked library ("MAJOR.MINOR.PATCH").
func Version() string {
	return C.GoString(C.otelprof_version_string())
}

// Profiler is an open libotelprof handle. Its methods may be called from several goroutines,
// except Close, which must not race with the others.
type Profiler struct {
	mu sync.Mutex // guards p against Close
	p  *C.struct_otelprof
}

func libError(op string, code int) error {
	if code < 0 {
		code = -code
	}
	return &Error{Op: op, Code: code, Msg: C.GoString(C.otelprof_strerror(C.int(code)))}
}

// Open validates opts, loads and verifies the BPF programs. Nothing is sampled until Start.
func Open(opts Options) (*Profiler, error) {
	var o C.struct_otelprof_opts
	o.sz = C.size_t(unsafe.Sizeof(o))
	o.frequency_hz = C.uint(opts.FrequencyHz)
	o.ringbuf_bytes = C.size_t(opts.RingBufferBytes)
	o.off_cpu_threshold = C.double(opts.OffCPUThreshold)
	o.alloc_mean_bytes = C.uint64_t(opts.AllocMeanBytes)
	if opts.NoKernelStacks {
		o.flags |= C.OTELPROF_F_NO_KERNEL_STACKS
	}
	if opts.NoSymbolize {
		o.flags |= C.OTELPROF_F_NO_SYMBOLIZE
	}
	if opts.NoLabels {
		o.flags |= C.OTELPROF_F_NO_LABELS
	}
	if opts.NoEnvResource {
		o.flags |= C.OTELPROF_F_NO_ENV_RESOURCE
	}
	if opts.FramePointers {
		o.flags |= C.OTELPROF_F_FRAME_POINTERS
	}
	if len(opts.RuntimesOff) > 0 {
		cs := C.CString(strings.Join(opts.RuntimesOff, ","))
		defer C.free(unsafe.Pointer(cs))
		o.runtimes_off = cs
	}
	if len(opts.RuntimesWanted) > 0 {
		cs := C.CString(strings.Join(opts.RuntimesWanted, ","))
		defer C.free(unsafe.Pointer(cs))
		o.runtimes_wanted = cs
	}
	if len(opts.IncludeEnvVars) > 0 {
		cs := C.CString(strings.Join(opts.IncludeEnvVars, ","))
		defer C.free(unsafe.Pointer(cs))
		o.include_env_vars = cs
	}
	o.probabilistic_threshold = C.uint(opts.ProbabilisticThreshold)
	o.probabilistic_interval_ns = C.uint64_t(opts.ProbabilisticInterval.Nanoseconds())
	o.no_error_frames = C.bool(opts.NoErrorFrames)
	o.idle_frames = C.bool(opts.IdleFrames)
	o.clock_sync_interval_ns = C.uint64_t(opts.ClockSyncInterval.Nanoseconds())
	if n := len(opts.Probes); n > 0 {
		probes := (*C.struct_otelprof_probe)(C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof(C.struct_otelprof_probe{}))))
		defer C.free(unsafe.Pointer(probes))
		for i, dst := 0, unsafe.Slice(probes, n); i < n; i++ {
			dst[i].binary = C.CString(opts.Probes[i].Binary)
			defer C.free(unsafe.Pointer(dst[i].binary))
			dst[i].symbol = C.CString(opts.Probes[i].Symbol)
			defer C.free(unsafe.Pointer(dst[i].symbol))
			dst[i].ret = C.bool(opts.Probes[i].Ret)
		}
		o.probes = probes
		o.probe_cnt = C.size_t(n)
	}
	if n := len(opts.PIDs); n > 0 {
		pids := (*C.int)(C.malloc(C.size_t(n) * C.size_t(unsafe.Sizeof(C.int(0)))))
		defer C.free(unsafe.Pointer(pids))
		for i, dst := 0, unsafe.Slice(pids, n); i < n; i++ {
			dst[i] = C.int(opts.PIDs[i])
		}
		o.pids = pids
		o.pid_cnt = C.size_t(n)
	}
	p, err := C.otelprof_open(&o)
	if p == nil {
		code := int(syscall.EINVAL) // errno unset would be a library bug; say "invalid"
		var errno syscall.Errno
		if errors.As(err, &errno) && errno != 0 {
			code = int(errno)
		}
		return nil, libError("otelprof_open", code)
	}
	prof := &Profiler{p: p}
	runtime.SetFinalizer(prof, (*Profiler).Close)
	return prof, nil
}

// Start attaches the sampler to every online CPU.
func (p *Profiler) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.p == nil {
		return libError("otelprof_start", C.OTELPROF_ERR_STATE)
	}
	if rc := C.otelprof_start(p.p); rc != 0 {
		return libError("otelprof_start", int(rc))
	}
	return nil
}

// Stop detaches from the CPUs; samples taken so far remain for Collect.
func (p *Profiler) Stop() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.p == nil {
		return nil
	}
	if rc := C.otelprof_stop(p.p); rc != 0 {
		return libError("otelprof_stop", int(rc))
	}
	return nil
}

// CollectOTLP returns every sample gathered since the previous call as a serialized OTLP
// ExportProfilesServiceRequest, copied into Go memory.
func (p *Profiler) CollectOTLP() ([]byte, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.p == nil {
		return nil, libError("otelprof_collect", C.OTELPROF_ERR_STATE)
	}
	var data unsafe.Pointer
	var size C.size_t
	if rc := C.otelprof_collect(p.p, C.OTELPROF_FORMAT_OTLP, &data, &size); rc != 0 {
		return nil, libError("otelprof_collect", int(rc))
	}
	defer C.otelprof_buf_free(data)
	if size == 0 || data == nil {
		return nil, nil
	}
	out := make([]byte, int(size))
	copy(out, unsafe.Slice((*byte)(data), int(size)))
	return out, nil
}

// Stats returns the library's counters since Open.
func (p *Profiler) Stats() (Stats, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.p == nil {
		return Stats{}, libError("otelprof_get_stats", C.OTELPROF_ERR_STATE)
	}
	var st C.struct_otelprof_stats
	st.sz = C.size_t(unsafe.Sizeof(st))
	if rc := C.otelprof_get_stats(p.p, &st); rc != 0 {
		return Stats{}, libError("otelprof_get_stats", int(rc))
	}
	s := Stats{
		Samples:          uint64(st.samples),
		Lost:             uint64(st.lost),
		Dropped:          uint64(st.dropped),
		Collected:        uint64(st.collected),
		Processes:        uint64(st.processes),
		KernelFrames:     uint64(st.kernel_frames),
		UserFrames:       uint64(st.user_frames),
		Unsymbolized:     uint64(st.unsymbolized),
		UnwindTableBytes: uint64(st.unwind_table_bytes),
		UnwindErrors:     map[string]uint64{},
		UnwindProcsFull:  uint64(st.unwind_procs_full),
		UnwindTablesFull: uint64(st.unwind_tables_full),
		OffCPUIntervals:  uint64(st.off_cpu_intervals),
		OffCPUUnpaired:   uint64(st.off_cpu_unpaired),
		ProbIntervals:    uint64(st.prob_intervals),
		ProbIntervalsOn:  uint64(st.prob_intervals_on),
		Binaries:         uint64(st.binaries),

		SymbolizeBacklogBytes: uint64(st.symbolize_backlog_bytes),
		SymbolizeBacklog:      uint64(st.symbolize_backlog),
		SamplesParked:         uint64(st.samples_parked),
		FramesDWARFDeferred:   uint64(st.frames_dwarf_deferred),
	}
	for i := 1; i < C.OTELPROF_UNWIND_ERROR_MAX; i++ {
		if n := uint64(st.unwind_errors[i]); n != 0 {
			s.UnwindErrors[C.GoString(C.otelprof_unwind_error_name(C.int(i)))] = n
		}
	}
	return s, nil
}

// Close stops sampling if needed, unloads the BPF programs and frees the handle. Samples not
// collected are discarded. Calling it twice is harmless.
func (p *Profiler) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.p == nil {
		return
	}
	C.otelprof_close(p.p)
	p.p = nil
	runtime.SetFinalizer(p, nil)
}

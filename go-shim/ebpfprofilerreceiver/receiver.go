package ebpfprofilerreceiver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer/xconsumer"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/receiver"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/otelprof/otelprof/go-shim/internal/otelprof"
)

// profilesReceiver owns one library handle and one goroutine: every reporter_interval it
// collects the samples gathered so far (already aggregated in C), decodes them with pdata and
// hands them to the next consumer. No Go code runs per sample.
type profilesReceiver struct {
	cfg  *Config
	set  receiver.Settings
	next xconsumer.Profiles
	open openFunc

	prof   profiler      // nil until Start succeeds, and when error_mode: ignore swallowed a failure
	stop   chan struct{} // closed by Shutdown to end the collect loop
	done   chan struct{} // closed by the collect loop when it returns
	cancel context.CancelFunc
	once   sync.Once

	// Counters, also logged at shutdown.
	reports         atomic.Uint64 // profiles batches delivered to the next consumer
	records         atomic.Uint64 // sample records in those batches (one record counts 1+ samples)
	samples         atomic.Uint64 // CPU samples in those batches
	consumeErrors   atomic.Uint64 // batches the next consumer refused (dropped)
	samplesRefused  atomic.Uint64 // CPU samples in the refused batches
	blockedWarnings atomic.Uint64 // warnings about a next consumer that did not return
	collectErrors   atomic.Uint64 // failed otelprof_collect calls (samples kept for the next)
	decodeErrors    atomic.Uint64 // library payloads pdata could not decode (dropped)

	// Library counters at the previous report (touched by the collect loop, then by shutdown).
	lastLost, lastDropped uint64

	// The library's messages go to libLogger. While Start opens the library, the last error
	// message is kept: it says why a failure happened (which capability is missing, which
	// option is wrong), and the error returned to the collector carries it.
	libLogger   *zap.Logger
	starting    atomic.Bool
	startMu     sync.Mutex
	startDetail string

	// shutdownGrace is how long Shutdown waits for a blocked next consumer (see the const).
	shutdownGrace time.Duration

	tel         *telemetry    // nil until Start
	monitorDone chan struct{} // closed by the telemetry monitor when it returns
}

func newReceiver(set receiver.Settings, cfg *Config, next xconsumer.Profiles, open openFunc) *profilesReceiver {
	return &profilesReceiver{cfg: cfg, set: set, next: next, open: open, shutdownGrace: shutdownGrace}
}

// Start loads the BPF programs, attaches them and starts the collect loop.
func (r *profilesReceiver) Start(_ context.Context, _ component.Host) error {
	logger := r.set.Logger
	// Library messages come through a cgo callback: a Go stack trace would say nothing.
	r.libLogger = logger.WithOptions(zap.AddStacktrace(zapcore.FatalLevel)).
		With(zap.String("source", "libotelprof"))
	maxLevel := otelprof.LevelInfo
	// bpf_verifier_log_level: the verifier's log of a refused program is a debug message
	if r.cfg.VerboseMode || r.cfg.BPFVerifierLogLevel > 0 {
		maxLevel = otelprof.LevelDebug
	}
	tel, err := newTelemetry(r.set)
	if err != nil {
		return fmt.Errorf("cannot set up the receiver's telemetry: %w", err)
	}
	r.tel = tel
	r.cfg.Upstream.logDropin(logger)
	r.starting.Store(true)
	otelprof.SetLogger(r.libLog, maxLevel)

	prof, err := r.open(r.cfg.options())
	if err == nil {
		if err = prof.Start(); err != nil {
			prof.Close()
		}
	}
	r.starting.Store(false)
	if err != nil {
		r.startMu.Lock()
		err = explainStartError(err, r.startDetail)
		r.startMu.Unlock()
		if r.cfg.ErrorMode == ErrorModeIgnore {
			logger.Error("profiling disabled (error_mode: ignore)", zap.Error(err))
			return nil
		}
		return err
	}
	r.prof = prof
	logger.Info("eBPF profiler started",
		zap.Int("samples_per_second", r.cfg.SamplesPerSecond),
		zap.Duration("reporter_interval", r.cfg.ReporterInterval),
		zap.Ints("pids", r.cfg.Pids),
		zap.String("library_version", otelprof.Version()))

	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	r.stop = make(chan struct{})
	r.done = make(chan struct{})
	r.monitorDone = make(chan struct{})
	go func() {
		defer close(r.monitorDone)
		r.tel.monitor(prof, r.cfg.MonitorInterval, r.stop)
	}()
	go r.collectLoop(ctx)
	return nil
}

// libLog receives the library's (and libbpf's) messages, from any thread.
func (r *profilesReceiver) libLog(level otelprof.Level, msg string) {
	switch level {
	case otelprof.LevelError:
		if r.starting.Load() {
			r.startMu.Lock()
			r.startDetail = msg
			r.startMu.Unlock()
		}
		r.libLogger.Error(msg)
	case otelprof.LevelWarn:
		r.libLogger.Warn(msg)
	case otelprof.LevelInfo:
		r.libLogger.Info(msg)
	default:
		r.libLogger.Debug(msg)
	}
}

func (r *profilesReceiver) collectLoop(ctx context.Context) {
	defer close(r.done)
	// reporter_jitter: each wait varies by up to ± that fraction of reporter_interval
	timer := time.NewTimer(jittered(r.cfg.ReporterInterval, r.cfg.ReporterJitter))
	defer timer.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-timer.C:
			r.report(ctx)
			timer.Reset(jittered(r.cfg.ReporterInterval, r.cfg.ReporterJitter))
		}
	}
}

// privilegeHint is how to give the collector the capabilities the library names.
const privilegeHint = "; give them to the collector process (systemd AmbientCapabilities=, " +
	"`setcap` on its binary, or Kubernetes securityContext.capabilities.add), " +
	"or set error_mode: ignore to run the collector without this receiver"

// explainStartError wraps a failed open or start. detail is the library's last error message
// logged meanwhile (it says which capability or option); it replaces the generic strerror
// text, and a missing privilege gets the collector's ways to grant it.
func explainStartError(err error, detail string) error {
	var le *otelprof.Error
	if errors.As(err, &le) {
		if detail != "" {
			le.Detail = detail
		}
		if errors.Is(err, syscall.EPERM) && strings.Contains(le.Error(), "CAP_") {
			return fmt.Errorf("cannot start the eBPF profiler: %w%s", err, privilegeHint)
		}
	}
	return fmt.Errorf("cannot start the eBPF profiler: %w", err)
}

// report collects, decodes and delivers one batch. Errors are logged and counted; the
// collector keeps running.
func (r *profilesReceiver) report(ctx context.Context) {
	r.checkLoss()
	buf, err := r.prof.CollectOTLP()
	if err != nil {
		r.collectErrors.Add(1)
		r.set.Logger.Warn("cannot collect profiles; samples are kept for the next report",
			zap.Error(err))
		return
	}
	pd, err := decodeProfiles(buf)
	if err != nil {
		r.decodeErrors.Add(1)
		r.set.Logger.Error("cannot decode the library's OTLP payload; report dropped",
			zap.Int("bytes", len(buf)), zap.Error(err))
		return
	}
	n := pd.SampleCount()
	if n == 0 {
		return
	}
	if r.cfg.ResourceAttributesOnSamples {
		if err := resourceToSamples(pd); err != nil {
			r.decodeErrors.Add(1)
			r.set.Logger.Error("cannot move resource attributes onto samples; report dropped",
				zap.Error(err))
			return
		}
	}
	samples := sampleCount(pd)
	opCtx := r.tel.obs.StartProfilesOp(ctx)
	err = r.deliver(opCtx, pd, samples)
	r.tel.obs.EndProfilesOp(opCtx, "otlp", n, err)
	if err != nil {
		r.tel.refused.Add(ctx, int64(samples))
		r.consumeErrors.Add(1)
		total := r.samplesRefused.Add(samples)
		// An expected condition under back-pressure (exporter queue full, memory_limiter):
		// the counts matter, a Go stack trace does not.
		r.set.Logger.WithOptions(zap.AddStacktrace(zapcore.FatalLevel)).Error(
			"next consumer refused profiles; report dropped",
			zap.Uint64("samples", samples), zap.Int("sample_records", n),
			zap.Uint64("samples_dropped_total", total),
			zap.Uint64("reports_dropped_total", r.consumeErrors.Load()), zap.Error(err))
		return
	}
	r.tel.delivered.Add(ctx, int64(samples))
	r.reports.Add(1)
	r.records.Add(uint64(n))
	r.samples.Add(samples)
}

// sampleCount is the number of samples in a batch: the library aggregates identical stacks
// of a thread into one record whose value is their count. In a profile whose values are not
// counts (off_cpu/nanoseconds) each event (timestamp) is one sample.
func sampleCount(pd pprofile.Profiles) uint64 {
	var n uint64
	strs := pd.Dictionary().StringTable()
	for _, rp := range pd.ResourceProfiles().All() {
		for _, sp := range rp.ScopeProfiles().All() {
			for _, prof := range sp.Profiles().All() {
				counts := true
				if i := int(prof.SampleType().UnitStrindex()); i > 0 && i < strs.Len() {
					counts = strs.At(i) == "count"
				}
				for _, smp := range prof.Samples().All() {
					if counts {
						n += sampleWeight(smp)
					} else {
						n += uint64(max(smp.TimestampsUnixNano().Len(), 1))
					}
				}
			}
		}
	}
	return n
}

// sampleWeight is the number of CPU samples one record stands for: the sum of its values,
// or its number of timestamps when it has no values.
func sampleWeight(smp pprofile.Sample) uint64 {
	var n uint64
	for _, v := range smp.Values().All() {
		if v > 0 {
			n += uint64(v)
		}
	}
	if n == 0 {
		n = uint64(smp.TimestampsUnixNano().Len())
	}
	return n
}

// deliver hands a batch to the next consumer. A consumer may block: an exporter whose
// sending_queue is full with block_on_overflow, or one without a queue retrying a gateway
// that is away. The collect loop then waits, and the library keeps the samples taken
// meanwhile (bounded: beyond its limit it drops and counts them). The wait is not silent: a
// warning after one reporter_interval, then each time the wait has doubled, says how many
// samples are held and dropped so far.
func (r *profilesReceiver) deliver(ctx context.Context, pd pprofile.Profiles, samples uint64) error {
	returned := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		r.watchBlocked(returned, samples)
	}()
	err := r.next.ConsumeProfiles(ctx, pd)
	close(returned)
	<-watched
	return err
}

// maxBlockedWarnEvery caps the doubling of the blocked-consumer warnings.
const maxBlockedWarnEvery = 5 * time.Minute

func (r *profilesReceiver) watchBlocked(returned <-chan struct{}, samples uint64) {
	start := time.Now()
	wait := r.cfg.ReporterInterval
	warned := false
	for {
		t := time.NewTimer(wait)
		select {
		case <-returned:
			t.Stop()
			if warned {
				r.set.Logger.Info("next consumer accepted the report it was blocked on",
					zap.Duration("blocked_for", time.Since(start).Round(time.Millisecond)))
			}
			return
		case <-t.C:
		}
		warned = true
		r.blockedWarnings.Add(1)
		fields := []zap.Field{
			zap.Duration("blocked_for", time.Since(start).Round(time.Millisecond)),
			zap.Uint64("samples_in_report", samples),
		}
		if st, err := r.prof.Stats(); err == nil {
			fields = append(fields, zap.Uint64("samples_held", st.Samples-st.Collected),
				zap.Uint64("dropped_total", st.Dropped))
		}
		r.set.Logger.Warn("next consumer has not returned (exporter queue full or blocked?); "+
			"samples taken meanwhile are held by the library and sent once it returns", fields...)
		wait = min(2*wait, maxBlockedWarnEvery)
	}
}

// checkLoss warns, once per report, when samples were lost since the previous one: the
// kernel found the ring buffer full (a bigger ring_buffer_bytes helps) or the library dropped
// them to stay within its memory bounds.
func (r *profilesReceiver) checkLoss() {
	st, err := r.prof.Stats()
	if err != nil {
		return
	}
	if d := st.Lost - r.lastLost; d > 0 {
		r.set.Logger.Warn("samples lost: the kernel ring buffer was full; raise ring_buffer_bytes",
			zap.Uint64("lost", d), zap.Uint64("lost_total", st.Lost))
	}
	if d := st.Dropped - r.lastDropped; d > 0 {
		r.set.Logger.Warn("samples dropped by the library to bound its memory",
			zap.Uint64("dropped", d), zap.Uint64("dropped_total", st.Dropped))
	}
	r.lastLost, r.lastDropped = st.Lost, st.Dropped
}

// decodeProfiles turns an ExportProfilesServiceRequest into pdata. pprofile.ProtoUnmarshaler
// is the decoder the otlp receiver uses too (pprofileotlp.ExportRequest delegates to it): it
// keeps plain attribute keys and resolves *_strindex references (TestDecodeResourceAttributes).
func decodeProfiles(buf []byte) (pprofile.Profiles, error) {
	var u pprofile.ProtoUnmarshaler
	return u.UnmarshalProfiles(buf)
}

// shutdownGrace bounds how long Shutdown waits for a next consumer that does not return (an
// exporter blocked on a full queue towards a gateway that is away). The collector passes no
// deadline: without one, SIGTERM would wait for the exporter to give up (retry_on_failure's
// max_elapsed_time, minutes) and an orchestrator would kill the collector first.
const shutdownGrace = 5 * time.Second

// Shutdown stops sampling, delivers what was gathered since the last report and releases the
// library. It returns once the final batch has been handed to the next consumer, or refused,
// or shutdownGrace (or the caller's earlier deadline) has passed with the consumer blocked -
// the batches given up are counted and logged as refused.
func (r *profilesReceiver) Shutdown(ctx context.Context) error {
	if r.prof == nil {
		return nil
	}
	var err error
	r.once.Do(func() { err = r.shutdown(ctx) })
	return err
}

func (r *profilesReceiver) shutdown(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, r.shutdownGrace)
	defer cancel()
	close(r.stop)
	select {
	case <-r.done:
	case <-ctx.Done():
		// A consumer is blocked in the loop: abandon it rather than hang the collector.
		r.cancel()
		<-r.done
	}
	var errs []error
	if err := r.prof.Stop(); err != nil {
		errs = append(errs, err)
	}
	// The final flush uses the caller's context: its deadline bounds the delivery.
	r.report(ctx)
	r.cancel()

	fields := []zap.Field{
		zap.Uint64("reports", r.reports.Load()),
		zap.Uint64("sample_records_delivered", r.records.Load()),
		zap.Uint64("samples_delivered", r.samples.Load()),
		zap.Uint64("consume_errors", r.consumeErrors.Load()),
		zap.Uint64("samples_refused", r.samplesRefused.Load()),
		zap.Uint64("blocked_warnings", r.blockedWarnings.Load()),
		zap.Uint64("collect_errors", r.collectErrors.Load()),
		zap.Uint64("decode_errors", r.decodeErrors.Load()),
	}
	if st, err := r.prof.Stats(); err == nil {
		fields = append(fields, zap.Uint64("samples", st.Samples), zap.Uint64("lost", st.Lost),
			zap.Uint64("dropped", st.Dropped), zap.Uint64("unsymbolized_frames", st.Unsymbolized),
			zap.Uint64("unwind_procs_full", st.UnwindProcsFull),
			zap.Uint64("unwind_tables_full", st.UnwindTablesFull),
			zap.Uint64("symbolize_backlog", st.SymbolizeBacklog),
			zap.Uint64("samples_parked", st.SamplesParked),
			zap.Uint64("frames_dwarf_deferred", st.FramesDWARFDeferred))
	}
	r.set.Logger.Info("eBPF profiler stopped", fields...)
	<-r.monitorDone
	r.tel.close()
	r.prof.Close()
	return errors.Join(errs...)
}

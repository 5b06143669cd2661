package ebpfprofilerreceiver

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
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
	reports       atomic.Uint64 // profiles batches delivered to the next consumer
	records       atomic.Uint64 // sample records in those batches (one record counts 1+ samples)
	consumeErrors atomic.Uint64 // batches the next consumer refused (dropped)
	collectErrors atomic.Uint64 // failed otelprof_collect calls (samples kept for the next)
	decodeErrors  atomic.Uint64 // library payloads pdata could not decode (dropped)

	// Library counters at the previous report (touched by the collect loop, then by shutdown).
	lastLost, lastDropped uint64
}

func newReceiver(set receiver.Settings, cfg *Config, next xconsumer.Profiles, open openFunc) *profilesReceiver {
	return &profilesReceiver{cfg: cfg, set: set, next: next, open: open}
}

// Start loads the BPF programs, attaches them and starts the collect loop.
func (r *profilesReceiver) Start(_ context.Context, _ component.Host) error {
	logger := r.set.Logger
	// Library messages come through a cgo callback: a Go stack trace would say nothing.
	libLogger := logger.WithOptions(zap.AddStacktrace(zapcore.FatalLevel)).
		With(zap.String("source", "libotelprof"))
	maxLevel := otelprof.LevelInfo
	if r.cfg.VerboseMode {
		maxLevel = otelprof.LevelDebug
	}
	otelprof.SetLogger(func(level otelprof.Level, msg string) {
		switch level {
		case otelprof.LevelError:
			libLogger.Error(msg)
		case otelprof.LevelWarn:
			libLogger.Warn(msg)
		case otelprof.LevelInfo:
			libLogger.Info(msg)
		default:
			libLogger.Debug(msg)
		}
	}, maxLevel)

	prof, err := r.open(r.cfg.options())
	if err == nil {
		if err = prof.Start(); err != nil {
			prof.Close()
		}
	}
	if err != nil {
		err = fmt.Errorf("cannot start the eBPF profiler: %w", err)
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
	go r.collectLoop(ctx)
	return nil
}

func (r *profilesReceiver) collectLoop(ctx context.Context) {
	defer close(r.done)
	ticker := time.NewTicker(r.cfg.ReporterInterval)
	defer ticker.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-ticker.C:
			r.report(ctx)
		}
	}
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
	if err := r.next.ConsumeProfiles(ctx, pd); err != nil {
		r.consumeErrors.Add(1)
		r.set.Logger.Error("next consumer refused profiles; report dropped",
			zap.Int("sample_records", n), zap.Error(err))
		return
	}
	r.reports.Add(1)
	r.records.Add(uint64(n))
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

// Shutdown stops sampling, delivers what was gathered since the last report and releases the
// library. It returns once the final batch has been handed to the next consumer.
func (r *profilesReceiver) Shutdown(ctx context.Context) error {
	if r.prof == nil {
		return nil
	}
	var err error
	r.once.Do(func() { err = r.shutdown(ctx) })
	return err
}

func (r *profilesReceiver) shutdown(ctx context.Context) error {
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
		zap.Uint64("consume_errors", r.consumeErrors.Load()),
		zap.Uint64("collect_errors", r.collectErrors.Load()),
		zap.Uint64("decode_errors", r.decodeErrors.Load()),
	}
	if st, err := r.prof.Stats(); err == nil {
		fields = append(fields, zap.Uint64("samples", st.Samples), zap.Uint64("lost", st.Lost),
			zap.Uint64("dropped", st.Dropped), zap.Uint64("unsymbolized_frames", st.Unsymbolized),
			zap.Uint64("unwind_procs_full", st.UnwindProcsFull),
			zap.Uint64("unwind_tables_full", st.UnwindTablesFull))
	}
	r.set.Logger.Info("eBPF profiler stopped", fields...)
	r.prof.Close()
	return errors.Join(errs...)
}

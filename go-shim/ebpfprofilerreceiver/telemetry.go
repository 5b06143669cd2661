package ebpfprofilerreceiver

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receiverhelper"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/otelprof/otelprof/go-shim/internal/otelprof"
)

// metricPrefix names the receiver's own metrics on the collector's telemetry (the
// receiverhelper's otelcol_receiver_* metrics are the conventional ones beside them).
const metricPrefix = "otelcol_ebpfprofiler_"

// telemetry is the receiver's telemetry through the collector's own pipeline
// (service::telemetry::metrics): the receiverhelper's accepted/refused/failed profile samples
// per report, and the library's counters, read every monitor_interval, as observable
// instruments. README.md, "Receiver telemetry", lists them.
type telemetry struct {
	obs *receiverhelper.ObsReport
	reg metric.Registration

	delivered metric.Int64Counter // CPU samples (weights) accepted by the next consumer
	refused   metric.Int64Counter // CPU samples in reports the next consumer refused

	mu   sync.Mutex
	st   otelprof.Stats
	have bool
}

func newTelemetry(set receiver.Settings) (*telemetry, error) {
	obs, err := receiverhelper.NewObsReport(receiverhelper.ObsReportSettings{
		ReceiverID:             set.ID,
		Transport:              "ebpf",
		ReceiverCreateSettings: set,
	})
	if err != nil {
		return nil, err
	}
	t := &telemetry{obs: obs}
	m := set.TelemetrySettings.MeterProvider.Meter(
		"github.com/otelprof/otelprof/go-shim/ebpfprofilerreceiver")
	var errs []error
	counter := func(name, unit, desc string) metric.Int64ObservableCounter {
		c, err := m.Int64ObservableCounter(metricPrefix+name, metric.WithUnit(unit),
			metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	gauge := func(name, unit, desc string) metric.Int64ObservableGauge {
		g, err := m.Int64ObservableGauge(metricPrefix+name, metric.WithUnit(unit),
			metric.WithDescription(desc))
		errs = append(errs, err)
		return g
	}
	t.delivered, err = m.Int64Counter(metricPrefix+"samples_delivered", metric.WithUnit("{sample}"),
		metric.WithDescription("CPU samples in reports the next consumer accepted (a record "+
			"of identical stacks counts its number of samples)"))
	errs = append(errs, err)
	t.refused, err = m.Int64Counter(metricPrefix+"samples_refused", metric.WithUnit("{sample}"),
		metric.WithDescription("CPU samples in reports the next consumer refused (dropped)"))
	errs = append(errs, err)

	taken := counter("samples_taken", "{sample}", "samples the kernel sent (on- and off-CPU)")
	lost := counter("samples_lost", "{sample}", "samples lost because the ring buffer was full")
	dropped := counter("samples_dropped", "{sample}",
		"samples the library discarded to bound its memory")
	unwindErr := counter("unwind_errors", "{stack}",
		"stacks whose walk ended early, by reason")
	mapsFull := counter("unwind_maps_full", "{event}",
		"times a process or an unwind table found no room in the BPF maps, by map")
	frames := counter("frames", "{frame}", "frames recorded, by kind (kernel, user)")
	unsym := counter("frames_unsymbolized", "{frame}", "frames left as mapping + address")
	deferred := counter("frames_dwarf_deferred", "{frame}",
		"frames named from symbol tables while their file's compressed DWARF waits")
	offcpu := counter("off_cpu_intervals", "{interval}", "off-CPU intervals recorded")
	prob := counter("probabilistic_intervals", "{interval}",
		"probabilistic profiling intervals begun, by sampling (on, off)")
	procs := gauge("processes", "{process}", "processes tracked")
	bins := gauge("binaries", "{binary}", "binaries (executables, libraries) open in the cache")
	tables := gauge("unwind_table_bytes", "By", "bytes of unwind tables loaded in BPF maps")
	backlog := gauge("symbolize_backlog_bytes", "By",
		"bytes of records queued for the symbolizer, not handled yet")
	pending := gauge("samples_pending", "{sample}",
		"samples taken and not yet handed to a report")
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	kind := func(k, v string) metric.ObserveOption {
		return metric.WithAttributes(attribute.String(k, v))
	}
	t.reg, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		t.mu.Lock()
		st, have := t.st, t.have
		t.mu.Unlock()
		if !have {
			return nil
		}
		i := func(v uint64) int64 { return int64(v) }
		o.ObserveInt64(taken, i(st.Samples))
		o.ObserveInt64(lost, i(st.Lost))
		o.ObserveInt64(dropped, i(st.Dropped))
		for reason, n := range st.UnwindErrors {
			o.ObserveInt64(unwindErr, i(n), kind("reason", reason))
		}
		o.ObserveInt64(mapsFull, i(st.UnwindProcsFull), kind("map", "procs"))
		o.ObserveInt64(mapsFull, i(st.UnwindTablesFull), kind("map", "tables"))
		o.ObserveInt64(frames, i(st.KernelFrames), kind("kind", "kernel"))
		o.ObserveInt64(frames, i(st.UserFrames), kind("kind", "user"))
		o.ObserveInt64(unsym, i(st.Unsymbolized))
		o.ObserveInt64(deferred, i(st.FramesDWARFDeferred))
		o.ObserveInt64(offcpu, i(st.OffCPUIntervals))
		o.ObserveInt64(prob, i(st.ProbIntervalsOn), kind("sampling", "on"))
		o.ObserveInt64(prob, i(st.ProbIntervals-st.ProbIntervalsOn), kind("sampling", "off"))
		o.ObserveInt64(procs, i(st.Processes))
		o.ObserveInt64(bins, i(st.Binaries))
		o.ObserveInt64(tables, i(st.UnwindTableBytes))
		o.ObserveInt64(backlog, i(st.SymbolizeBacklogBytes))
		if st.Samples >= st.Collected {
			o.ObserveInt64(pending, i(st.Samples-st.Collected))
		}
		return nil
	}, taken, lost, dropped, unwindErr, mapsFull, frames, unsym, deferred, offcpu, prob, procs,
		bins, tables, backlog, pending)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// update stores the library's counters for the next observation.
func (t *telemetry) update(st otelprof.Stats) {
	t.mu.Lock()
	t.st, t.have = st, true
	t.mu.Unlock()
}

// monitor refreshes the counters every interval until stop is closed.
func (t *telemetry) monitor(prof profiler, interval time.Duration, stop <-chan struct{}) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		if st, err := prof.Stats(); err == nil {
			t.update(st)
		}
		select {
		case <-stop:
			return
		case <-tick.C:
		}
	}
}

func (t *telemetry) close() {
	if t.reg != nil {
		_ = t.reg.Unregister()
	}
}

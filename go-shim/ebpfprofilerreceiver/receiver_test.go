package ebpfprofilerreceiver

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelprof/otelprof/go-shim/internal/otelprof"
)

// fakeProfiler stands in for libotelprof: every Collect returns the batches queued so far.
type fakeProfiler struct {
	mu         sync.Mutex
	calls      []string
	pending    [][]byte // payloads handed out by the next Collect, in order
	collectErr error
	startErr   error
	closed     bool
	stats      otelprof.Stats
}

func (f *fakeProfiler) record(c string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, c)
}

func (f *fakeProfiler) Start() error { f.record("start"); return f.startErr }
func (f *fakeProfiler) Stop() error  { f.record("stop"); return nil }
func (f *fakeProfiler) Close()       { f.record("close"); f.mu.Lock(); f.closed = true; f.mu.Unlock() }
func (f *fakeProfiler) Stats() (otelprof.Stats, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats, nil
}

func (f *fakeProfiler) CollectOTLP() ([]byte, error) {
	f.record("collect")
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.collectErr != nil {
		return nil, f.collectErr
	}
	if len(f.pending) == 0 {
		return encode(makeProfiles(1, 0)), nil // empty batch, as the library sends it
	}
	buf := f.pending[0]
	f.pending = f.pending[1:]
	return buf, nil
}

func (f *fakeProfiler) queue(buf []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pending = append(f.pending, buf)
}

func (f *fakeProfiler) callList() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(f.calls, ",")
}

func newTestReceiver(t *testing.T, cfg *Config, sinkErr error, fake *fakeProfiler, openErr error) (*profilesReceiver, *consumertest.ProfilesSink, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zap.DebugLevel)
	set := receivertest.NewNopSettings(NewFactory().Type())
	set.Logger = zap.New(core)
	sink := new(consumertest.ProfilesSink)
	open := func(otelprof.Options) (profiler, error) {
		if openErr != nil {
			return nil, openErr
		}
		return fake, nil
	}
	if sinkErr != nil {
		return newReceiver(set, cfg, consumertest.NewErr(sinkErr), open), sink, logs
	}
	return newReceiver(set, cfg, sink, open), sink, logs
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestReportsEveryInterval(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.ReporterInterval = 100 * time.Millisecond
	fake := &fakeProfiler{}
	fake.queue(encode(makeProfiles(4242, 3, "leaf", "main")))
	fake.queue(encode(makeProfiles(4242, 2, "leaf", "main")))
	r, sink, _ := newTestReceiver(t, cfg, nil, fake, nil)
	if err := r.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "two reports", func() bool { return sink.SampleCount() == 5 })
	if err := r.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Empty collects are not forwarded.
	if got := len(sink.AllProfiles()); got != 2 {
		t.Errorf("%d batches delivered, want 2", got)
	}
	s := summarize(sink.AllProfiles()[0])
	if s.pids[4242] != 3 || s.functions[4242]["leaf"] != 3 || s.functions[4242]["main"] != 3 {
		t.Errorf("first batch: %+v", s)
	}
	if !fake.closed {
		t.Error("library handle not closed by Shutdown")
	}
}

// Shutdown must stop sampling first, then deliver what was gathered since the last report,
// and only then return.
func TestShutdownDeliversRemainder(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.ReporterInterval = time.Hour
	fake := &fakeProfiler{}
	r, sink, _ := newTestReceiver(t, cfg, nil, fake, nil)
	if err := r.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	fake.queue(encode(makeProfiles(99, 11, "lastWords")))
	if sink.SampleCount() != 0 {
		t.Fatal("delivered before the interval")
	}
	if err := r.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := sink.SampleCount(); got != 11 {
		t.Fatalf("shutdown delivered %d samples, want 11", got)
	}
	if got := fake.callList(); got != "start,stop,collect,close" {
		t.Errorf("library calls %q, want start,stop,collect,close", got)
	}
	// A second Shutdown is a no-op.
	if err := r.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestConsumerErrorsAreCountedNotFatal(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.ReporterInterval = 100 * time.Millisecond
	fake := &fakeProfiler{}
	for i := 1; i <= 3; i++ {
		fake.queue(encode(makeProfiles(5, i, "f")))
	}
	r, _, logs := newTestReceiver(t, cfg, errors.New("exporter queue is full"), fake, nil)
	if err := r.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "two refused reports", func() bool { return r.consumeErrors.Load() >= 2 })
	if err := r.Shutdown(context.Background()); err != nil {
		t.Fatalf("shutdown after consumer errors: %v", err)
	}
	if got := r.consumeErrors.Load(); got != 3 {
		t.Errorf("consume errors %d, want 3", got)
	}
	// Each refusal says how many samples it dropped and how many so far; the total is in
	// the line Shutdown logs.
	refused := logs.FilterMessageSnippet("next consumer refused").All()
	if len(refused) != 3 {
		t.Fatalf("%d refusal log lines, want 3", len(refused))
	}
	for i, e := range refused {
		f := e.ContextMap()
		want, wantTotal := uint64(i+1), uint64((i+1)*(i+2)/2)
		if f["samples"] != want || f["samples_dropped_total"] != wantTotal {
			t.Errorf("refusal %d: samples=%v samples_dropped_total=%v, want %d and %d",
				i+1, f["samples"], f["samples_dropped_total"], want, wantTotal)
		}
		if e.Stack != "" {
			t.Errorf("refusal %d carries a Go stack trace", i+1)
		}
	}
	stopped := logs.FilterMessage("eBPF profiler stopped").All()
	if len(stopped) != 1 || stopped[0].ContextMap()["samples_refused"] != uint64(6) {
		t.Errorf("stopped line %v, want samples_refused=6", stopped)
	}
}

// blockingConsumer blocks every ConsumeProfiles until release is closed (or the context
// ends), like an exporter whose sending_queue is full with block_on_overflow.
type blockingConsumer struct {
	consumertest.ProfilesSink
	release chan struct{}
	entered atomic.Int32
}

func (b *blockingConsumer) ConsumeProfiles(ctx context.Context, pd pprofile.Profiles) error {
	b.entered.Add(1)
	select {
	case <-b.release:
		return b.ProfilesSink.ConsumeProfiles(ctx, pd)
	case <-ctx.Done():
		return ctx.Err()
	}
}

func newBlockingReceiver(t *testing.T, cfg *Config, fake *fakeProfiler) (*profilesReceiver, *blockingConsumer, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zap.DebugLevel)
	set := receivertest.NewNopSettings(NewFactory().Type())
	set.Logger = zap.New(core)
	next := &blockingConsumer{release: make(chan struct{})}
	open := func(otelprof.Options) (profiler, error) { return fake, nil }
	return newReceiver(set, cfg, next, open), next, logs
}

// A next consumer that blocks stalls the collect loop - no batches pile up in Go; the
// library holds the samples - and is not silent: warnings at one interval, then each time
// the wait doubles, with the samples the library holds. Once it returns, the loop goes on.
func TestBlockedConsumerWarnsAndRecovers(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.ReporterInterval = 100 * time.Millisecond
	fake := &fakeProfiler{stats: otelprof.Stats{Samples: 500, Collected: 100, Dropped: 7}}
	fake.queue(encode(makeProfiles(5, 3, "f")))
	fake.queue(encode(makeProfiles(5, 4, "f")))
	r, next, logs := newBlockingReceiver(t, cfg, fake)
	if err := r.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "two blocked warnings", func() bool { return r.blockedWarnings.Load() >= 2 })
	collects := strings.Count(fake.callList(), "collect")
	time.Sleep(300 * time.Millisecond)
	if n := strings.Count(fake.callList(), "collect"); n != collects || next.entered.Load() != 1 {
		t.Fatalf("the loop went on while the consumer was blocked: %d collects, then %d; %d consume calls",
			collects, n, next.entered.Load())
	}
	warned := logs.FilterMessageSnippet("next consumer has not returned").All()
	f := warned[0].ContextMap()
	if f["samples_held"] != uint64(400) || f["dropped_total"] != uint64(7) || f["samples_in_report"] != uint64(3) {
		t.Errorf("blocked warning fields %v, want samples_held=400 dropped_total=7 samples_in_report=3", f)
	}
	// 100ms, 300ms, 700ms, ...: doubling, not one warning per interval.
	if len(warned) > 4 {
		t.Errorf("%d warnings within about a second of blocking", len(warned))
	}
	close(next.release)
	waitFor(t, "both batches delivered", func() bool { return next.SampleCount() == 7 })
	if logs.FilterMessageSnippet("accepted the report it was blocked on").Len() != 1 {
		t.Errorf("no log line when the consumer returned: %v", logs.All())
	}
	if err := r.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r.consumeErrors.Load() != 0 || r.samples.Load() != 7 {
		t.Errorf("consume errors %d, samples delivered %d; want 0 and 7", r.consumeErrors.Load(), r.samples.Load())
	}
}

// SIGTERM with a consumer that never returns: Shutdown gives up after its grace period
// instead of hanging the collector, and counts the report it abandoned and the final one as
// refused.
func TestShutdownWithBlockedConsumer(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.ReporterInterval = 100 * time.Millisecond
	fake := &fakeProfiler{}
	fake.queue(encode(makeProfiles(5, 3, "f")))
	r, next, logs := newBlockingReceiver(t, cfg, fake)
	r.shutdownGrace = 200 * time.Millisecond
	if err := r.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the consumer to block", func() bool { return next.entered.Load() == 1 })
	fake.queue(encode(makeProfiles(5, 4, "f"))) // taken after the block: the final flush's
	done := make(chan error, 1)
	go func() { done <- r.Shutdown(context.Background()) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Shutdown hangs on a blocked consumer")
	}
	if r.consumeErrors.Load() != 2 || r.samplesRefused.Load() != 7 {
		t.Errorf("consume errors %d, samples refused %d; want 2 and 7",
			r.consumeErrors.Load(), r.samplesRefused.Load())
	}
	if !fake.closed {
		t.Error("library handle not closed")
	}
	if n := logs.FilterMessageSnippet("next consumer refused").Len(); n != 2 {
		t.Errorf("%d refusal lines, want 2: %v", n, logs.All())
	}
}

// A failed open says why: the library's own message (here, which capabilities are missing)
// replaces the generic "operation not permitted", and the collector's ways to grant them
// follow.
func TestStartErrorCarriesLibraryMessage(t *testing.T) {
	const libMsg = "missing capabilities: CAP_BPF, CAP_PERFMON (run as root, or grant CAP_BPF, " +
		"CAP_PERFMON, CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH and CAP_SYSLOG)"
	core, logs := observer.New(zap.DebugLevel)
	set := receivertest.NewNopSettings(NewFactory().Type())
	set.Logger = zap.New(core)
	var r *profilesReceiver
	open := func(otelprof.Options) (profiler, error) {
		r.libLog(otelprof.LevelWarn, "an unrelated warning")
		r.libLog(otelprof.LevelError, libMsg)
		return nil, &otelprof.Error{Op: "otelprof_open", Code: int(syscall.EPERM), Msg: "operation not permitted"}
	}
	r = newReceiver(set, createDefaultConfig(), new(consumertest.ProfilesSink), open)
	err := r.Start(context.Background(), componenttest.NewNopHost())
	if err == nil {
		t.Fatal("Start succeeded")
	}
	t.Logf("start error: %v", err)
	for _, want := range []string{"cannot start the eBPF profiler: otelprof_open: " + libMsg,
		"AmbientCapabilities", "securityContext", "error_mode: ignore"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("start error lacks %q", want)
		}
	}
	if strings.Contains(err.Error(), "operation not permitted") {
		t.Errorf("generic strerror text kept next to the library's message")
	}
	if !errors.Is(err, syscall.EPERM) {
		t.Errorf("errors.Is(err, EPERM) is false")
	}
	if logs.FilterMessage(libMsg).Len() != 1 {
		t.Errorf("the library message is not in the log")
	}
	// Messages after Start are logged, not kept.
	r.libLog(otelprof.LevelError, "later")
	if r.startDetail != libMsg {
		t.Errorf("start detail %q changed after Start", r.startDetail)
	}
}

func TestCollectErrorKeepsRunning(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.ReporterInterval = 100 * time.Millisecond
	fake := &fakeProfiler{collectErr: errors.New("otelprof_collect: cannot allocate memory")}
	r, sink, _ := newTestReceiver(t, cfg, nil, fake, nil)
	if err := r.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a failed collect", func() bool { return r.collectErrors.Load() >= 1 })
	fake.mu.Lock()
	fake.collectErr = nil
	fake.mu.Unlock()
	fake.queue(encode(makeProfiles(5, 4, "f")))
	waitFor(t, "recovery", func() bool { return sink.SampleCount() == 4 })
	if err := r.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestGarbagePayloadIsDroppedAndLogged(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.ReporterInterval = 100 * time.Millisecond
	fake := &fakeProfiler{}
	fake.queue([]byte{0xff, 0xff, 0xff})
	r, sink, logs := newTestReceiver(t, cfg, nil, fake, nil)
	if err := r.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a decode error", func() bool { return r.decodeErrors.Load() == 1 })
	if err := r.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if sink.SampleCount() != 0 || logs.FilterMessageSnippet("cannot decode").Len() != 1 {
		t.Errorf("garbage not reported: %d samples, logs %v", sink.SampleCount(), logs.All())
	}
}

func TestErrorMode(t *testing.T) {
	openErr := &otelprof.Error{Op: "otelprof_open", Code: 1, Msg: "operation not permitted"}
	t.Run("propagate", func(t *testing.T) {
		r, _, _ := newTestReceiver(t, createDefaultConfig(), nil, nil, openErr)
		err := r.Start(context.Background(), componenttest.NewNopHost())
		if err == nil || !strings.Contains(err.Error(), "operation not permitted") ||
			!strings.Contains(err.Error(), "CAP_BPF") {
			t.Fatalf("Start: %v", err)
		}
		if err := r.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("ignore", func(t *testing.T) {
		cfg := createDefaultConfig()
		cfg.ErrorMode = ErrorModeIgnore
		r, _, logs := newTestReceiver(t, cfg, nil, nil, openErr)
		if err := r.Start(context.Background(), componenttest.NewNopHost()); err != nil {
			t.Fatalf("Start with error_mode ignore: %v", err)
		}
		if logs.FilterMessageSnippet("profiling disabled").Len() != 1 {
			t.Errorf("failure not logged: %v", logs.All())
		}
		if err := r.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("start fails", func(t *testing.T) {
		fake := &fakeProfiler{startErr: errors.New("otelprof_start: perf_event_open failed")}
		r, _, _ := newTestReceiver(t, createDefaultConfig(), nil, fake, nil)
		if err := r.Start(context.Background(), componenttest.NewNopHost()); err == nil {
			t.Fatal("Start succeeded")
		}
		if !fake.closed {
			t.Error("handle leaked after a failed start")
		}
	})
}

// Lost samples are what a user must act on (ring_buffer_bytes): each report warns about the
// samples lost since the previous one, and says nothing when none were.
func TestLostSamplesAreReported(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.ReporterInterval = time.Hour
	fake := &fakeProfiler{}
	r, _, logs := newTestReceiver(t, cfg, nil, fake, nil)
	if err := r.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	r.report(context.Background())
	fake.mu.Lock()
	fake.stats.Lost = 40
	fake.mu.Unlock()
	r.report(context.Background())
	r.report(context.Background())
	if err := r.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	warned := logs.FilterMessageSnippet("raise ring_buffer_bytes").All()
	if len(warned) != 1 {
		t.Fatalf("%d lost-sample warnings, want 1: %v", len(warned), logs.All())
	}
	if got := warned[0].ContextMap()["lost"]; got != uint64(40) {
		t.Errorf("warning says lost=%v, want 40", got)
	}
}

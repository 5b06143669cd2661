package ebpfprofilerreceiver

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
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
	for i := 0; i < 3; i++ {
		fake.queue(encode(makeProfiles(5, 1, "f")))
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
	if n := logs.FilterMessageSnippet("next consumer refused").Len(); n != 3 {
		t.Errorf("%d refusal log lines, want 3", n)
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

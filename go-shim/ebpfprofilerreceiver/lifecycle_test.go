package ebpfprofilerreceiver

import (
	"context"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.uber.org/zap/zaptest"
)

var busySink atomic.Uint64

// busyLoopForProfiler burns CPU on a locked OS thread until stop is closed; the lifecycle
// tests look for its name in the profiles.
//
//go:noinline
func busyLoopForProfiler(stop <-chan struct{}) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	x := uint64(1)
	for {
		for i := 0; i < 1<<16; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
		busySink.Store(x)
		select {
		case <-stop:
			return
		default:
		}
	}
}

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipping: loading BPF programs needs root (or CAP_BPF+CAP_PERFMON+CAP_SYS_PTRACE); run `make test` as root")
	}
}

func startReal(t *testing.T, cfg *Config) (*profilesReceiver, *consumertest.ProfilesSink) {
	t.Helper()
	f := NewFactory()
	set := receivertest.NewNopSettings(f.Type())
	set.Logger = zaptest.NewLogger(t)
	sink := new(consumertest.ProfilesSink)
	r, err := f.CreateProfiles(context.Background(), set, cfg, sink)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatalf("start: %v", err)
	}
	return r.(*profilesReceiver), sink
}

func summarizeAll(all []pprofile.Profiles) profileSummary {
	total := profileSummary{pids: map[int64]int{}, functions: map[int64]map[string]int{}}
	for _, pd := range all {
		s := summarize(pd)
		total.samples += s.samples
		for pid, n := range s.pids {
			total.pids[pid] += n
		}
		for pid, fns := range s.functions {
			if total.functions[pid] == nil {
				total.functions[pid] = map[string]int{}
			}
			for name, n := range fns {
				total.functions[pid][name] += n
			}
		}
	}
	return total
}

// The real library, restricted to this test process: reports arrive every interval, carry
// this process's pid as a resource attribute and show the busy loop by name.
func TestLifecyclePeriodicReports(t *testing.T) {
	requireRoot(t)
	stop := make(chan struct{})
	defer close(stop)
	go busyLoopForProfiler(stop)

	cfg := createDefaultConfig()
	cfg.SamplesPerSecond = 99
	cfg.ReporterInterval = 500 * time.Millisecond
	cfg.Pids = []int{os.Getpid()}
	r, sink := startReal(t, cfg)
	pid := int64(os.Getpid())
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) && summarizeAll(sink.AllProfiles()).pids[pid] < 50 {
		time.Sleep(100 * time.Millisecond)
	}
	batches := len(sink.AllProfiles())
	if err := r.Shutdown(context.Background()); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	s := summarizeAll(sink.AllProfiles())
	t.Logf("%d batches before shutdown, %d samples, pids %v, top functions %v",
		batches, s.samples, s.pids, s.topFunctions(pid, 8))
	if s.pids[pid] < 50 {
		t.Fatalf("%d samples with process.pid=%d, want >= 50 (99 Hz busy thread)", s.pids[pid], pid)
	}
	if batches < 2 {
		t.Errorf("only %d batches before shutdown with a 500ms reporter_interval", batches)
	}
	if got := s.functionsMatching(pid, "busyLoopForProfiler"); len(got) == 0 {
		t.Errorf("busyLoopForProfiler not in any stack of pid %d; top functions: %v",
			pid, s.topFunctions(pid, 10))
	}
	if len(s.pids) != 1 {
		t.Errorf("pids: [%d] leaked other processes: %v", pid, s.pids)
	}
}

// With a reporter interval longer than the test, everything the sink gets comes from the
// flush in Shutdown, which must happen before Shutdown returns.
func TestLifecycleShutdownDelivers(t *testing.T) {
	requireRoot(t)
	stop := make(chan struct{})
	go busyLoopForProfiler(stop)

	cfg := createDefaultConfig()
	cfg.SamplesPerSecond = 99
	cfg.ReporterInterval = time.Hour
	cfg.Pids = []int{os.Getpid()}
	r, sink := startReal(t, cfg)
	time.Sleep(1500 * time.Millisecond)
	close(stop)
	if n := sink.SampleCount(); n != 0 {
		t.Fatalf("%d samples delivered before the first interval", n)
	}
	if err := r.Shutdown(context.Background()); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	pid := int64(os.Getpid())
	s := summarizeAll(sink.AllProfiles())
	t.Logf("shutdown flush: %d samples, top functions %v", s.samples, s.topFunctions(pid, 8))
	// 1.5 s of one busy thread at 99 Hz is ~150 samples; allow for start-up and scheduling.
	if s.pids[pid] < 75 {
		t.Fatalf("shutdown delivered %d samples of pid %d, want >= 75", s.pids[pid], pid)
	}
	if got := s.functionsMatching(pid, "busyLoopForProfiler"); len(got) == 0 {
		t.Errorf("busyLoopForProfiler missing from the flushed samples; top: %v", s.topFunctions(pid, 10))
	}
}

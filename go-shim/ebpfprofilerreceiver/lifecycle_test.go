package ebpfprofilerreceiver

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelprof/otelprof/go-shim/internal/otelprof"
)

// busyC is the workload the lifecycle tests profile: a C program (go test strips its own
// binary, so Go functions of the test process have no names to find) whose hot function has
// a name the test looks for.
const busyC = `
#include <stdint.h>
#include <unistd.h>
volatile uint64_t sink;
__attribute__((noinline)) void otelprof_busy_leaf(void)
{
	uint64_t x = sink;
	for (int i = 0; i < 1000000; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	sink = x;
}
__attribute__((noinline)) void otelprof_busy_loop(void)
{
	for (;;)
		otelprof_busy_leaf();
}
int main(void)
{
	otelprof_busy_loop();
	return 0;
}
`

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipping: loading BPF programs needs root (or CAP_BPF+CAP_PERFMON+CAP_SYS_PTRACE); run `make test` as root")
	}
}

// startBusy compiles and starts the workload; it is killed when the test ends.
func startBusy(t *testing.T) int {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "busy.c")
	bin := filepath.Join(dir, "otelprof-busy")
	if err := os.WriteFile(src, []byte(busyC), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("gcc", "-O1", "-g", "-fno-omit-frame-pointer", "-mno-omit-leaf-frame-pointer",
		"-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("cannot build the workload (gcc comes with scripts/install-deps.sh): %v\n%s", err, out)
	}
	cmd := exec.Command(bin)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd.Process.Pid
}

func startReal(t *testing.T, cfg *Config) (*profilesReceiver, *consumertest.ProfilesSink, *observer.ObservedLogs) {
	t.Helper()
	f := NewFactory()
	set := receivertest.NewNopSettings(f.Type())
	core, logs := observer.New(zap.InfoLevel)
	set.Logger = zap.New(zapcore.NewTee(zaptest.NewLogger(t).Core(), core))
	sink := new(consumertest.ProfilesSink)
	r, err := f.CreateProfiles(context.Background(), set, cfg, sink)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		if errors.Is(err, otelprof.ErrUnsupported) {
			t.Skipf("skipping: %v", err)
		}
		t.Fatalf("start: %v", err)
	}
	return r.(*profilesReceiver), sink, logs
}

// libraryCounts returns the library's samples and dropped counters, which the receiver logs
// when it stops.
func libraryCounts(t *testing.T, logs *observer.ObservedLogs) (samples, dropped uint64) {
	t.Helper()
	entries := logs.FilterMessage("eBPF profiler stopped").All()
	if len(entries) != 1 {
		t.Fatalf("%d \"eBPF profiler stopped\" log entries, want 1", len(entries))
	}
	fields := entries[0].ContextMap()
	samples, _ = fields["samples"].(uint64)
	dropped, _ = fields["dropped"].(uint64)
	return samples, dropped
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

// The real library, restricted to the workload: reports arrive every interval, carry the
// workload's pid as a resource attribute and name its hot functions.
func TestLifecyclePeriodicReports(t *testing.T) {
	requireRoot(t)
	pid := startBusy(t)

	cfg := createDefaultConfig()
	cfg.SamplesPerSecond = 99
	cfg.ReporterInterval = 500 * time.Millisecond
	cfg.Pids = []int{pid}
	r, sink, logs := startReal(t, cfg)
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) && summarizeAll(sink.AllProfiles()).pids[int64(pid)] < 50 {
		time.Sleep(100 * time.Millisecond)
	}
	batches := len(sink.AllProfiles())
	if err := r.Shutdown(context.Background()); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	s := summarizeAll(sink.AllProfiles())
	t.Logf("%d batches before shutdown, %d samples, pids %v, top functions %v",
		batches, s.samples, s.pids, s.topFunctions(int64(pid), 8))
	if s.pids[int64(pid)] < 50 {
		t.Fatalf("%d samples with process.pid=%d, want >= 50 (99 Hz busy process)", s.pids[int64(pid)], pid)
	}
	if took, dropped := libraryCounts(t, logs); uint64(s.samples) != took-dropped {
		t.Errorf("the sink got %d samples, the library took %d and dropped %d", s.samples, took, dropped)
	}
	if batches < 2 {
		t.Errorf("only %d batches before shutdown with a 500ms reporter_interval", batches)
	}
	leaf, loop := s.functions[int64(pid)]["otelprof_busy_leaf"], s.functions[int64(pid)]["otelprof_busy_loop"]
	if leaf*2 < s.pids[int64(pid)] {
		t.Errorf("otelprof_busy_leaf on %d of %d samples, want most; top functions: %v",
			leaf, s.pids[int64(pid)], s.topFunctions(int64(pid), 10))
	}
	// The caller is the unwinder's business (tests/integration); here it is only reported.
	t.Logf("caller otelprof_busy_loop on %d samples", loop)
	if len(s.pids) != 1 {
		t.Errorf("pids: [%d] leaked other processes: %v", pid, s.pids)
	}
}

// With a reporter interval longer than the test, everything the sink gets comes from the
// flush in Shutdown, which must happen before Shutdown returns.
func TestLifecycleShutdownDelivers(t *testing.T) {
	requireRoot(t)
	pid := startBusy(t)

	cfg := createDefaultConfig()
	cfg.SamplesPerSecond = 99
	cfg.ReporterInterval = time.Hour
	cfg.Pids = []int{pid}
	r, sink, logs := startReal(t, cfg)
	time.Sleep(2 * time.Second)
	if n := sink.SampleCount(); n != 0 {
		t.Fatalf("%d samples delivered before the first interval", n)
	}
	if err := r.Shutdown(context.Background()); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	s := summarizeAll(sink.AllProfiles())
	t.Logf("shutdown flush: %d samples in %d batches, top functions %v", s.samples,
		len(sink.AllProfiles()), s.topFunctions(int64(pid), 8))
	// Every sample the library took of the workload (pids filter) reaches the sink, and
	// there are enough of them to mean something (2 s at 99 Hz is ~200 on an idle host).
	took, dropped := libraryCounts(t, logs)
	t.Logf("library took %d samples, dropped %d; the sink got %d", took, dropped, s.samples)
	if uint64(s.samples) != took-dropped {
		t.Errorf("shutdown delivered %d samples, the library took %d and dropped %d",
			s.samples, took, dropped)
	}
	if s.pids[int64(pid)] < 20 {
		t.Fatalf("shutdown delivered %d samples of pid %d, want >= 20", s.pids[int64(pid)], pid)
	}
	if s.functions[int64(pid)]["otelprof_busy_leaf"] == 0 {
		t.Errorf("otelprof_busy_leaf missing from the flushed samples; top: %v", s.topFunctions(int64(pid), 10))
	}
}

// The library's own messages reach the collector's logger, tagged source=libotelprof, without
// Go stack traces. Profiling a pid that does not exist fails in otelprof_open, which logs why
// (as does a missing privilege when not root): either way there is a message to see.
func TestLibraryLogReachesCollectorLogger(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.Pids = []int{1 << 30}
	f := NewFactory()
	set := receivertest.NewNopSettings(f.Type())
	core, logs := observer.New(zap.DebugLevel)
	// Like the collector's own logger: stack traces on errors.
	set.Logger = zap.New(core, zap.AddStacktrace(zapcore.ErrorLevel))
	r, err := f.CreateProfiles(context.Background(), set, cfg, new(consumertest.ProfilesSink))
	if err != nil {
		t.Fatal(err)
	}
	err = r.Start(context.Background(), componenttest.NewNopHost())
	if errors.Is(err, otelprof.ErrUnsupported) {
		t.Skipf("skipping: %v", err)
	}
	if err == nil {
		_ = r.Shutdown(context.Background())
		t.Fatal("profiling pid 1<<30 started")
	}
	t.Logf("start error: %v", err)
	var lib []observer.LoggedEntry
	for _, e := range logs.All() {
		if e.ContextMap()["source"] == "libotelprof" {
			lib = append(lib, e)
		}
	}
	if len(lib) == 0 {
		t.Fatalf("no library message in the collector log; entries: %v", logs.All())
	}
	for _, e := range lib {
		t.Logf("%s: %s", e.Level, e.Message)
		if e.Stack != "" {
			t.Errorf("library message %q carries a Go stack trace", e.Message)
		}
	}
}

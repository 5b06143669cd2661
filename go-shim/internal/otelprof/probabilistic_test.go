//go:build cgo && linux

package otelprof

import (
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// burn keeps one thread of this process on the CPU until stop is set.
func burn(stop *atomic.Bool) {
	runtime.LockOSThread()
	x := 0
	for !stop.Load() {
		x++
	}
	_ = x
}

// sampleRun profiles this process (one busy thread) for d and returns its samples and the
// library's counters.
func sampleRun(t *testing.T, opts Options, d time.Duration) Stats {
	t.Helper()
	opts.FrequencyHz = 499
	opts.PIDs = []int{os.Getpid()}
	p, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var stop atomic.Bool
	go burn(&stop)
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(d)
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	stop.Store(true)
	st, err := p.Stats()
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestProbabilisticGatesSampling: with threshold 50 and 200 ms intervals, sampling is on in
// about half of the intervals, and the samples taken follow the share of intervals on,
// measured against a run with sampling always on.
func TestProbabilisticGatesSampling(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (loads BPF programs)")
	}
	const d = 8 * time.Second
	control := sampleRun(t, Options{}, d)
	prob := sampleRun(t, Options{ProbabilisticThreshold: 50,
		ProbabilisticInterval: 200 * time.Millisecond}, d)
	if control.ProbIntervals != 0 {
		t.Errorf("control run counted %d probabilistic intervals, want 0", control.ProbIntervals)
	}
	if prob.ProbIntervals < 30 {
		t.Fatalf("%d probabilistic intervals in %v of 200 ms, want about 40", prob.ProbIntervals, d)
	}
	onShare := float64(prob.ProbIntervalsOn) / float64(prob.ProbIntervals)
	sampleShare := float64(prob.Samples) / float64(control.Samples)
	t.Logf("intervals %d, on %d (%.2f); samples %d vs %d always on (%.2f)", prob.ProbIntervals,
		prob.ProbIntervalsOn, onShare, prob.Samples, control.Samples, sampleShare)
	if control.Samples < 500 {
		t.Fatalf("control run took %d samples, want >= 500 (machine too loaded?)", control.Samples)
	}
	// 40 fair coin flips: outside 0.2..0.8 one run in ~10^4
	if onShare < 0.2 || onShare > 0.8 {
		t.Errorf("sampling on in %.2f of the intervals, want about 0.5", onShare)
	}
	if d := sampleShare - onShare; d < -0.2 || d > 0.2 {
		t.Errorf("samples %.2f of the always-on run, intervals on %.2f: sampling does not follow "+
			"the intervals", sampleShare, onShare)
	}
}

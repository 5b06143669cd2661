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

// TestProbabilisticGatesSampling: with threshold 50 and 500 ms intervals, sampling is on in
// about half of the intervals, and samples arrive only in those: the library's counters,
// read every 20 ms, say when an interval begins and whether it is on; the samples counted
// more than 200 ms after a switch (the reader drains every 100 ms) are attributed to it.
// One run, so that a machine loaded unevenly over time cannot fake or hide the gating.
func TestProbabilisticGatesSampling(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (loads BPF programs)")
	}
	p, err := Open(Options{FrequencyHz: 499, PIDs: []int{os.Getpid()},
		ProbabilisticThreshold: 50, ProbabilisticInterval: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var stop atomic.Bool
	defer stop.Store(true)
	go burn(&stop)
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	var last Stats
	on, switched := false, time.Now()
	var onSamples, offSamples uint64
	var onTime, offTime time.Duration
	const poll = 20 * time.Millisecond
	for end := time.Now().Add(12 * time.Second); time.Now().Before(end); time.Sleep(poll) {
		st, err := p.Stats()
		if err != nil {
			t.Fatal(err)
		}
		if st.ProbIntervals != last.ProbIntervals {
			on, switched = st.ProbIntervalsOn != last.ProbIntervalsOn, time.Now()
		} else if time.Since(switched) > 200*time.Millisecond && last.ProbIntervals > 0 {
			if on {
				onSamples += st.Samples - last.Samples
				onTime += poll
			} else {
				offSamples += st.Samples - last.Samples
				offTime += poll
			}
		}
		last = st
	}
	share := float64(last.ProbIntervalsOn) / float64(last.ProbIntervals)
	t.Logf("intervals %d, on %d (%.2f); samples %d in %v on, %d in %v off", last.ProbIntervals,
		last.ProbIntervalsOn, share, onSamples, onTime, offSamples, offTime)
	if last.ProbIntervals < 18 {
		t.Fatalf("%d probabilistic intervals in 12 s of 500 ms, want about 24", last.ProbIntervals)
	}
	// 24 fair coin flips: outside 0.15..0.85 about one run in 2000
	if share < 0.15 || share > 0.85 {
		t.Errorf("sampling on in %.2f of the intervals, want about 0.5", share)
	}
	if onSamples < 100 {
		t.Fatalf("%d samples in %v of intervals on, want >= 100 (a busy thread at 499 Hz)",
			onSamples, onTime)
	}
	if float64(offSamples) > 0.02*float64(onSamples) {
		t.Errorf("%d samples in intervals off, %d on: sampling was not gated", offSamples, onSamples)
	}
}

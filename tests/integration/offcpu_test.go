package integration

// Off-CPU profiling (issue 16) on the sched_switch tracepoint: where threads wait, for how
// long, in which state - through the CLI (pprof sample type off_cpu) and the collector
// (off_cpu_threshold, OTLP profile with sample type off_cpu/nanoseconds).

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

// offCPUIndex is the index of the off_cpu sample type of p, or -1.
func offCPUIndex(p *profile.Profile) int {
	for i, st := range p.SampleType {
		if st.Type == "off_cpu" && st.Unit == "nanoseconds" {
			return i
		}
	}
	return -1
}

func hasFuncContaining(s *profile.Sample, part string) bool {
	for _, n := range funcNames(s) {
		if strings.Contains(n, part) {
			return true
		}
	}
	return false
}

// TestOffCPUSleepVsPipe: tests/workloads/offcpu.c's waiter thread alternates a 30 ms sleep
// and a 10 ms blocking pipe read (3:1), and a burner thread spins. The waiter's off-CPU time
// splits 3:1 between do_nanosleep and the pipe read, adds up to the recording's length, and
// reaches its own functions; the burner is off the CPU only when preempted, and is on-CPU
// in the CPU samples.
func TestOffCPUSleepVsPipe(t *testing.T) {
	requireRoot(t)
	w := startWorkload(t, "offcpu-nofp", "20")
	time.Sleep(300 * time.Millisecond)
	const secs = 3
	p, r := record(t, "--pid", strconv.Itoa(w.Process.Pid), "--frequency", "99", "--duration",
		strconv.Itoa(secs), "--off-cpu")
	t.Logf("%s", strings.TrimSpace(r.stderr))
	oi := offCPUIndex(p)
	if oi < 0 {
		t.Fatalf("no off_cpu/nanoseconds sample type: %v", p.SampleType)
	}
	if p.DefaultSampleType != "cpu" {
		t.Errorf("default sample type %q, want cpu (go tool pprof shows CPU unless asked)", p.DefaultSampleType)
	}
	var sleepNs, pipeNs, waiterNs, waiterOther, burnerPreempt, burnerOther, burnerCPU int64
	var waiterUser int64
	for _, s := range samplesOf(p, w.Process.Pid) {
		thread := strings.Join(s.Label["thread.name"], "")
		state := strings.Join(s.Label["thread.state"], "")
		off := s.Value[oi]
		switch thread {
		case "waiter":
			if off == 0 {
				continue
			}
			waiterNs += off
			if state != "sleeping" {
				// a wakeup between setting the sleep state and switching (the pipe written
				// as the read blocks) leaves the thread runnable: preempted, rightly, rarely
				waiterOther += off
				t.Logf("waiter off the CPU in state %q: %s", state, strings.Join(funcNames(s), " <- "))
			}
			switch {
			case hasFuncContaining(s, "do_nanosleep"):
				sleepNs += off
			case hasFuncContaining(s, "pipe_read"):
				pipeNs += off
			}
			if hasFuncContaining(s, "wait_sleep") || hasFuncContaining(s, "wait_pipe") {
				waiterUser += off
			}
		case "burner":
			burnerCPU += s.Value[0]
			if off > 0 {
				if state == "preempted" {
					burnerPreempt += off
				} else {
					burnerOther += off
				}
			}
		}
	}
	if waiterNs == 0 {
		t.Fatal("no off-CPU time of the waiter thread")
	}
	if pct := 100 * float64(waiterOther) / float64(waiterNs); pct > 2 {
		t.Errorf("%.1f%% of the waiter's off-CPU time in a state other than sleeping, want <= 2%%", pct)
	}
	within(t, "waiter in do_nanosleep (of its off-CPU time)", 100*float64(sleepNs)/float64(waiterNs), 75, 3)
	within(t, "waiter in pipe_read", 100*float64(pipeNs)/float64(waiterNs), 25, 3)
	within(t, "waiter off-CPU time (of the recording)", 100*float64(waiterNs)/float64(secs*1e9), 100, 5)
	if pct := 100 * float64(waiterUser) / float64(waiterNs); pct < 99 {
		t.Errorf("only %.1f%% of the waiter's off-CPU time reaches wait_sleep/wait_pipe", pct)
	}
	if burnerCPU == 0 {
		t.Error("the burner thread has no CPU samples")
	}
	if burnerOther != 0 {
		t.Errorf("the burner thread is off the CPU for %d ns in a state other than preempted", burnerOther)
	}
	t.Logf("burner: %d CPU samples, %.1f ms off the CPU preempted", burnerCPU, float64(burnerPreempt)/1e6)
}

// TestOffCPUProbability: at 0.5 half of the intervals is recorded and each is weighted by 2,
// so the waiter's off-CPU time still adds up to the recording's length: about 150 of its 300
// intervals are drawn, which leaves the estimate a standard deviation of about 7%.
func TestOffCPUProbability(t *testing.T) {
	requireRoot(t)
	w := startWorkload(t, "offcpu-nofp", "20")
	time.Sleep(300 * time.Millisecond)
	const secs = 6
	p, r := record(t, "--pid", strconv.Itoa(w.Process.Pid), "--frequency", "19", "--duration",
		strconv.Itoa(secs), "--off-cpu=0.5")
	oi := offCPUIndex(p)
	if oi < 0 {
		t.Fatalf("no off_cpu sample type: %s", r.stderr)
	}
	var ns int64
	for _, s := range samplesOf(p, w.Process.Pid) {
		if strings.Join(s.Label["thread.name"], "") == "waiter" && s.Value[oi] > 0 {
			ns += s.Value[oi]
		}
	}
	within(t, "waiter off-CPU estimate at p=0.5 (of the recording)", 100*float64(ns)/float64(secs*1e9), 100, 20)
}

// TestOffCPUBadThreshold: a probability out of range is refused by name.
func TestOffCPUBadThreshold(t *testing.T) {
	for _, v := range []string{"0", "1.5", "-1", "x"} {
		r := run(t, time.Minute, buildPath(t, "otelprof"), "record", "--off-cpu="+v, "-d", "1", "-o", os.DevNull)
		if r.code != 2 || !strings.Contains(r.stderr, "--off-cpu") {
			t.Errorf("--off-cpu=%s: exit %d, stderr %q; want 2 and the flag named", v, r.code, r.stderr)
		}
	}
}

// TestOffCPUCollector: off_cpu_threshold through the collector: a profile with the upstream
// profiler's off-CPU sample type reaches the file exporter, its samples carry thread.state.
func TestOffCPUCollector(t *testing.T) {
	requireRoot(t)
	w := startWorkload(t, "offcpu-nofp", "60")
	cfg, out := fileCollectorConfig(t, w.Process.Pid, "samples_per_second: 19",
		"off_cpu_threshold: 1.0")
	col := startCollector(t, "collector", nil, "--config", cfg, "--feature-gates=service.profilesSupport")
	var offNs, sleeping int64
	waitUntil(t, 60*time.Second, "2 s of the waiter's off-CPU time in the file", func() bool {
		batches, err := readProtoFile(out)
		if err != nil {
			t.Fatalf("file exporter output: %v", err)
		}
		offNs, sleeping = 0, 0
		for _, pd := range batches {
			dict := pd.Dictionary()
			str := func(i int32) string { return dict.StringTable().At(int(i)) }
			for _, rp := range pd.ResourceProfiles().All() {
				for _, sp := range rp.ScopeProfiles().All() {
					for _, prof := range sp.Profiles().All() {
						st := prof.SampleType()
						if str(st.TypeStrindex()) != "off_cpu" || str(st.UnitStrindex()) != "nanoseconds" {
							continue
						}
						for _, smp := range prof.Samples().All() {
							attrs := map[string]string{}
							for _, ai := range smp.AttributeIndices().All() {
								kv := dict.AttributeTable().At(int(ai))
								attrs[str(kv.KeyStrindex())] = kv.Value().AsString()
							}
							if attrs["thread.name"] != "waiter" {
								continue
							}
							if smp.Values().Len() != smp.TimestampsUnixNano().Len() {
								t.Fatalf("off-CPU sample with %d values and %d timestamps",
									smp.Values().Len(), smp.TimestampsUnixNano().Len())
							}
							for _, v := range smp.Values().All() {
								offNs += v
								if attrs["thread.state"] == "sleeping" {
									sleeping += v
								}
							}
						}
					}
				}
			}
		}
		return offNs >= 2e9
	}, col)
	col.stop(t, 30*time.Second)
	// as in TestOffCPUSleepVsPipe: a wakeup between setting the sleep state and switching
	// leaves the waiter runnable (preempted, rightly); rare, so a small share at most
	if pct := 100 * float64(offNs-sleeping) / float64(offNs); pct > 2 {
		t.Errorf("%d of the waiter's %d off-CPU ns have thread.state sleeping (%.1f%% other), want >= 98%%",
			sleeping, offNs, pct)
	} else if sleeping != offNs {
		t.Logf("%d of the waiter's %d off-CPU ns in a state other than sleeping", offNs-sleeping, offNs)
	}
}

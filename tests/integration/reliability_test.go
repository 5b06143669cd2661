package integration

// Reliability under faults (issue 7): exec storm, lost samples on a full ring buffer,
// SIGTERM flush, hostile binaries in a live process, valgrind, many processes.

import (
	"bufio"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

// longMode: OTELPROF_LONG=1 (make bench) runs the storm for a minute and 10,000 processes.
func longMode() bool { return os.Getenv("OTELPROF_LONG") == "1" }

var wroteRe = regexp.MustCompile(`wrote (\d+) samples \((\d+) lost, (\d+) dropped\) from (\d+) processes`)

type recStats struct {
	samples, lost, dropped, processes int64
	maxRSSKiB                         int64
	wall                              time.Duration
}

// recordStats runs `otelprof record` (pprof to a temp file) and returns the parsed profile,
// the CLI's own summary line and the recorder's peak RSS.
func recordStats(t *testing.T, args ...string) (*profile.Profile, recStats, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out.pb.gz")
	all := append([]string{"record", "--output", out}, args...)
	cmd := exec.Command(buildPath(t, "otelprof"), all...)
	var errb strings.Builder
	cmd.Stderr = &errb
	start := time.Now()
	err := cmd.Run()
	var st recStats
	st.wall = time.Since(start)
	if err != nil {
		t.Fatalf("otelprof %v: %v; stderr: %s", all, err, errb.String())
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		st.maxRSSKiB = ru.Maxrss
	}
	m := wroteRe.FindStringSubmatch(errb.String())
	if m == nil {
		t.Fatalf("no 'wrote N samples (N lost, N dropped)' line: the recorder must report losses; stderr: %s", errb.String())
	}
	st.samples, _ = strconv.ParseInt(m[1], 10, 64)
	st.lost, _ = strconv.ParseInt(m[2], 10, 64)
	st.dropped, _ = strconv.ParseInt(m[3], 10, 64)
	st.processes, _ = strconv.ParseInt(m[4], 10, 64)
	p := parseProfile(t, out)
	return p, st, errb.String()
}

func exeName(s *profile.Sample) string {
	if v := s.Label["process.executable.name"]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// TestReliabilityExecStorm: hundreds of short-lived processes a second while the whole system
// is recorded. No crash, bounded memory, and the children's samples are still attributed to
// their executable (most of them after the child has exited).
func TestReliabilityExecStorm(t *testing.T) {
	requireRoot(t)
	secs, rate := 10, 400
	if longMode() {
		secs = 60
	}
	storm := exec.Command(buildPath(t, "workloads/rel_storm"), strconv.Itoa(rate), strconv.Itoa(secs), "2")
	var sout strings.Builder
	storm.Stdout = &sout
	if err := storm.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = storm.Process.Kill(); _ = storm.Wait() }()
	p, st, _ := recordStats(t, "--frequency", "499", "--duration", strconv.Itoa(secs))
	if err := storm.Wait(); err != nil {
		t.Fatalf("rel_storm: %v", err)
	}
	var spawned int
	var achieved float64
	if m := regexp.MustCompile(`spawned=(\d+) .*rate=([0-9.]+)/s`).FindStringSubmatch(sout.String()); m != nil {
		spawned, _ = strconv.Atoi(m[1])
		achieved, _ = strconv.ParseFloat(m[2], 64)
	}
	var child, childNamed, childAll, inExec, inExecUser int64
	pids := map[int64]bool{}
	for _, s := range p.Sample {
		if exeName(s) != "rel_storm" {
			continue
		}
		if v := s.NumLabel["pid"]; len(v) > 0 && v[0] != int64(storm.Process.Pid) {
			child += count(s)
			pids[v[0]] = true
			if hasFunc(s, "rel_storm_burn") {
				childNamed += count(s)
			}
			if allNamed(s) {
				childAll += count(s)
			}
		}
		// inside execve the old program's user stack is not recorded (OTELPROF_UNWIND_IN_EXEC):
		// in load_elf_binary its memory is being replaced by the new program's
		if hasFunc(s, "load_elf_binary") {
			inExec += count(s)
			for _, loc := range s.Location {
				if loc.Mapping == nil || loc.Mapping.File != "[kernel.kallsyms]" {
					inExecUser += count(s)
					break
				}
			}
		}
	}
	t.Logf("storm: %s; recorder: %d samples, %d lost, %d dropped, %d processes, max RSS %d MiB",
		strings.TrimSpace(sout.String()), st.samples, st.lost, st.dropped, st.processes, st.maxRSSKiB/1024)
	t.Logf("children: %d samples from %d distinct pids attributed to rel_storm, %.0f%% symbolized to rel_storm_burn, %.1f%% with every frame named",
		child, len(pids), 100*float64(childNamed)/float64(max(child, 1)),
		100*float64(childAll)/float64(max(child, 1)))
	if achieved < 100 {
		t.Logf("warning: only %.0f processes/s achieved (machine busy)", achieved)
	}
	if spawned > 0 && len(pids) < spawned/4 {
		t.Errorf("samples from %d of %d short-lived children carry executable name rel_storm, want >= 1/4", len(pids), spawned)
	}
	// A child that is gone before the reader reads its /proc/PID/maps is named from the
	// mappings BPF sent at its exit (bpf/types.h, op_exit_maps), its samples held back until
	// the exit record says they are in; samples of the spawn before the exec (the parent's
	// code in the child's pid) from the parent's mappings (TestUnwindForkedBeforeExec). The
	// issue asks 95 % of a 60 s storm (make bench); under the sanitizer build here, 90 %.
	if child == 0 {
		t.Errorf("no samples of the short-lived children")
	} else if float64(childAll) < 0.9*float64(child) {
		t.Errorf("%d of %d samples of the short-lived children have every frame named, want >= 90%%",
			childAll, child)
	}
	if inExecUser > 0 {
		t.Errorf("%d of %d samples in load_elf_binary have user frames, want none (the old program's stack)",
			inExecUser, inExec)
	}
	if st.maxRSSKiB > rssBoundKiB(t, 512) {
		t.Errorf("recorder peak RSS %d MiB during the storm, want <= %d MiB", st.maxRSSKiB/1024, rssBoundKiB(t, 512)/1024)
	}
}

// allNamed: every frame of @s has a function name (a marker such as "[unwind error: ...]"
// counts as one: it names why the walk ended, not a frame left as an address).
func allNamed(s *profile.Sample) bool {
	for _, loc := range s.Location {
		named := false
		for _, l := range loc.Line {
			named = named || (l.Function != nil && l.Function.Name != "")
		}
		if !named {
			return false
		}
	}
	return len(s.Location) > 0
}

// TestReliabilityRingbufOverflow: 10 kHz on every CPU into a 64 KiB ring buffer loses
// samples; every one is counted (written + lost = the sampler's runs), and the CLI says so.
func TestReliabilityRingbufOverflow(t *testing.T) {
	requireRoot(t)
	ncpu := runtime.NumCPU()
	for i := 0; i < ncpu; i++ {
		startWorkload(t, "bench_deep", "8", "120")
	}
	time.Sleep(200 * time.Millisecond)
	const hz, secs = 10000, 4
	p, st, stderr := recordStats(t, "--frequency", strconv.Itoa(hz), "--duration", strconv.Itoa(secs),
		"--ringbuf-bytes", "65536")
	var inProfile int64
	for _, s := range p.Sample {
		inProfile += count(s)
	}
	expected := int64(hz * secs * ncpu)
	t.Logf("%d written, %d lost, %d dropped of ~%d sampler runs (%d CPUs busy); profile holds %d",
		st.samples, st.lost, st.dropped, expected, ncpu, inProfile)
	if st.lost == 0 {
		t.Fatalf("no lost samples reported with a 64 KiB ring buffer at %d Hz: %s", hz, stderr)
	}
	if inProfile != st.samples {
		t.Errorf("profile holds %d samples but the recorder reports %d written", inProfile, st.samples)
	}
	if tot := st.samples + st.lost + st.dropped; tot < expected*6/10 {
		t.Errorf("written+lost+dropped = %d, want about %d: samples vanished without being counted", tot, expected)
	}
}

// TestReliabilitySIGTERMFlush: every sample taken before SIGTERM is in the output: the count
// matches the target's CPU time up to the signal.
func TestReliabilitySIGTERMFlush(t *testing.T) {
	requireRoot(t)
	w := startWorkload(t, "ratio", "30")
	out := filepath.Join(t.TempDir(), "term.pb.gz")
	const hz = 199
	// wait until sampling is attached ("recording ..."), then measure the target's CPU time
	cmd, rest := startRecording(t, "--pid", strconv.Itoa(w.Process.Pid),
		"--frequency", strconv.Itoa(hz), "--duration", "0", "--output", out)
	c0 := cpuTicks(t, w.Process.Pid)
	time.Sleep(3 * time.Second)
	c1 := cpuTicks(t, w.Process.Pid)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("otelprof after SIGTERM: %v; %s", err, <-rest)
	}
	tail := <-rest
	p := parseProfile(t, out)
	got := total(samplesOf(p, w.Process.Pid))
	clk := int64(100) // USER_HZ
	want := (c1 - c0) * hz / clk
	t.Logf("target CPU between attach and SIGTERM: %.2f s -> >= %d samples expected; %d written (%s)",
		float64(c1-c0)/float64(clk), want, got, strings.TrimSpace(tail))
	if got < want*9/10 {
		t.Errorf("%d samples written after SIGTERM, want >= %d (90%% of the target's CPU time before the signal)", got, want*9/10)
	}
	if m := wroteRe.FindStringSubmatch(tail); m == nil || m[2] != "0" {
		t.Errorf("expected a summary with 0 lost samples: %q", tail)
	}
}

// cpuTicks: utime+stime of every thread of pid, in clock ticks.
func cpuTicks(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return u + st
}

// TestReliabilityManyProcesses: thousands of mostly-sleeping processes on the host (10,000
// with OTELPROF_LONG=1): start-up until sampling is attached, peak RSS, and the ticking ones
// all seen. Figures: bench/results/reliability.md.
func TestReliabilityManyProcesses(t *testing.T) {
	requireRoot(t)
	n := 3000
	if longMode() {
		n = 10000
	}
	sl := exec.Command(buildPath(t, "workloads/rel_sleepers"), strconv.Itoa(n), "120")
	so, err := sl.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sl.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sl.Process.Signal(syscall.SIGTERM); _ = sl.Wait() })
	line, _ := bufio.NewReader(so).ReadString('\n')
	var ready int
	fmt.Sscanf(line, "ready %d", &ready)
	if ready < n*9/10 {
		t.Fatalf("only %d of %d sleeping processes started: %q", ready, n, line)
	}
	out := filepath.Join(t.TempDir(), "many.pb.gz")
	cmd := exec.Command(buildPath(t, "otelprof"), "record", "-v", "--frequency", "99", "--duration", "5",
		"--output", out)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(stderr)
	var startup time.Duration
	var all []string
	for {
		l, err := br.ReadString('\n')
		all = append(all, l)
		if strings.Contains(l, "recording") && startup == 0 {
			startup = time.Since(start)
		}
		if err != nil {
			break
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("otelprof with %d processes: %v: %s", ready, err, strings.Join(all, ""))
	}
	var rss int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = ru.Maxrss
	}
	p := parseProfile(t, out)
	ticking := map[int64]bool{}
	for _, s := range p.Sample {
		if exeName(s) == "rel_sleepers" && hasFunc(s, "rel_sleeper_tick") {
			ticking[s.NumLabel["pid"][0]] = true
		}
	}
	m := wroteRe.FindStringSubmatch(strings.Join(all, ""))
	t.Logf("%d sleeping processes (%d ticking): start-up to attached %.2f s, whole run %.2f s, peak RSS %d MiB; %d ticking pids seen; %s",
		ready, ready/256+1, startup.Seconds(), time.Since(start).Seconds(), rss/1024, len(ticking), m[0])
	if startup == 0 || startup > 30*time.Second {
		t.Errorf("start-up with %d processes took %v, want < 30 s", ready, startup)
	}
	if rss > rssBoundKiB(t, 512) {
		t.Errorf("peak RSS %d MiB with %d processes, want <= %d MiB", rss/1024, ready, rssBoundKiB(t, 512)/1024)
	}
	if len(ticking) < (ready/256+1)*3/4 {
		t.Errorf("only %d of the %d ticking processes seen", len(ticking), ready/256+1)
	}
}

// TestReliabilityValgrind: a whole-system recording under valgrind memcheck has no invalid
// access, no use of uninitialised memory in otelprof's code and no definite leak (libbpf's
// partially-set union bpf_attr is suppressed: testdata/valgrind-bpf.supp).
func TestReliabilityValgrind(t *testing.T) {
	requireRoot(t)
	vg, err := exec.LookPath("valgrind")
	if err != nil {
		t.Fatal("valgrind is not installed: run scripts/install-deps.sh")
	}
	if sanitized(t) {
		t.Fatal("otelprof is built with AddressSanitizer: valgrind runs on the plain build (tests/run.sh leaves this test out under SANITIZE=1)")
	}
	supp, _ := filepath.Abs("testdata/valgrind-bpf.supp")
	startWorkload(t, "ratio", "60")
	out := filepath.Join(t.TempDir(), "vg.pb.gz")
	start := time.Now()
	r := run(t, 5*time.Minute, vg, "-q", "--suppressions="+supp, "--error-exitcode=99",
		"--leak-check=full", "--errors-for-leak-kinds=definite", "--show-leak-kinds=definite",
		buildPath(t, "otelprof"), "record", "--frequency", "99", "--duration", "2", "--output", out)
	var report []string
	for _, l := range strings.Split(r.stderr, "\n") {
		if strings.HasPrefix(l, "==") {
			report = append(report, l)
		}
	}
	t.Logf("valgrind run %.0f s, exit %d; %s", time.Since(start).Seconds(), r.code,
		wroteRe.FindString(r.stderr))
	if r.code != 0 {
		t.Fatalf("valgrind memcheck: exit %d:\n%s", r.code, strings.Join(report, "\n"))
	}
	if m := wroteRe.FindStringSubmatch(r.stderr); m == nil || m[1] == "0" {
		t.Errorf("no samples recorded under valgrind: %s", r.stderr)
	}
}

// sanitized reports whether build/otelprof links the AddressSanitizer runtime (SANITIZE=1).
func sanitized(t *testing.T) bool {
	ef, err := elf.Open(buildPath(t, "otelprof"))
	if err != nil {
		return false
	}
	defer ef.Close()
	libs, _ := ef.ImportedLibraries()
	for _, l := range libs {
		if strings.HasPrefix(l, "libasan") {
			return true
		}
	}
	return false
}

// rssBoundKiB: a peak-RSS bound, tripled under AddressSanitizer (shadow memory, quarantine).
func rssBoundKiB(t *testing.T, mib int64) int64 {
	if sanitized(t) {
		mib *= 3
	}
	return mib * 1024
}

var mapsFullRe = regexp.MustCompile(`unwinder maps full: (\d+) process and (\d+) table loads did not fit`)

// TestReliabilityUnwindMapFull: the unwinder's per-process BPF map holds fewer processes than
// are profiled (OTELPROF_UNWIND_MAX_PROCS=2 against 4 targets built without frame pointers).
// The recording still succeeds, every target keeps its samples, the two processes that fit
// have complete stacks, the others are degraded to frame-pointer stacks, and the shortfall is
// counted and reported — never silent. When a process that fit exits, one that did not takes
// its room within the retry period (its later stacks are complete). A bad value of the knob
// is refused by name.
func TestReliabilityUnwindMapFull(t *testing.T) {
	requireRoot(t)
	t.Setenv("OTELPROF_UNWIND_MAX_PROCS", "2")
	var ws []*exec.Cmd
	args := []string{"--frequency", "499", "--duration", "7"}
	for i := 0; i < 4; i++ {
		w := startWorkload(t, "cfi_recurse-nofp", "30")
		ws = append(ws, w)
		// targets are loaded in --pid order: the first two fit
		args = append(args, "--pid", strconv.Itoa(w.Process.Pid))
	}
	time.Sleep(300 * time.Millisecond)
	out := filepath.Join(t.TempDir(), "out.pb.gz")
	cmd, rest := startRecording(t, append(args, "--output", out)...)
	// the first target exits 2.5 s into the recording, freeing its entry
	time.Sleep(2500 * time.Millisecond)
	_ = ws[0].Process.Kill()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("otelprof %v: %v", args, err)
	}
	stderr := <-rest
	p := parseProfile(t, out)
	var st recStats
	if m := wroteRe.FindStringSubmatch(stderr); m != nil {
		st.samples, _ = strconv.ParseInt(m[1], 10, 64)
		st.lost, _ = strconv.ParseInt(m[2], 10, 64)
		st.dropped, _ = strconv.ParseInt(m[3], 10, 64)
	} else {
		t.Fatalf("no 'wrote N samples' line: %s", stderr)
	}
	m := mapsFullRe.FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no 'unwinder maps full' line with 4 targets and room for 2: the shortfall must be reported; stderr: %s", stderr)
	}
	procsFull, _ := strconv.Atoi(m[1])
	if procsFull < 2 {
		t.Errorf("%d process loads reported as not fitting, want >= 2 (two targets had no room)", procsFull)
	}
	if !strings.Contains(stderr, "OTELPROF_UNWIND_MAX_PROCS") {
		t.Errorf("the warning does not name OTELPROF_UNWIND_MAX_PROCS, the way to raise the limit: %s", stderr)
	}
	pct := make([]float64, len(ws))
	for i, w := range ws {
		ss := samplesOf(p, w.Process.Pid)
		n := total(ss)
		pct[i] = completeShare(t, ss, recurseComplete)
		t.Logf("target %d (pid %d): %d samples, %.1f%% complete", i, w.Process.Pid, n, pct[i])
		minimum := int64(300)
		if i == 0 {
			minimum = 75 // killed after 2.5 s
		}
		if n < minimum {
			t.Errorf("target %d: %d samples: a process without room in the map must still be sampled", i, n)
		}
	}
	if pct[0] < 99 || pct[1] < 99 {
		t.Errorf("the two targets that fit: %.1f%% and %.1f%% complete, want >= 99%%", pct[0], pct[1])
	}
	// after the exit one late target moves in (partly complete), the other stays degraded
	lo, hi := pct[2], pct[3]
	if lo > hi {
		lo, hi = hi, lo
	}
	if lo > 1 || hi < 20 || hi > 90 {
		t.Errorf("late targets %.1f%% and %.1f%% complete: want one degraded (~0%%) and one that got the freed room after ~3.5 s of 7 (20-90%%)", pct[2], pct[3])
	}
	if st.lost+st.dropped > st.samples/100 {
		t.Errorf("%d lost and %d dropped of %d samples", st.lost, st.dropped, st.samples)
	}

	t.Setenv("OTELPROF_UNWIND_MAX_PROCS", "zero")
	r := run(t, time.Minute, buildPath(t, "otelprof"), "record", "--duration", "1",
		"--output", filepath.Join(t.TempDir(), "bad.pb.gz"))
	if r.code == 0 || !strings.Contains(r.stderr, "OTELPROF_UNWIND_MAX_PROCS=zero") {
		t.Errorf("OTELPROF_UNWIND_MAX_PROCS=zero: exit %d, stderr %q; want a failure naming the variable", r.code, r.stderr)
	}
}

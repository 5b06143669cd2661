package integration

// Root BPF tests of the CFI unwinder (issue 4): workloads built without frame pointers
// (-nofp) must give complete stacks, the right shares, the same call edges as perf's DWARF
// unwinder, and stacks through Debian's libc and python3 must reach main.

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

// recordPid profiles one workload process for secs seconds at 999 Hz.
func recordPid(t *testing.T, pid int, secs int) []*profile.Sample {
	t.Helper()
	p, _ := record(t, "--pid", strconv.Itoa(pid), "--frequency", "999", "--duration",
		strconv.Itoa(secs))
	return samplesOf(p, pid)
}

// completeShare returns the percentage of samples (by count) for which complete(s) holds,
// and logs up to three incomplete stacks.
func completeShare(t *testing.T, ss []*profile.Sample, complete func(names []string) bool) float64 {
	t.Helper()
	var ok, all int64
	bad := map[string]int64{} // incomplete stacks, by their frames
	for _, s := range ss {
		names := funcNames(s)
		all += count(s)
		if complete(names) {
			ok += count(s)
		} else {
			bad[strings.Join(names, " <- ")] += count(s)
		}
	}
	stacks := make([]string, 0, len(bad))
	for k := range bad {
		stacks = append(stacks, k)
	}
	sort.Slice(stacks, func(i, j int) bool { return bad[stacks[i]] > bad[stacks[j]] })
	for i, k := range stacks {
		if i == 5 {
			t.Logf("... and %d more incomplete stacks", len(stacks)-i)
			break
		}
		t.Logf("incomplete stack (%d samples): %s", bad[k], k)
	}
	if all == 0 {
		return 0
	}
	return 100 * float64(ok) / float64(all)
}

func contains(names []string, want string) bool {
	for _, n := range names {
		if n == want {
			return true
		}
	}
	return false
}

func countOf(names []string, want string) int {
	n := 0
	for _, x := range names {
		if x == want {
			n++
		}
	}
	return n
}

// checkShares compares the shares of fns (among samples that have one of them) with want,
// within tol percentage points.
func checkShares(t *testing.T, ss []*profile.Sample, want map[string]float64, tol float64) {
	t.Helper()
	var names []string
	for fn := range want {
		names = append(names, fn)
	}
	shares := shareByStack(ss, names...)
	covered := 0.0
	for _, fn := range names {
		covered += shares[fn]
	}
	if covered < 90 {
		t.Errorf("only %.1f%% of samples have one of %v on the stack", covered, names)
		return
	}
	for fn, w := range want {
		got := 100 * shares[fn] / covered
		if d := got - w; d > tol || d < -tol {
			t.Errorf("%s: %.1f%% of samples, want %.0f%% +- %.0f", fn, got, w, tol)
		} else {
			t.Logf("%s: %.1f%% (want %.0f%%)", fn, got, w)
		}
	}
}

// recurseComplete: a cfi_recurse stack is complete when it reaches main and, under a leaf,
// holds all 100 recurse frames.
func recurseComplete(names []string) bool {
	if !contains(names, "main") {
		return false
	}
	if contains(names, "leaf_a") || contains(names, "leaf_b") {
		return countOf(names, "recurse") == 100
	}
	return true
}

// TestUnwindRecursionNoFP: 100 recursion levels without frame pointers, every one unwound.
func TestUnwindRecursionNoFP(t *testing.T) {
	requireRoot(t)
	w := startWorkload(t, "cfi_recurse-nofp", "30")
	time.Sleep(300 * time.Millisecond)
	ss := recordPid(t, w.Process.Pid, 10) // long enough for 2000 samples on a busy host
	if n := total(ss); n < 2000 {
		t.Fatalf("got %d samples, want >= 2000", n)
	}
	pct := completeShare(t, ss, recurseComplete)
	t.Logf("%.2f%% complete stacks of %d samples", pct, total(ss))
	if pct < 99 {
		t.Errorf("%.2f%% of stacks complete (main, and 100 recurse frames under the leaves), want >= 99%%", pct)
	}
	checkShares(t, ss, map[string]float64{"leaf_a": 70, "leaf_b": 30}, 2)
}

// TestUnwindLLDNoFP: the same recursion linked by lld, whose text segment is mapped from a
// page that starts in the read-only segment before it (p_vaddr - p_offset = 0x1000): the
// unwinder must take the executable segment's bias (it took the read-only one's, and every
// frame of such a binary, Rust programs included, stopped at "pc_not_covered").
func TestUnwindLLDNoFP(t *testing.T) {
	requireRoot(t)
	w := startWorkload(t, "cfi_recurse-lld", "20")
	time.Sleep(300 * time.Millisecond)
	ss := recordPid(t, w.Process.Pid, 4)
	if n := total(ss); n < 500 {
		t.Fatalf("got %d samples, want >= 500", n)
	}
	pct := completeShare(t, ss, recurseComplete)
	t.Logf("%.2f%% complete stacks of %d samples", pct, total(ss))
	if pct < 99 {
		t.Errorf("%.2f%% of stacks complete, want >= 99%%", pct)
	}
	checkShares(t, ss, map[string]float64{"leaf_a": 70, "leaf_b": 30}, 3)
}

// TestUnwindThreadsThroughLibcNoFP: threads, and stacks through libc's qsort back to the
// thread start routine.
func TestUnwindThreadsThroughLibcNoFP(t *testing.T) {
	requireRoot(t)
	w := startWorkload(t, "cfi_mt-nofp", "20", "2")
	time.Sleep(300 * time.Millisecond)
	ss := recordPid(t, w.Process.Pid, 8) // long enough for 2000 samples on a busy host
	if n := total(ss); n < 2000 {
		t.Fatalf("got %d samples, want >= 2000", n)
	}
	pct := completeShare(t, ss, func(names []string) bool {
		if !contains(names, "worker") {
			return false
		}
		if contains(names, "hot_y") && !(contains(names, "cmp") && contains(names, "sort_stage")) {
			return false
		}
		if (contains(names, "hot_x") || contains(names, "sort_stage")) && !contains(names, "stage") {
			return false
		}
		return true
	})
	t.Logf("%.2f%% complete stacks of %d samples", pct, total(ss))
	if pct < 99 {
		t.Errorf("%.2f%% of stacks reach worker through every frame, want >= 99%%", pct)
	}
	checkShares(t, ss, map[string]float64{"hot_x": 60, "sort_stage": 40}, 2)
}

// TestUnwindDlopenNoFP: a library mapped after profiling started is unwound through.
func TestUnwindDlopenNoFP(t *testing.T) {
	requireRoot(t)
	buildPath(t, "workloads/libcfi_plugin-nofp.so")
	w := startWorkload(t, "cfi_dlopen-nofp", "20", "1.5")
	time.Sleep(100 * time.Millisecond) // profiling starts well before the dlopen
	ss := recordPid(t, w.Process.Pid, 6)
	var plugin int64
	for _, s := range ss {
		if hasFunc(s, "plugin_inner") || hasFunc(s, "plugin_hot") {
			plugin += count(s)
		}
	}
	if plugin < 1000 {
		t.Fatalf("%d samples in the dlopened library, want >= 1000", plugin)
	}
	pct := completeShare(t, ss, func(names []string) bool {
		if contains(names, "plugin_inner") || contains(names, "plugin_hot") {
			return contains(names, "call_plugin") && contains(names, "main")
		}
		return contains(names, "main")
	})
	t.Logf("%.2f%% complete stacks of %d samples (%d in the plugin)", pct, total(ss), plugin)
	if pct < 99 {
		t.Errorf("%.2f%% of stacks complete, want >= 99%%", pct)
	}
}

// TestUnwindPython: Debian's python3 (no frame pointers) running a busy loop; stacks pass
// through the interpreter loop and libc's start code to the interpreter's main.
func TestUnwindPython(t *testing.T) {
	requireRoot(t)
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 not installed: run scripts/install-deps.sh")
	}
	script := filepath.Join(t.TempDir(), "spin.py")
	if err := os.WriteFile(script, []byte("def spin():\n    x = 0\n    while True:\n        x += 1\nspin()\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, script)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	time.Sleep(300 * time.Millisecond)
	ss := recordPid(t, cmd.Process.Pid, 4)
	if n := total(ss); n < 1000 {
		t.Fatalf("got %d samples of python3, want >= 1000", n)
	}
	pct := completeShare(t, ss, func(names []string) bool {
		// the eval loop's frames are replaced by the Python frames they ran (issue 15)
		return (contains(names, "main") || contains(names, "Py_BytesMain")) &&
			(contains(names, "_PyEval_EvalFrameDefault") || contains(names, "<module>"))
	})
	t.Logf("%.2f%% of python3 stacks reach the interpreter's main", pct)
	if pct < 99 {
		t.Errorf("%.2f%% of python3 stacks reach main (Py_BytesMain) through the eval loop, want >= 99%%", pct)
	}
}

// workloadFuncs are cfi_mt's own functions: edges among them are compared with perf.
var workloadFuncs = map[string]bool{
	"main": true, "worker": true, "stage": true, "hot_x": true, "sort_stage": true,
	"hot_y": true, "cmp": true,
}

// edgesOf counts caller->callee edges between consecutive frames that are both workload
// functions, weighted by sample count.
func addEdges(edges map[string]int64, names []string, weight int64) {
	for i := 0; i+1 < len(names); i++ {
		callee, caller := names[i], names[i+1]
		if workloadFuncs[callee] && workloadFuncs[caller] {
			edges[caller+"->"+callee] += weight
		}
	}
}

// frequent keeps edges seen in at least 0.5% of samples (drops rare mis-unwinds).
func frequent(edges map[string]int64, samples int64) map[string]bool {
	out := map[string]bool{}
	for e, n := range edges {
		if n*200 >= samples {
			out[e] = true
		}
	}
	return out
}

// TestUnwindMatchesPerfDwarf: the same caller->callee edges as `perf record --call-graph
// dwarf` on the same -nofp workload.
func TestUnwindMatchesPerfDwarf(t *testing.T) {
	requireRoot(t)
	perf, err := exec.LookPath("perf")
	if err != nil {
		t.Fatal("perf not installed: run scripts/install-deps.sh (linux-perf)")
	}
	bin := buildPath(t, "workloads/cfi_mt-nofp")

	// perf: software clock (no hardware PMU here), DWARF unwinding of copied stacks.
	dir := t.TempDir()
	data := filepath.Join(dir, "perf.data")
	r := run(t, 2*time.Minute, perf, "record", "-e", "cpu-clock", "-F", "499", "--call-graph",
		"dwarf,16384", "-o", data, "--", bin, "4", "2")
	if r.code != 0 {
		t.Fatalf("perf record failed (exit %d): %s", r.code, r.stderr)
	}
	script := exec.Command(perf, "script", "-i", data, "-F", "comm,tid,ip,sym")
	out, err := script.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := script.Start(); err != nil {
		t.Fatal(err)
	}
	perfEdges := map[string]int64{}
	var perfSamples int64
	var stack []string
	flush := func() {
		if len(stack) > 0 {
			perfSamples++
			addEdges(perfEdges, stack, 1)
		}
		stack = stack[:0]
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			flush()
			continue
		}
		if !strings.HasPrefix(line, "\t") && !strings.HasPrefix(line, " ") {
			flush() // sample header
			continue
		}
		f := strings.Fields(line)
		if len(f) >= 2 {
			sym := f[1]
			if i := strings.IndexAny(sym, "+("); i > 0 {
				sym = sym[:i]
			}
			stack = append(stack, sym)
		}
	}
	flush()
	_ = script.Wait()
	if perfSamples < 500 {
		t.Fatalf("perf script gave only %d samples", perfSamples)
	}

	w := startWorkload(t, "cfi_mt-nofp", "20", "2")
	time.Sleep(300 * time.Millisecond)
	ss := recordPid(t, w.Process.Pid, 4)
	ourEdges := map[string]int64{}
	for _, s := range ss {
		addEdges(ourEdges, funcNames(s), count(s))
	}
	pe, oe := frequent(perfEdges, perfSamples), frequent(ourEdges, total(ss))
	t.Logf("perf edges: %v", pe)
	t.Logf("otelprof edges: %v", oe)
	for e := range pe {
		if !oe[e] {
			t.Errorf("edge %s found by perf --call-graph dwarf, missing from otelprof", e)
		}
	}
	for e := range oe {
		if !pe[e] {
			t.Errorf("edge %s found by otelprof, not by perf --call-graph dwarf", e)
		}
	}
	if len(pe) < 4 {
		t.Errorf("perf found only %d edges (%v): the workload should give worker->stage, stage->hot_x, stage->sort_stage, cmp->hot_y", len(pe), pe)
	}
}

// recordWholeSystem records the whole system at 999 Hz (no --pid) while fn runs: fn is
// called once sampling is attached, so everything it starts begins after the profiler.
//
// 16 busy threads run meanwhile (a loaded host): the profiler's threads get a small share of
// the CPUs, so symbolization falls behind the samples, as it does on a busy machine. Not
// under AddressSanitizer (SANITIZE=1), whose run checks memory safety of the same paths:
// there the profiler is several times slower and would start new processes' tables late.
func recordWholeSystem(t *testing.T, fn func()) *profile.Profile {
	t.Helper()
	if !sanitized(t) {
		startWorkload(t, "bench_ratio", "60", "16")
	}
	out := filepath.Join(t.TempDir(), "whole.pb.gz")
	cmd, rest := startRecording(t, "--frequency", "999", "--duration", "0", "--output", out)
	fn()
	_ = cmd.Process.Signal(syscall.SIGINT)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("otelprof after SIGINT: %v; %s", err, <-rest)
	}
	t.Logf("otelprof: %s", strings.TrimSpace(<-rest))
	p := parseProfile(t, out)
	return p
}

// TestUnwindStartedAfterProfilerNoFP: whole-system mode, a program without frame pointers
// started after the profiler is unwound completely from its first samples: its unwind
// tables are loaded on its exec, not after the samples queued before it are symbolized.
func TestUnwindStartedAfterProfilerNoFP(t *testing.T) {
	requireRoot(t)
	var pid int
	p := recordWholeSystem(t, func() {
		w := startWorkload(t, "cfi_recurse-nofp", "6")
		pid = w.Process.Pid
		_ = w.Wait()
	})
	ss := samplesOf(p, pid)
	if n := total(ss); n < 150 {
		t.Fatalf("got %d samples of the workload, want >= 150", n)
	}
	pct := completeShare(t, ss, recurseComplete)
	t.Logf("%.2f%% complete stacks of %d samples", pct, total(ss))
	if pct < 95 {
		t.Errorf("%.2f%% of the stacks of a process started after the profiler are complete "+
			"(main, and 100 recurse frames under the leaves), want >= 95%%", pct)
	}
}

// TestUnwindForkedBeforeExec: whole-system mode, a child between its fork and its exec runs
// the parent's program in its own pid. Its samples there (pre_exec_work, 5 ms of CPU per
// child) are named and complete: BPF walks them with the parent's unwind tables and user
// space names them from the parent's mappings (the child's own are another program's by the
// time they could be read). Before, they came out unnamed, or named from the exec'd image.
func TestUnwindForkedBeforeExec(t *testing.T) {
	requireRoot(t)
	const preMs, childMs = 5.0, 2.0
	var parent, children int
	p := recordWholeSystem(t, func() {
		cmd := exec.Command(buildPath(t, "workloads/bench_spawn"), "3",
			strconv.FormatFloat(childMs, 'f', -1, 64), strconv.FormatFloat(preMs, 'f', -1, 64))
		var out strings.Builder
		cmd.Stdout = &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		parent = cmd.Process.Pid
		if err := cmd.Wait(); err != nil {
			t.Fatalf("bench_spawn: %v", err)
		}
		for _, f := range strings.Fields(out.String()) {
			if v, ok := strings.CutPrefix(f, "children="); ok {
				children, _ = strconv.Atoi(v)
			}
		}
	})
	if children == 0 {
		t.Fatalf("bench_spawn reported no children")
	}
	var pre, complete, wrong int64
	pids := map[int64]bool{}
	for _, s := range p.Sample {
		v := s.NumLabel["pid"]
		if len(v) == 0 || v[0] == int64(parent) {
			continue
		}
		names := funcNames(s)
		switch {
		case contains(names, "pre_exec_work") && contains(names, "child_work"):
			wrong += count(s) // one stack, two programs: named from the wrong image
		case contains(names, "pre_exec_work"):
			pre += count(s)
			pids[v[0]] = true
			if contains(names, "main") {
				complete += count(s)
			}
		}
	}
	want := float64(children) * preMs / 1000 * 999
	t.Logf("%d children x %.0f ms before exec -> %.0f samples expected; %d in pre_exec_work "+
		"(%d complete) from %d children", children, preMs, want, pre, complete, len(pids))
	if float64(pre) < 0.7*want {
		t.Errorf("%d samples of forked children in pre_exec_work, want >= 70%% of %.0f "+
			"(their CPU time before exec x 999 Hz)", pre, want)
	}
	if pre > 0 && complete < pre*95/100 {
		t.Errorf("%d of %d pre_exec_work samples reach main, want >= 95%%", complete, pre)
	}
	if wrong > 0 {
		t.Errorf("%d samples name both pre_exec_work and child_work", wrong)
	}
}

// TestUnwindShortLivedChildren: whole-system mode, children that fork+exec, burn 20 ms of
// CPU and exit are attributed to their own pid with named, complete stacks (their mappings
// are read on exec, before they exit, however far behind symbolization is).
func TestUnwindShortLivedChildren(t *testing.T) {
	requireRoot(t)
	var parent int
	var report string
	p := recordWholeSystem(t, func() {
		cmd := exec.Command(buildPath(t, "workloads/bench_spawn"), "3", "20")
		var out strings.Builder
		cmd.Stdout = &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		parent = cmd.Process.Pid
		if err := cmd.Wait(); err != nil {
			t.Fatalf("bench_spawn: %v", err)
		}
		report = out.String()
	})
	var childCPU float64
	for _, f := range strings.Fields(report) {
		if v, ok := strings.CutPrefix(f, "child_cpu="); ok {
			childCPU, _ = strconv.ParseFloat(v, 64)
		}
	}
	if childCPU <= 0 {
		t.Fatalf("bench_spawn reported no child CPU time: %q", report)
	}
	var got, complete int64
	var unnamed int64
	children := map[int64]bool{}
	for _, s := range p.Sample {
		v := s.NumLabel["pid"]
		if len(v) == 0 || v[0] == int64(parent) {
			continue
		}
		names := funcNames(s)
		if contains(names, "child_work") {
			got += count(s)
			children[v[0]] = true
			if contains(names, "main") {
				complete += count(s)
			}
		} else if len(s.Location) > 0 && s.Location[0].Mapping != nil &&
			strings.HasSuffix(s.Location[0].Mapping.File, "/bench_spawn") {
			unnamed += count(s)
		}
	}
	want := childCPU * 999
	t.Logf("children's CPU %.2f s -> %.0f samples expected; %d in child_work (%d complete) "+
		"from %d children, %d more in bench_spawn unnamed", childCPU, want, got, complete,
		len(children), unnamed)
	if float64(got) < 0.7*want {
		t.Errorf("%d samples of short-lived children in child_work, want >= 70%% of %.0f "+
			"(their CPU time x 999 Hz)", got, want)
	}
	if got > 0 && complete < got*95/100 {
		t.Errorf("%d of %d child_work samples reach main, want >= 95%%", complete, got)
	}
}

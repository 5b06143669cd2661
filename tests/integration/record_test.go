package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRecordKnownRatio: a frame-pointer workload burns CPU in hot_a:hot_b:hot_c = 50:30:20;
// the profile's shares must match within 3 points at >= 2000 samples, with thread names.
func TestRecordKnownRatio(t *testing.T) {
	requireRoot(t)
	w := startWorkload(t, "ratio", "12")
	time.Sleep(200 * time.Millisecond)
	p, _ := record(t, "--pid", strconv.Itoa(w.Process.Pid), "--frequency", "999", "--duration", "6")

	ss := samplesOf(p, w.Process.Pid)
	n := total(ss)
	if n < 2000 {
		t.Fatalf("got %d samples of the workload, want >= 2000", n)
	}
	shares := shareByStack(ss, "hot_a", "hot_b", "hot_c")
	covered := shares["hot_a"] + shares["hot_b"] + shares["hot_c"]
	if covered < 95 {
		t.Errorf("only %.1f%% of samples have hot_a/hot_b/hot_c on the stack, want >= 95%%", covered)
	}
	want := map[string]float64{"hot_a": 50, "hot_b": 30, "hot_c": 20}
	for fn, w := range want {
		got := 100 * shares[fn] / covered
		if d := got - w; d > 3 || d < -3 {
			t.Errorf("%s: %.1f%% of samples, want %.0f%% +- 3", fn, got, w)
		}
	}
	t.Logf("%d samples; shares %.1f / %.1f / %.1f", n, 100*shares["hot_a"]/covered,
		100*shares["hot_b"]/covered, 100*shares["hot_c"]/covered)

	// Every sample carries pid, tid, thread name, executable name and cpu; stacks reach main.
	var named, main int64
	for _, s := range ss {
		if s.Label["thread.name"] == nil || s.NumLabel["tid"] == nil || s.NumLabel["cpu"] == nil ||
			s.Label["process.executable.name"] == nil {
			t.Fatalf("sample without pid/tid/thread.name/cpu/process.executable.name labels: %v %v",
				s.Label, s.NumLabel)
		}
		if s.Label["thread.name"][0] == "ratio-worker-0" {
			named += count(s)
		}
		if s.Label["process.executable.name"][0] != "ratio" {
			t.Fatalf("process.executable.name = %q, want ratio", s.Label["process.executable.name"][0])
		}
		if hasFunc(s, "run_ratio") {
			main += count(s)
		}
	}
	if named < n*9/10 {
		t.Errorf("%d of %d samples labelled thread.name=ratio-worker-0", named, n)
	}
	if main < n*9/10 {
		t.Errorf("%d of %d samples reach run_ratio through the frame-pointer walk", main, n)
	}
	// Mappings carry the build id of the binary.
	var withID bool
	for _, m := range p.Mapping {
		if strings.HasSuffix(m.File, "/ratio") && m.BuildID != "" {
			withID = true
		}
	}
	if !withID {
		t.Errorf("no mapping of the ratio binary with a build id")
	}
}

// TestRecordWholeSystem: with no pid, several processes are seen at once, and a
// syscall-heavy one shows named kernel frames under its own user functions.
func TestRecordWholeSystem(t *testing.T) {
	requireRoot(t)
	a := startWorkload(t, "ratio", "10")
	b := startWorkload(t, "syscalls", "10")
	time.Sleep(200 * time.Millisecond)
	p, _ := record(t, "--frequency", "199", "--duration", "3")

	pids := map[int64]bool{}
	for _, s := range p.Sample {
		if v := s.NumLabel["pid"]; len(v) > 0 {
			pids[v[0]] = true
		}
	}
	if !pids[int64(a.Process.Pid)] || !pids[int64(b.Process.Pid)] {
		t.Fatalf("whole-system profile lacks the workloads: pids seen %v, want %d and %d",
			pids, a.Process.Pid, b.Process.Pid)
	}
	ss := samplesOf(p, b.Process.Pid)
	var kernel, linked int64
	for _, s := range ss {
		hasKernel := false
		for _, loc := range s.Location {
			if loc.Mapping != nil && loc.Mapping.File == "[kernel.kallsyms]" && len(loc.Line) > 0 &&
				loc.Line[0].Function.Name != "" {
				hasKernel = true
			}
		}
		if hasKernel {
			kernel += count(s)
			if hasFunc(s, "read_zero") || hasFunc(s, "write_null") {
				linked += count(s)
			}
		}
	}
	n := total(ss)
	if n == 0 || kernel < n/2 {
		t.Fatalf("%d of %d samples of the syscall workload have named kernel frames, want most", kernel, n)
	}
	if linked < kernel*8/10 {
		t.Errorf("%d of %d kernel stacks continue into read_zero/write_null", linked, kernel)
	}
}

// TestRecordNoKernel: --no-kernel records no kernel frames.
func TestRecordNoKernel(t *testing.T) {
	requireRoot(t)
	b := startWorkload(t, "syscalls", "6")
	p, _ := record(t, "--pid", strconv.Itoa(b.Process.Pid), "--no-kernel", "--frequency", "199", "--duration", "2")
	if total(samplesOf(p, b.Process.Pid)) == 0 {
		t.Fatal("no samples")
	}
	for _, loc := range p.Location {
		if loc.Mapping != nil && loc.Mapping.File == "[kernel.kallsyms]" {
			t.Fatalf("kernel frame %v recorded with --no-kernel", loc)
		}
	}
}

// TestRecordTargetExits: the target exits mid-recording; recording goes on and its samples
// are kept, named. The expected count comes from the target's own CPU time after attach, so
// a busy host does not make the test flaky.
func TestRecordTargetExits(t *testing.T) {
	requireRoot(t)
	w := startWorkload(t, "ratio", "3")
	out := filepath.Join(t.TempDir(), "exit.pb.gz")
	const hz = 199
	cmd, _ := startRecording(t, "--pid", strconv.Itoa(w.Process.Pid), "--frequency", strconv.Itoa(hz),
		"--duration", "30", "--output", out)
	c0 := cpuTicks(t, w.Process.Pid)
	// Read the target's CPU time just before it exits: ratio ends on its own after 3 s.
	var c1 int64
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", w.Process.Pid))
		if err != nil || strings.Contains(string(b), ") Z ") {
			break
		}
		c1 = cpuTicks(t, w.Process.Pid)
		time.Sleep(20 * time.Millisecond)
	}
	_ = w.Wait()
	time.Sleep(time.Second) // the recorder keeps going after the target is gone
	if err := cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("otelprof ended when its target exited: %v", err)
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("otelprof: %v", err)
	}
	p := parseProfile(t, out)
	ss := samplesOf(p, w.Process.Pid)
	want := (c1 - c0) * hz / 100 * 8 / 10 // USER_HZ 100; 80% of the CPU time sampled
	t.Logf("target used %.2f s CPU after attach; %d samples kept (want >= %d)", float64(c1-c0)/100, total(ss), want)
	if total(ss) < want || total(ss) == 0 {
		t.Fatalf("%d samples of the exited target kept, want >= %d", total(ss), want)
	}
	if sh := shareByStack(ss, "run_ratio")["run_ratio"]; sh < 90 {
		t.Errorf("only %.0f%% of the exited target's samples are symbolized to run_ratio", sh)
	}
}

// TestRecordMalformedELF: a binary whose section headers are garbage still runs; its frames
// keep mapping + address, and the recorder neither crashes nor loses the samples.
func TestRecordMalformedELF(t *testing.T) {
	requireRoot(t)
	src, err := os.ReadFile(buildPath(t, "workloads/ratio"))
	if err != nil {
		t.Fatal(err)
	}
	// e_shoff (offset 0x28, 8 bytes) -> far beyond the file; e_shnum (0x3c) -> 0xffff.
	for i := 0x28; i < 0x30; i++ {
		src[i] = 0xff
	}
	src[0x3c], src[0x3d] = 0xff, 0xff
	bin := filepath.Join(t.TempDir(), "ratio-broken")
	if err := os.WriteFile(bin, src, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "5")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	time.Sleep(200 * time.Millisecond)
	p, _ := record(t, "--pid", strconv.Itoa(cmd.Process.Pid), "--frequency", "199", "--duration", "2")
	ss := samplesOf(p, cmd.Process.Pid)
	if total(ss) < 50 {
		t.Fatalf("%d samples of the malformed binary, want >= 50", total(ss))
	}
	var raw int64
	for _, s := range ss {
		leaf := s.Location[0]
		if leaf.Mapping != nil && strings.HasSuffix(leaf.Mapping.File, "ratio-broken") && leaf.Address != 0 {
			raw += count(s)
		}
	}
	if raw < total(ss)/2 {
		t.Errorf("%d of %d samples keep the malformed binary's mapping and address", raw, total(ss))
	}
}

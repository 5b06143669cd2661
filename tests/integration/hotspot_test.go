package integration

// Root BPF tests of the Java (HotSpot) frames (issue 21): a Java program with two methods doing
// 2:1 work (tests/runtime/hotspot/HotMethods.java), run without any JVM flag on every JDK of
// the machine, must be named Class.method with the right shares, and its thread's stacks must
// reach the Java main and the thread start through the JVM's native frames.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"go.opentelemetry.io/collector/pdata/pprofile"
)

type jdk struct{ name, home string }

// The JDKs on this machine (OpenJDK 17 from Debian, Temurin 25).
var jdks = []jdk{
	{"17", "/usr/lib/jvm/java-17-openjdk-amd64"},
	{"25", "/usr/lib/jvm/temurin-25-jdk-amd64"},
}

// compileJava builds the test programs with the oldest javac, so every JDK runs the classes.
func compileJava(t *testing.T) string {
	t.Helper()
	javac := filepath.Join(jdks[0].home, "bin", "javac")
	if _, err := os.Stat(javac); err != nil {
		t.Skipf("no JDK at %s (javac): the Java tests need it", jdks[0].home)
	}
	out := t.TempDir()
	r := run(t, 2*time.Minute, javac, "-d", out, "../runtime/hotspot/HotMethods.java",
		"../runtime/hotspot/ManyThreads.java")
	if r.code != 0 {
		t.Fatalf("javac: %s", r.stderr)
	}
	return out
}

// startJava runs HotMethods for secs seconds under the JDK at home (args: its depth).
func startJava(t *testing.T, home, classes string, secs int, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(filepath.Join(home, "bin", "java"), append([]string{"-cp", classes,
		"HotMethods", strconv.Itoa(secs)}, args...)...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

// mainThread: the samples of the thread running the Java main (the launcher names it "java";
// the JIT compilers and GC threads have their own names).
func mainThread(ss []*profile.Sample) []*profile.Sample {
	var out []*profile.Sample
	for _, s := range ss {
		if v := s.Label["thread.name"]; len(v) > 0 && v[0] == "java" {
			out = append(out, s)
		}
	}
	return out
}

// javaComplete: the stack holds the Java main and ends at the thread's start.
func javaComplete(names []string) bool {
	if len(names) == 0 || !contains(names, "HotMethods.main") {
		return false
	}
	last := names[len(names)-1]
	return last == "clone3" || last == "clone" || last == "start_thread"
}

func TestHotSpotTwoToOne(t *testing.T) {
	requireRoot(t)
	classes := compileJava(t)
	for _, j := range jdks {
		t.Run("JDK"+j.name, func(t *testing.T) {
			if _, err := os.Stat(filepath.Join(j.home, "bin", "java")); err != nil {
				t.Skipf("JDK %s not installed at %s", j.name, j.home)
			}
			cmd := startJava(t, j.home, classes, 60)
			time.Sleep(3 * time.Second) // JIT warm-up: both methods compiled
			p, r := record(t, "--pid", strconv.Itoa(cmd.Process.Pid), "--frequency", "999",
				"--duration", "8", "--format", "pprof", "-v")
			ss := mainThread(samplesOf(p, cmd.Process.Pid))
			if n := total(ss); n < 300 {
				t.Fatalf("only %d samples of the Java main thread: %s", n, r.stderr)
			}
			t.Logf("%d samples of the main thread", total(ss))
			checkShares(t, ss, map[string]float64{
				"HotMethods.heavy": 200.0 / 3,
				"HotMethods.light": 100.0 / 3,
			}, 3)
			if c := completeShare(t, ss, javaComplete); c < 99 {
				t.Errorf("%.2f%% of the main thread's stacks reach HotMethods.main and the "+
					"thread start, want >= 99%%", c)
			} else {
				t.Logf("%.2f%% complete stacks", c)
			}
			// the frames are named from the JVM (frame type hotspot), with a source file
			checkJavaFrames(t, p)
			if strings.Contains(r.stderr, "unknown JVM build") {
				t.Errorf("the JVM's layout was not recognised: %s", r.stderr)
			}
			checkOTLPFrameType(t, cmd.Process.Pid)
		})
	}
}

// TestHotSpotDeepStacks: 40 recursive Java calls above main (more frames than one run of the
// BPF program takes, interpreted, compiled and inlined mixed while the JIT works): complete,
// every call shown (inlined ones from the compiled code's scopes).
func TestHotSpotDeepStacks(t *testing.T) {
	requireRoot(t)
	classes := compileJava(t)
	for _, j := range jdks {
		t.Run("JDK"+j.name, func(t *testing.T) {
			if _, err := os.Stat(filepath.Join(j.home, "bin", "java")); err != nil {
				t.Skipf("JDK %s not installed at %s", j.name, j.home)
			}
			cmd := startJava(t, j.home, classes, 60, "40")
			time.Sleep(2 * time.Second)
			p, _ := record(t, "--pid", strconv.Itoa(cmd.Process.Pid), "--frequency", "499",
				"--duration", "4")
			ss := mainThread(samplesOf(p, cmd.Process.Pid))
			if total(ss) < 200 {
				t.Fatalf("only %d samples of the Java main thread", total(ss))
			}
			// down(40) .. down(0): 41 frames, whether interpreted, compiled, or inlined into
			// each other (C2 inlines one level of a recursion: its scopes give them back)
			deep, hot := 0, 0
			for _, s := range ss {
				if !hasFunc(s, "HotMethods.heavy") && !hasFunc(s, "HotMethods.light") {
					continue
				}
				hot += int(count(s))
				if countOf(funcNames(s), "HotMethods.down") == 41 {
					deep += int(count(s))
				}
			}
			if c := completeShare(t, ss, javaComplete); c < 99 {
				t.Errorf("%.2f%% complete stacks, want >= 99%%", c)
			}
			if share := 100 * float64(deep) / float64(hot); hot == 0 || share < 95 {
				t.Errorf("%.1f%% of the stacks in heavy/light hold the 41 HotMethods.down "+
					"frames, want >= 95%%", share)
			}
		})
	}
}

// TestHotSpotManyThreads: 8 Java threads (started by the JVM: Thread.run under thread_entry,
// thread_native_entry) doing the 2:1 work at once: every thread's stacks complete, the shares
// over all of them right.
func TestHotSpotManyThreads(t *testing.T) {
	requireRoot(t)
	classes := compileJava(t)
	for _, j := range jdks {
		t.Run("JDK"+j.name, func(t *testing.T) {
			if _, err := os.Stat(filepath.Join(j.home, "bin", "java")); err != nil {
				t.Skipf("JDK %s not installed at %s", j.name, j.home)
			}
			cmd := exec.Command(filepath.Join(j.home, "bin", "java"), "-cp", classes,
				"ManyThreads", "60", "8")
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			time.Sleep(3 * time.Second)
			p, _ := record(t, "--pid", strconv.Itoa(cmd.Process.Pid), "--frequency", "499",
				"--duration", "5")
			var ss []*profile.Sample
			threads := map[string]bool{}
			for _, s := range samplesOf(p, cmd.Process.Pid) {
				if v := s.Label["thread.name"]; len(v) > 0 && strings.HasPrefix(v[0], "worker-") {
					ss = append(ss, s)
					threads[v[0]] = true
				}
			}
			if total(ss) < 300 || len(threads) < 8 {
				t.Fatalf("%d samples of %d worker threads", total(ss), len(threads))
			}
			checkShares(t, ss, map[string]float64{
				"HotMethods.heavy": 200.0 / 3,
				"HotMethods.light": 100.0 / 3,
			}, 3)
			c := completeShare(t, ss, func(names []string) bool {
				return contains(names, "java.lang.Thread.run") && len(names) > 0 &&
					names[len(names)-1] == "clone3"
			})
			if c < 99 {
				t.Errorf("%.2f%% of the workers' stacks reach Thread.run and clone3, want >= 99%%",
					c)
			}
		})
	}
}

// TestHotSpotStartedAfter: a JVM started after the profiler (met while its tables are still
// being filled) is unwound once it is up: its hot methods named with the right shares, their
// stacks complete.
func TestHotSpotStartedAfter(t *testing.T) {
	requireRoot(t)
	classes := compileJava(t)
	out := filepath.Join(t.TempDir(), "after.pb.gz")
	rec, stderr := startRecording(t, "--duration", "12", "--frequency", "199", "--output", out)
	// 3 s of JIT warm-up under HotMethods.warm, left out of the shares: how long heavy() and
	// light() run interpreted depends on how busy the machine is (a sanitizer build of the
	// profiler takes a CPU while it reads the new JVM), not on the profiler's accuracy
	cmd := startJava(t, jdks[0].home, classes, 6, "0", "3")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("java: %v", err)
	}
	if err := rec.Wait(); err != nil {
		t.Fatalf("otelprof: %v: %s", err, <-stderr)
	}
	p := parseProfile(t, out)
	var hot []*profile.Sample
	var warm int64
	for _, s := range mainThread(samplesOf(p, cmd.Process.Pid)) {
		if hasFunc(s, "HotMethods.warm") {
			warm += count(s)
			continue
		}
		if hasFunc(s, "HotMethods.heavy") || hasFunc(s, "HotMethods.light") {
			hot = append(hot, s)
		}
	}
	if warm == 0 {
		t.Errorf("no samples under HotMethods.warm: the JVM started after the profiler was not named from its start")
	}
	if total(hot) < 200 {
		t.Fatalf("only %d samples in HotMethods.heavy/light: %s", total(hot), <-stderr)
	}
	checkShares(t, hot, map[string]float64{
		"HotMethods.heavy": 200.0 / 3,
		"HotMethods.light": 100.0 / 3,
	}, 3)
	if c := completeShare(t, hot, javaComplete); c < 99 {
		t.Errorf("%.2f%% complete stacks, want >= 99%%", c)
	}
}

// TestHotSpotUnknownBuild: a libjvm.so whose tables lack a field the walk needs (or that has no
// tables at all) is no JVM we can unwind: its frames stay native (named from its symbols), and
// `otelprof record -v` says why, counted.
func TestHotSpotUnknownBuild(t *testing.T) {
	requireRoot(t)
	for _, c := range []struct{ name, define, reason, says string }{
		{"missing field", "-DNO_KLASS_NAME", "hotspot: unknown_layout: ", "lack klass_name"},
		{"no tables", "-DNO_TABLES", "hotspot: no_vmstructs_symbols: ", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			src := "../runtime/hotspot/fakejvm.c"
			if r := run(t, time.Minute, "cc", "-O1", "-g", "-shared", "-fPIC", c.define, "-o",
				filepath.Join(dir, "libjvm.so"), src); r.code != 0 {
				t.Fatalf("cc: %s", r.stderr)
			}
			bin := filepath.Join(dir, "fakejvm")
			if r := run(t, time.Minute, "cc", "-O1", "-g", "-DMAIN", "-o", bin, src, "-L"+dir,
				"-ljvm", "-Wl,-rpath,"+dir); r.code != 0 {
				t.Fatalf("cc: %s", r.stderr)
			}
			cmd := exec.Command(bin, "30")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			time.Sleep(500 * time.Millisecond)
			p, r := record(t, "--pid", strconv.Itoa(cmd.Process.Pid), "--frequency", "199",
				"--duration", "2", "-v")
			if !strings.Contains(r.stderr, c.reason) || !strings.Contains(r.stderr, c.says) {
				t.Errorf("no %q (%q) in the recorder's output:\n%s", c.reason, c.says, r.stderr)
			}
			ss := samplesOf(p, cmd.Process.Pid)
			named := 0
			for _, s := range ss {
				if hasFunc(s, "fake_spin") && hasFunc(s, "main") {
					named += int(count(s))
				}
			}
			if total(ss) == 0 || float64(named) < 0.9*float64(total(ss)) {
				t.Errorf("%d of %d samples in fake_spin <- main (native frames kept)", named,
					total(ss))
			}
		})
	}
}

// checkOTLPFrameType: in OTLP, the Java frames carry profile.frame.type "jvm" (the semantic conventions' value, as upstream), the JVM's
// own (libjvm.so) "native".
func checkOTLPFrameType(t *testing.T, pid int) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "java.otlp")
	if r := run(t, 2*time.Minute, buildPath(t, "otelprof"), "record", "--pid", strconv.Itoa(pid),
		"--duration", "2", "--frequency", "199", "--format", "otlp", "--output", out); r.code != 0 {
		t.Fatalf("otelprof: %s", r.stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	pd, err := (&pprofile.ProtoUnmarshaler{}).UnmarshalProfiles(data)
	if err != nil {
		t.Fatalf("pdata cannot decode the OTLP: %v", err)
	}
	dict := pd.Dictionary()
	types := map[string]string{}
	for _, loc := range dict.LocationTable().All() {
		m, err := pprofile.FromAttributeIndices(dict.AttributeTable(), loc, dict)
		if err != nil {
			t.Fatal(err)
		}
		ft, _ := m.AsRaw()["profile.frame.type"].(string)
		for _, l := range loc.Lines().All() {
			fn := dict.FunctionTable().At(int(l.FunctionIndex()))
			types[dict.StringTable().At(int(fn.NameStrindex()))] = ft
		}
	}
	for fn, want := range map[string]string{"HotMethods.heavy": "jvm",
		"HotMethods.main": "jvm", "JavaCalls::call_helper": "native"} {
		if got, ok := types[fn]; !ok {
			t.Errorf("OTLP: no %s frame", fn)
		} else if got != want {
			t.Errorf("OTLP: %s has frame type %q, want %q", fn, got, want)
		}
	}
}

// checkJavaFrames: HotMethods.main has HotMethods.java as its file, the line of its call in
// the loop (where it waits for down() to return), its signature.
func checkJavaFrames(t *testing.T, p *profile.Profile) {
	t.Helper()
	src, err := os.ReadFile("../runtime/hotspot/HotMethods.java")
	if err != nil {
		t.Fatal(err)
	}
	want := int64(0)
	for i, l := range strings.Split(string(src), "\n") {
		if strings.Contains(l, "sum = down(sum, depth);") {
			want = int64(i + 1)
		}
	}
	for _, loc := range p.Location {
		for _, l := range loc.Line {
			if l.Function == nil || l.Function.Name != "HotMethods.main" {
				continue
			}
			if l.Function.Filename != "HotMethods.java" {
				t.Errorf("HotMethods.main: file %q, want HotMethods.java", l.Function.Filename)
			}
			if l.Line != want {
				t.Errorf("HotMethods.main: line %d, want %d (the call in its loop)", l.Line,
					want)
			}
			if !strings.Contains(l.Function.SystemName, "([Ljava/lang/String;)V") {
				t.Errorf("HotMethods.main: system name %q lacks its signature",
					l.Function.SystemName)
			}
			return
		}
	}
	t.Errorf("no HotMethods.main frame in the profile")
}

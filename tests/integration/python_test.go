package integration

// CPython frames (issue 15): every Python on the machine (pyenv 3.8-3.13 and Debian's stripped
// /usr/bin/python3.11) profiled on tests/runtime/python/work.py: a known 2:1 ratio of work
// recovered, Python frames down to <module> in (nearly) every sample, exact lines, native
// frames of a C extension under the Python function that called it, threads that do not hold
// the GIL, fork children, OTLP frame type "cpython", and versions we do not know (2.7, 3.6)
// left native with a counted reason.

import (
	"bufio"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
)

// pythons returns name -> interpreter path of the Pythons to test, skipping the missing ones.
func pythons(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, v := range []string{"3.8", "3.9", "3.10", "3.11", "3.12", "3.13"} {
		m, _ := filepath.Glob("/root/.pyenv/versions/" + v + ".*/bin/python" + v)
		if len(m) > 0 {
			out[v] = m[0]
		}
	}
	if _, err := os.Stat("/usr/bin/python3.11"); err == nil {
		out["debian-3.11"] = "/usr/bin/python3.11"
	}
	return out
}

func workScript(t *testing.T) string {
	return filepath.Join(repoRoot(t), "tests", "runtime", "python", "work.py")
}

// hotLines maps each "# HOT:name" marker of work.py to its line numbers.
func hotLines(t *testing.T) map[string]map[int64]bool {
	t.Helper()
	b, err := os.ReadFile(workScript(t))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`# HOT:(\w+)`)
	out := map[string]map[int64]bool{}
	for i, l := range strings.Split(string(b), "\n") {
		if m := re.FindStringSubmatch(l); m != nil {
			if out[m[1]] == nil {
				out[m[1]] = map[int64]bool{}
			}
			out[m[1]][int64(i+1)] = true
		}
	}
	return out
}

// startPython runs work.py MODE with @py for long enough and returns it and the lines it
// printed before "ready" (included); more lines arrive on the channel.
func startPython(t *testing.T, py, mode string) (*exec.Cmd, int, <-chan string) {
	t.Helper()
	cmd := exec.Command(py, workScript(t), mode, "60")
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	lines := make(chan string, 16)
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() || !strings.HasPrefix(sc.Text(), "ready ") {
		t.Fatalf("%s work.py %s did not start: %q", py, mode, sc.Text())
	}
	pid := atoi(t, strings.TrimPrefix(sc.Text(), "ready "))
	go func() {
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	return cmd, pid, lines
}

// pyFrame is one frame of a sample as the tests look at it.
type pyFrame struct {
	name, file string
	line       int64
}

func frames(s *profile.Sample) []pyFrame {
	var out []pyFrame
	for _, loc := range s.Location {
		for _, l := range loc.Line {
			if l.Function != nil {
				out = append(out, pyFrame{l.Function.Name, l.Function.Filename, l.Line})
			}
		}
	}
	return out
}

func isWork(f pyFrame) bool { return strings.HasSuffix(f.file, "work.py") }

// pyStack is the work.py frames of a sample, leaf first.
func pyStack(s *profile.Sample) []pyFrame {
	var out []pyFrame
	for _, f := range frames(s) {
		if isWork(f) {
			out = append(out, f)
		}
	}
	return out
}

// recordPython records the pids for @secs seconds at 1000 Hz, once more for longer when the
// machine was too busy to give @min samples of pids[0].
func recordPython(t *testing.T, min int64, secs int, pids ...int) (*profile.Profile, string) {
	t.Helper()
	for try := 0; ; try++ {
		args := []string{"--frequency", "1000", "--duration", strconv.Itoa(secs * (try + 1)), "-v"}
		for _, p := range pids {
			args = append(args, "--pid", strconv.Itoa(p))
		}
		p, r := record(t, args...)
		if total(samplesOf(p, pids[0])) >= min || try == 1 {
			return p, r.stderr
		}
	}
}

// TestPythonVersions: the 2:1 workload on every Python.
func TestPythonVersions(t *testing.T) {
	requireRoot(t)
	hot := hotLines(t)
	for name, py := range pythons(t) {
		t.Run(name, func(t *testing.T) {
			_, pid, _ := startPython(t, py, "ab")
			p, stderr := recordPython(t, 1000, 3, pid)
			ss := samplesOf(p, pid)
			n := total(ss)
			if n < 1000 {
				t.Fatalf("%d samples of the workload, want >= 1000 (machine too busy?)", n)
			}
			var withModule, a, b, leafN, leafHot, callN, callHot int64
			for _, s := range ss {
				st := pyStack(s)
				if len(st) > 0 && st[len(st)-1].name == "<module>" {
					withModule += count(s)
				}
				for i, f := range st {
					switch f.name {
					case "work_a", "work_b":
						if f.name == "work_a" {
							a += count(s)
						} else {
							b += count(s)
						}
						callN += count(s)
						m := map[string]string{"work_a": "call_a", "work_b": "call_b"}[f.name]
						if hot[m][f.line] {
							callHot += count(s)
						}
					case "leaf":
						if i == 0 {
							leafN += count(s)
							if hot["loop"][f.line] {
								leafHot += count(s)
							}
						}
					}
				}
			}
			share := 100 * float64(a) / float64(a+b)
			t.Logf("%s: %d samples, %.1f%% with <module>, work_a %.1f%% of work_a+work_b (want 66.7), callers on their call line %d/%d, leaf on its loop %d/%d",
				py, n, 100*float64(withModule)/float64(n), share, callHot, callN, leafHot, leafN)
			if float64(withModule) < 0.99*float64(n) {
				t.Errorf("%d of %d samples have Python frames down to <module>, want >= 99%%", withModule, n)
			}
			if math.Abs(share-200.0/3) > 3 {
				t.Errorf("work_a has %.1f%% of work_a+work_b, want 66.7 +- 3", share)
			}
			if callN == 0 || float64(callHot) < 0.98*float64(callN) {
				t.Errorf("work_a/work_b frames on the line of their call: %d of %d, want >= 98%%", callHot, callN)
			}
			if leafN == 0 || float64(leafHot) < 0.95*float64(leafN) {
				t.Errorf("leaf frames on its loop lines: %d of %d, want >= 95%%", leafHot, leafN)
			}
			if !strings.Contains(stderr, "python: ") || strings.Contains(stderr, " 0 eval-loop frames named") {
				t.Errorf("record -v does not report Python frames: %s", stderr)
			}
		})
	}
}

// nativeUnder checks that the samples of @ss with a native frame matching @native have the
// Python function @caller as the first Python frame above it, and @root as the last Python
// frame (of any file; a suffix: 3.11+ names methods by their qualified name).
func nativeUnder(t *testing.T, ss []*profile.Sample, native *regexp.Regexp, caller, root string) {
	t.Helper()
	var with, ok int64
	for _, s := range ss {
		fr := frames(s)
		at := -1
		for i, f := range fr {
			if !isWork(f) && native.MatchString(f.name) {
				at = i
				break
			}
		}
		if at < 0 {
			continue
		}
		with += count(s)
		var above []pyFrame
		for _, f := range fr[at:] {
			if strings.HasSuffix(f.file, ".py") {
				above = append(above, f)
			}
		}
		if len(above) > 0 && above[0].name == caller && strings.HasSuffix(above[len(above)-1].name, root) {
			ok += count(s)
		}
	}
	t.Logf("%d samples in %v, %d of them under %s down to %s", with, native, ok, caller, root)
	if with < 50 {
		t.Fatalf("only %d samples in native code matching %v", with, native)
	}
	if float64(ok) < 0.98*float64(with) {
		t.Errorf("%d of %d samples in %v sit under %s ... %s, want >= 98%%", ok, with, native, caller, root)
	}
}

// TestPythonNativeExtension: zlib's deflate under the Python function that called
// zlib.compress, on every version.
func TestPythonNativeExtension(t *testing.T) {
	requireRoot(t)
	for name, py := range pythons(t) {
		t.Run(name, func(t *testing.T) {
			_, pid, _ := startPython(t, py, "zlib")
			p, _ := recordPython(t, 300, 2, pid)
			nativeUnder(t, samplesOf(p, pid), regexp.MustCompile(`^(deflate|longest_match|compress)`), "handler", "<module>")
		})
	}
}

// TestPythonThreads: a thread hashing in OpenSSL without the GIL keeps its own Python frames
// while the main thread runs Python.
func TestPythonThreads(t *testing.T) {
	requireRoot(t)
	for _, v := range []string{"3.9", "3.11", "3.13"} {
		py := pythons(t)[v]
		if py == "" {
			t.Logf("no Python %s", v)
			continue
		}
		t.Run(v, func(t *testing.T) {
			_, pid, _ := startPython(t, py, "threads")
			p, _ := recordPython(t, 300, 3, pid)
			var main, other []*profile.Sample
			for _, s := range samplesOf(p, pid) {
				if tid, ok := s.NumLabel["tid"]; ok && len(tid) > 0 && tid[0] != int64(pid) {
					other = append(other, s)
				} else {
					main = append(main, s)
				}
			}
			nativeUnder(t, other, regexp.MustCompile(`(?i)sha256`), "hash_worker", "_bootstrap")
			sh := shareByStack(main, "work_a", "hash_worker")
			if sh["work_a"] < 30 || sh["hash_worker"] > 1 {
				t.Errorf("main thread: work_a on %.1f%%, hash_worker on %.1f%% of its samples", sh["work_a"], sh["hash_worker"])
			}
		})
	}
}

// TestPythonFork: a child made by os.fork is named like its parent.
func TestPythonFork(t *testing.T) {
	requireRoot(t)
	py := pythons(t)["3.12"]
	if py == "" {
		t.Skip("skipped: no Python 3.12 under /root/.pyenv/versions")
	}
	_, pid, lines := startPython(t, py, "fork")
	var child int
	select {
	case l := <-lines:
		child = atoi(t, strings.TrimPrefix(l, "child "))
	case <-time.After(30 * time.Second):
		t.Fatal("no child pid from work.py fork")
	}
	p, _ := recordPython(t, 300, 3, child, pid)
	ss := samplesOf(p, child)
	sh := shareByStack(ss, "child_work", "<module>")
	t.Logf("child %d: %d samples, child_work %.1f%%, <module> %.1f%%", child, total(ss), sh["child_work"], sh["<module>"])
	if total(ss) < 100 || sh["child_work"] < 95 || sh["<module>"] < 99 {
		t.Errorf("child: child_work on %.1f%%, <module> on %.1f%% of %d samples, want >= 95 and 99", sh["child_work"], sh["<module>"], total(ss))
	}
}

// TestPythonUnknownVersion: Pythons whose layout we do not carry (2.7, 3.6) keep native frames
// and are counted.
func TestPythonUnknownVersion(t *testing.T) {
	requireRoot(t)
	found := false
	for _, v := range []string{"2.7", "3.6"} {
		m, _ := filepath.Glob("/root/.pyenv/versions/" + v + ".*/bin/python" + v)
		if len(m) == 0 {
			continue
		}
		found = true
		t.Run(v, func(t *testing.T) {
			_, pid, _ := startPython(t, m[0], "ab")
			p, stderr := recordPython(t, 100, 2, pid)
			ss := samplesOf(p, pid)
			re := regexp.MustCompile(`python: \d+ processes unwound, (\d+) of an unknown version`)
			mm := re.FindStringSubmatch(stderr)
			if mm == nil || mm[1] != "1" {
				t.Errorf("record -v does not count the one process of an unknown version once: %s", stderr)
			}
			var named, evalNative int64
			for _, s := range ss {
				if len(pyStack(s)) > 0 {
					named += count(s)
				}
				if hasFunc(s, "PyEval_EvalFrameEx") || hasFunc(s, "_PyEval_EvalFrameDefault") {
					evalNative += count(s)
				}
			}
			if named != 0 || float64(evalNative) < 0.9*float64(total(ss)) {
				t.Errorf("%d samples: %d with Python frames (want 0), %d with the native eval loop", total(ss), named, evalNative)
			}
		})
	}
	if !found {
		t.Skip("skipped: neither Python 2.7 nor 3.6 under /root/.pyenv/versions")
	}
}

// TestPythonOTLP: Python locations carry frame type "cpython", file and line in OTLP.
func TestPythonOTLP(t *testing.T) {
	requireRoot(t)
	py := pythons(t)["3.11"]
	if py == "" {
		t.Skip("skipped: no Python 3.11")
	}
	_, pid, _ := startPython(t, py, "ab")
	out := filepath.Join(t.TempDir(), "out.otlp")
	r := run(t, 3*time.Minute, buildPath(t, "otelprof"), "record", "--format", "otlp", "--output", out,
		"--frequency", "199", "--duration", "2", "--pid", strconv.Itoa(pid))
	if r.code != 0 {
		t.Fatalf("otelprof: exit %d: %s", r.code, r.stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	req := pprofileotlp.NewExportRequest()
	if err := req.UnmarshalProto(data); err != nil {
		t.Fatalf("pdata cannot decode the OTLP output: %v", err)
	}
	checkPythonOTLP(t, []pprofile.Profiles{req.Profiles()})
}

// checkPythonOTLP checks that work.py's functions are in locations of frame type cpython with
// their file and a line.
func checkPythonOTLP(t *testing.T, batches []pprofile.Profiles) {
	t.Helper()
	seen := map[string]string{}
	for _, pd := range batches {
		dict := pd.Dictionary()
		strs := dict.StringTable()
		for _, loc := range dict.LocationTable().All() {
			if loc.Lines().Len() == 0 {
				continue
			}
			ln := loc.Lines().At(0)
			fn := dict.FunctionTable().At(int(ln.FunctionIndex()))
			name := strs.At(int(fn.NameStrindex()))
			file := strs.At(int(fn.FilenameStrindex()))
			a, err := pprofile.FromAttributeIndices(dict.AttributeTable(), loc, dict)
			if err != nil {
				t.Fatal(err)
			}
			ft, _ := a.AsRaw()["profile.frame.type"].(string)
			if strings.HasSuffix(file, "work.py") {
				seen[name] = ft
				if ln.Line() <= 0 {
					t.Errorf("%s: line %d", name, ln.Line())
				}
			}
		}
	}
	for _, f := range []string{"leaf", "work_a", "work_b", "<module>"} {
		if seen[f] != "cpython" {
			t.Errorf("%s: frame type %q, want cpython (seen %v)", f, seen[f], seen)
		}
	}
}

// TestPythonStartedAfter: a Python started while the whole system is being recorded is found
// when its libpython is mapped, and named like one started before.
func TestPythonStartedAfter(t *testing.T) {
	requireRoot(t)
	py := pythons(t)["3.11"]
	if py == "" {
		t.Skip("skipped: no Python 3.11")
	}
	out := filepath.Join(t.TempDir(), "after.pb.gz")
	rec, rest := startRecording(t, "--duration", "5", "--frequency", "999", "--output", out)
	_, pid, _ := startPython(t, py, "ab")
	if err := rec.Wait(); err != nil {
		t.Fatalf("otelprof record: %v: %s", err, <-rest)
	}
	// the native unwinder's own warm-up (its tables for a new library load within the
	// first few hundred ms) gives short stacks: judged are those that reach Py_RunMain
	var ss []*profile.Sample
	all := samplesOf(parseProfile(t, out), pid)
	for _, s := range all {
		if hasFunc(s, "Py_RunMain") || hasFunc(s, "<module>") {
			ss = append(ss, s)
		}
	}
	sh := shareByStack(ss, "<module>", "leaf")
	t.Logf("%d samples (%d complete) of the Python started after the recorder: <module> %.1f%%, leaf %.1f%%", total(all), total(ss), sh["<module>"], sh["leaf"])
	if total(ss) < 100 || sh["<module>"] < 95 || sh["leaf"] < 85 {
		t.Errorf("%d complete samples, <module> on %.1f%%, leaf on %.1f%%: want >= 100, 95, 85", total(ss), sh["<module>"], sh["leaf"])
	}
}

// TestPythonExec: a process that execs into Python (same pid) while recorded is named after
// the exec.
func TestPythonExec(t *testing.T) {
	requireRoot(t)
	py := pythons(t)["3.13"]
	if py == "" {
		t.Skip("skipped: no Python 3.13")
	}
	gate := filepath.Join(t.TempDir(), "go")
	sh := exec.Command("sh", "-c", `while [ ! -e "$2" ]; do :; done; exec "$0" "$1" ab 60 >/dev/null`, py, workScript(t), gate)
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = sh.Process.Kill()
		_ = sh.Wait()
	})
	out := filepath.Join(t.TempDir(), "exec.pb.gz")
	rec, rest := startRecording(t, "--pid", strconv.Itoa(sh.Process.Pid), "--duration", "5", "--frequency", "999", "--output", out)
	time.Sleep(500 * time.Millisecond)
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := rec.Wait(); err != nil {
		t.Fatalf("otelprof record: %v: %s", err, <-rest)
	}
	var py3, shell int64
	for _, s := range samplesOf(parseProfile(t, out), sh.Process.Pid) {
		if hasFunc(s, "<module>") {
			py3 += count(s)
		} else if !hasFunc(s, "Py_RunMain") && !hasFunc(s, "_PyEval_EvalFrameDefault") {
			shell += count(s)
		}
	}
	t.Logf("pid %d: %d samples before the exec (the shell), %d with Python frames after it", sh.Process.Pid, shell, py3)
	if shell < 50 || py3 < 200 {
		t.Errorf("%d samples of the shell before the exec, %d with Python frames after it: want >= 50 and 200", shell, py3)
	}
}

// TestPythonCollector: through the collector (ebpfprofiler receiver, file exporter): Python
// frames with frame type cpython, file and line, and the 2:1 ratio.
func TestPythonCollector(t *testing.T) {
	requireRoot(t)
	py := pythons(t)["3.12"]
	if py == "" {
		t.Skip("skipped: no Python 3.12")
	}
	_, pid, _ := startPython(t, py, "ab")
	cfg, out := fileCollectorConfig(t, pid, "samples_per_second: 499")
	col := startCollector(t, "collector", nil, "--config", cfg, "--feature-gates=service.profilesSupport")
	var batches []pprofile.Profiles
	var pv *procView
	waitUntil(t, 90*time.Second, "1000 samples of the workload in the file", func() bool {
		var err error
		batches, err = readProtoFile(out)
		if err != nil {
			t.Fatalf("file exporter output: %v", err)
		}
		pv = byPid(t, batches)[int64(pid)]
		return pv != nil && pv.samples >= 1000
	}, col)
	col.stop(t, 30*time.Second)
	checkPythonOTLP(t, batches)
	a, b := pv.functions["work_a"], pv.functions["work_b"]
	share := 100 * float64(a) / float64(a+b)
	t.Logf("%d samples; <module> on %d, work_a %.1f%% of work_a+work_b", pv.samples, pv.functions["<module>"], share)
	if math.Abs(share-200.0/3) > 3 {
		t.Errorf("work_a has %.1f%% of work_a+work_b, want 66.7 +- 3", share)
	}
	if float64(pv.functions["<module>"]) < 0.99*float64(pv.samples) {
		t.Errorf("<module> on %d of %d samples, want >= 99%%", pv.functions["<module>"], pv.samples)
	}
}

// TestPythonOffCPU: off-CPU stacks (taken at sched_switch) name the Python function that
// sleeps, on its line.
func TestPythonOffCPU(t *testing.T) {
	requireRoot(t)
	hot := hotLines(t)
	for _, v := range []string{"3.9", "3.12"} {
		py := pythons(t)[v]
		if py == "" {
			t.Logf("no Python %s", v)
			continue
		}
		t.Run(v, func(t *testing.T) {
			_, pid, _ := startPython(t, py, "sleep")
			p, _ := record(t, "--pid", strconv.Itoa(pid), "--duration", "3", "--off-cpu")
			vi := -1
			for i, st := range p.SampleType {
				if st.Type == "off_cpu" {
					vi = i
				}
			}
			if vi < 0 {
				t.Fatalf("no off_cpu sample type in %v", p.SampleType)
			}
			var all, named int64
			for _, s := range samplesOf(p, pid) {
				all += s.Value[vi]
				st := pyStack(s)
				if len(st) >= 2 && st[0].name == "sleeper" && hot["sleep"][st[0].line] && st[len(st)-1].name == "<module>" {
					named += s.Value[vi]
				}
			}
			t.Logf("off-CPU time %.2f s, %.1f%% of it in sleeper on its line down to <module>", float64(all)/1e9, 100*float64(named)/float64(all))
			if all < 1e9 || float64(named) < 0.95*float64(all) {
				t.Errorf("%.1f%% of %.2f s off the CPU in sleeper ... <module>, want >= 95%% of >= 1 s", 100*float64(named)/float64(all), float64(all)/1e9)
			}
		})
	}
}

// TestPythonChainMarker: a script whose frames are pushed and popped all the time. Samples
// taken while its frame chain and its native stack disagree keep the eval-loop frames the
// chain could not replace native, counted, with a "[python: ...]" marker directly above the
// first of them; no Python frame follows a marker, and every Python frame is the script's.
func TestPythonChainMarker(t *testing.T) {
	requireRoot(t)
	pys := pythons(t)
	if len(pys) == 0 {
		t.Skip("skipped: no CPython 3.8-3.13 under /root/.pyenv/versions or /usr/bin/python3.11")
	}
	known := map[string]bool{"churn": true, "churn_loop": true, "main": true, "<module>": true}
	for v, py := range pys {
		t.Run(v, func(t *testing.T) {
			_, pid, _ := startPython(t, py, "churn")
			p, stderr := recordPython(t, 1000, 3, pid)
			ss := samplesOf(p, pid)
			m := regexp.MustCompile(`(\d+) read failed, (\d+) chain ended`).FindStringSubmatch(stderr)
			if m == nil {
				t.Fatalf("record -v prints no Python counters: %s", stderr)
			}
			var marked, named int64
			for _, s := range ss {
				fs := frames(s)
				seen := false
				for i, loc := range s.Location {
					for _, l := range loc.Line {
						if l.Function == nil {
							continue
						}
						f := pyFrame{l.Function.Name, l.Function.Filename, l.Line}
						if strings.HasPrefix(f.name, "[python: ") {
							if f.name != "[python: frame chain changed during the walk]" &&
								f.name != "[python: frame chain unreadable]" {
								t.Errorf("unknown marker %q", f.name)
							}
							// the eval-loop frame follows, unless the stack hit the depth limit there
							if i+1 >= len(s.Location) || !locHas(s.Location[i+1], "_PyEval_EvalFrameDefault") &&
								!locHas(s.Location[i+1], "[truncated]") {
								t.Errorf("marker not directly above a native eval-loop frame: %v", fs)
							}
							if seen {
								t.Errorf("two markers in one stack: %v", fs)
							}
							seen = true
							marked += count(s)
						} else if isWork(f) {
							if !known[f.name] {
								t.Errorf("Python frame %q the script does not have: %v", f.name, fs)
							}
							if seen {
								t.Errorf("Python frame %q after a marker: %v", f.name, fs)
							}
						}
					}
				}
				if len(pyStack(s)) > 0 {
					named += count(s)
				}
			}
			t.Logf("%d samples, %d with Python frames, %d with a marker; read failed %s, chain ended %s",
				total(ss), named, marked, m[1], m[2])
			// up to 3.10 every Python call enters the eval loop again: a sample between the
			// C call and the push of the new frame finds one loop frame more than frames
			if minor := pyMinor(v); minor <= 10 && atoi(t, m[2]) == 0 {
				t.Errorf("3.%d: no eval-loop frame counted as left native for a chain ended early", minor)
			}
			if atoi(t, m[1])+atoi(t, m[2]) > 0 && marked == 0 {
				t.Errorf("eval-loop frames left native for a chain that changed or failed, but no marker")
			}
			if float64(named) < 0.9*float64(total(ss)) {
				t.Errorf("%d of %d samples with Python frames", named, total(ss))
			}
		})
	}
}

// locHas: a location with a line (inlined ones included) in function @name.
func locHas(loc *profile.Location, name string) bool {
	for _, l := range loc.Line {
		if l.Function != nil && l.Function.Name == name {
			return true
		}
	}
	return false
}

// pyMinor: the minor version of a pythons() name ("3.10", "debian-3.11").
func pyMinor(v string) int {
	n, _ := strconv.Atoi(v[strings.LastIndex(v, ".")+1:])
	return n
}

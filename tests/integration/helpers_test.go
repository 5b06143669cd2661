package integration

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

// buildDir is where `make` put the binaries: $BUILD, else ../../build.
func buildDir(t *testing.T) string {
	t.Helper()
	d := os.Getenv("BUILD")
	if d == "" {
		d = "../../build"
	}
	abs, err := filepath.Abs(d)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

func buildPath(t *testing.T, rel string) string {
	t.Helper()
	p := filepath.Join(buildDir(t), rel)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s is missing: run `make test-bins` first (%v)", p, err)
	}
	return p
}

// requireRoot skips a test that loads BPF programs when not running as root.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipped: loading BPF programs needs root (CI runs as root)")
	}
}

type result struct {
	stdout, stderr string
	code           int
}

// run executes a command with a timeout and returns its output and exit code.
func run(t *testing.T, timeout time.Duration, name string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("%s %v did not finish within %v; stderr: %s", name, args, timeout, errb.String())
	}
	return result{out.String(), errb.String(), code}
}

// startWorkload starts build/workloads/NAME with args and stops it at the end of the test.
func startWorkload(t *testing.T, name string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(buildPath(t, "workloads/"+name), args...)
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

// startRecording starts `otelprof record --verbose ARGS...` and returns once sampling is
// attached (the "recording" line on stderr). All of stderr (the lines up to "recording"
// included) arrives on the channel when the recorder ends; the recorder is killed at the end
// of the test if still running.
func startRecording(t *testing.T, args ...string) (*exec.Cmd, <-chan string) {
	t.Helper()
	cmd := exec.Command(buildPath(t, "otelprof"), append([]string{"record", "--verbose"}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	br := bufio.NewReader(stderr)
	var lines []string
	for {
		l, err := br.ReadString('\n')
		lines = append(lines, l)
		if strings.Contains(l, "recording") {
			break
		}
		if err != nil {
			t.Fatalf("otelprof ended before recording: %s", strings.Join(lines, ""))
		}
	}
	rest := make(chan string, 1)
	early := strings.Join(lines, "")
	go func() { b, _ := io.ReadAll(br); rest <- early + string(b) }()
	return cmd, rest
}

// record runs `otelprof record` with args and returns the parsed pprof output.
func record(t *testing.T, args ...string) (*profile.Profile, result) {
	t.Helper()
	return recordTo(t, filepath.Join(t.TempDir(), "out.pb.gz"), args...)
}

// recordTo is record writing to the file out (kept for `go tool pprof` or OTLP checks).
func recordTo(t *testing.T, out string, args ...string) (*profile.Profile, result) {
	t.Helper()
	all := append([]string{"record", "--output", out}, args...)
	r := run(t, 3*time.Minute, buildPath(t, "otelprof"), all...)
	if r.code != 0 {
		t.Fatalf("otelprof %v: exit %d: %s", all, r.code, r.stderr)
	}
	checkWithGoToolPprof(t, out)
	p := parseProfile(t, out)
	return p, r
}

// parseProfile reads a (gzipped) pprof file with github.com/google/pprof and checks it is
// valid.
func parseProfile(t *testing.T, path string) *profile.Profile {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	if err := p.CheckValid(); err != nil {
		t.Fatalf("invalid profile %s: %v", path, err)
	}
	return p
}

// checkWithGoToolPprof has a client we did not write read the file.
func checkWithGoToolPprof(t *testing.T, path string) string {
	t.Helper()
	r := run(t, 2*time.Minute, "go", "tool", "pprof", "-top", "-nodecount=30", path)
	if r.code != 0 {
		t.Fatalf("go tool pprof -top %s: exit %d: %s", path, r.code, r.stderr)
	}
	return r.stdout
}

// samplesOf returns the samples whose pid label is pid.
func samplesOf(p *profile.Profile, pid int) []*profile.Sample {
	var out []*profile.Sample
	for _, s := range p.Sample {
		if v, ok := s.NumLabel["pid"]; ok && len(v) > 0 && v[0] == int64(pid) {
			out = append(out, s)
		}
	}
	return out
}

func count(s *profile.Sample) int64 { return s.Value[0] }

func total(ss []*profile.Sample) int64 {
	var n int64
	for _, s := range ss {
		n += count(s)
	}
	return n
}

// funcNames lists the function names of a sample's stack, leaf first, inlined frames included.
func funcNames(s *profile.Sample) []string {
	var names []string
	for _, loc := range s.Location {
		for _, l := range loc.Line {
			if l.Function != nil {
				names = append(names, l.Function.Name)
			}
		}
	}
	return names
}

// hasFunc reports whether any frame of the sample is the function name.
func hasFunc(s *profile.Sample, name string) bool {
	for _, n := range funcNames(s) {
		if n == name {
			return true
		}
	}
	return false
}

// shareByStack returns, for each name, the share (0..100) of samples with that function on
// the stack.
func shareByStack(ss []*profile.Sample, names ...string) map[string]float64 {
	res := map[string]float64{}
	tot := float64(total(ss))
	for _, n := range names {
		var c int64
		for _, s := range ss {
			if hasFunc(s, n) {
				c += count(s)
			}
		}
		if tot > 0 {
			res[n] = 100 * float64(c) / tot
		}
	}
	return res
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

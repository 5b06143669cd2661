package integration

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestCLIHelp: both help texts document every option.
func TestCLIHelp(t *testing.T) {
	cli := buildPath(t, "otelprof")
	r := run(t, 10*time.Second, cli, "--help")
	if r.code != 0 || !strings.Contains(r.stdout, "record") {
		t.Errorf("otelprof --help: exit %d, output %q", r.code, r.stdout)
	}
	r = run(t, 10*time.Second, cli, "record", "--help")
	for _, opt := range []string{"--pid", "--duration", "--frequency", "--output", "--format", "--no-kernel", "--no-symbolize"} {
		if !strings.Contains(r.stdout, opt) {
			t.Errorf("otelprof record --help does not document %s", opt)
		}
	}
	if r.code != 0 {
		t.Errorf("otelprof record --help: exit %d", r.code)
	}
}

// TestCLIUsageErrors: bad usage exits 2 with one line naming the problem, before any BPF.
func TestCLIUsageErrors(t *testing.T) {
	cli := buildPath(t, "otelprof")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{}, "usage"},
		{[]string{"frobnicate"}, "unknown command 'frobnicate'"},
		{[]string{"record", "--bogus"}, "bogus"},
		{[]string{"record", "--frequency", "0"}, "invalid frequency '0'"},
		{[]string{"record", "--frequency", "1000000"}, "invalid frequency '1000000'"},
		{[]string{"record", "--frequency", "fast"}, "invalid frequency 'fast'"},
		{[]string{"record", "--duration", "abc"}, "invalid duration 'abc'"},
		{[]string{"record", "--duration", "-1"}, "invalid duration '-1'"},
		{[]string{"record", "--pid", "-5"}, "invalid pid '-5'"},
		{[]string{"record", "--pid", "12x"}, "invalid pid '12x'"},
		{[]string{"record", "--format", "json"}, "invalid format 'json'"},
		{[]string{"record", "extra"}, "unexpected argument 'extra'"},
	}
	for _, c := range cases {
		r := run(t, 10*time.Second, cli, c.args...)
		if r.code != 2 {
			t.Errorf("otelprof %v: exit %d, want 2 (stderr %q)", c.args, r.code, r.stderr)
		}
		if !strings.Contains(r.stderr, c.want) {
			t.Errorf("otelprof %v: stderr %q does not contain %q", c.args, r.stderr, c.want)
		}
	}
}

// TestCLINoSuchPid: a pid that does not exist is a clear runtime error.
func TestCLINoSuchPid(t *testing.T) {
	cli := buildPath(t, "otelprof")
	r := run(t, 30*time.Second, cli, "record", "--pid", "4194000", "--duration", "1",
		"--output", t.TempDir()+"/x.pb.gz")
	if r.code != 1 || !strings.Contains(r.stderr, "no such process") || !strings.Contains(r.stderr, "4194000") {
		t.Errorf("exit %d, stderr %q; want 1 and 'no such process: pid 4194000'", r.code, r.stderr)
	}
}

// TestCLIOutputNotWritable: the output path is checked before recording starts.
func TestCLIOutputNotWritable(t *testing.T) {
	cli := buildPath(t, "otelprof")
	r := run(t, 30*time.Second, cli, "record", "--duration", "600", "--output", "/nonexistent-dir/x.pb.gz")
	if r.code != 1 || !strings.Contains(r.stderr, "cannot write output file /nonexistent-dir/x.pb.gz") {
		t.Errorf("exit %d, stderr %q; want 1 and 'cannot write output file'", r.code, r.stderr)
	}
}

// TestCLINotPrivileged: without root or capabilities the message names what is missing.
func TestCLINotPrivileged(t *testing.T) {
	cli := buildPath(t, "otelprof")
	// a world-writable directory of its own, so the unprivileged user can create the output
	out, err := os.MkdirTemp("", "otelprof-noroot-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(out) })
	var cmd *exec.Cmd
	if os.Geteuid() == 0 {
		if _, err := exec.LookPath("setpriv"); err != nil {
			t.Fatal("setpriv (util-linux) is needed to drop root: run scripts/install-deps.sh")
		}
		if err := os.Chmod(out, 0o777); err != nil {
			t.Fatal(err)
		}
		cmd = exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
			"--inh-caps=-all", "--bounding-set=-all", cli, "record", "--duration", "1", "--output", out+"/x.pb.gz")
	} else {
		cmd = exec.Command(cli, "record", "--duration", "1", "--output", out+"/x.pb.gz")
	}
	b, err := cmd.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 1 {
		t.Fatalf("unprivileged record: %v, want exit 1; output %q", err, b)
	}
	for _, want := range []string{"CAP_BPF", "CAP_PERFMON", "run as root"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("output %q does not name %s", b, want)
		}
	}
	if _, err := os.Stat(out + "/x.pb.gz"); err == nil {
		t.Errorf("a failed recording left an output file behind")
	}
}

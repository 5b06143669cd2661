package integration

// Least privilege (issue 7): `otelprof record` as an unprivileged uid holding only the
// capabilities it documents, and each missing one named; target files read through the
// target's own mount namespace, never a host path of the same name.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

// runWithCaps runs otelprof record as uid/gid 65534 with exactly @caps (setpriv ambient
// capabilities) and returns the exit code, stderr and the profile if one was written.
func runWithCaps(t *testing.T, caps []string, args ...string) (int, string, *profile.Profile) {
	t.Helper()
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Fatal("setpriv (util-linux) is needed to drop root: run scripts/install-deps.sh")
	}
	dir, err := os.MkdirTemp("", "otelprof-caps-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.pb.gz")
	set := "-all"
	for _, c := range caps {
		set += ",+" + c
	}
	all := append([]string{"--reuid=65534", "--regid=65534", "--clear-groups",
		"--inh-caps=" + set, "--ambient-caps=" + set, "--bounding-set=" + set,
		buildPath(t, "otelprof"), "record", "--output", out}, args...)
	r := run(t, 2*time.Minute, "setpriv", all...)
	var p *profile.Profile
	if f, err := os.Open(out); err == nil {
		defer f.Close()
		if p, err = profile.Parse(f); err != nil {
			t.Fatalf("parse: %v", err)
		}
	}
	return r.code, r.stderr, p
}

var allCaps = []string{"bpf", "perfmon", "sys_ptrace", "dac_read_search", "syslog"}

// TestPrivilegeDocumentedCaps: CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH and
// CAP_SYSLOG, no root (perf_event_paranoid as the host has it): a complete profile of a root
// process - user functions named through its binary, kernel frames named through kallsyms.
func TestPrivilegeDocumentedCaps(t *testing.T) {
	requireRoot(t)
	paranoid, _ := os.ReadFile("/proc/sys/kernel/perf_event_paranoid")
	w := startWorkload(t, "syscalls", "10")
	time.Sleep(200 * time.Millisecond)
	code, stderr, p := runWithCaps(t, allCaps, "--pid", strconv.Itoa(w.Process.Pid),
		"--frequency", "199", "--duration", "2")
	if code != 0 || p == nil {
		t.Fatalf("record with the documented capabilities (perf_event_paranoid=%s): exit %d: %s",
			strings.TrimSpace(string(paranoid)), code, stderr)
	}
	if strings.Contains(stderr, "missing capabilities") {
		t.Errorf("warned about missing capabilities although all were granted: %s", stderr)
	}
	ss := samplesOf(p, w.Process.Pid)
	var user, kernel int64
	for _, s := range ss {
		if hasFunc(s, "read_zero") || hasFunc(s, "write_null") {
			user += count(s)
		}
		for _, loc := range s.Location {
			if loc.Mapping != nil && loc.Mapping.File == "[kernel.kallsyms]" && len(loc.Line) > 0 &&
				loc.Line[0].Function != nil && loc.Line[0].Function.Name != "" {
				kernel += count(s)
				break
			}
		}
	}
	n := total(ss)
	t.Logf("uid 65534 with %v: %d samples, %d with named user frames, %d with named kernel frames",
		allCaps, n, user, kernel)
	if n < 20 || user < n*8/10 || kernel < n/2 {
		t.Errorf("incomplete profile without root: %d samples, %d user-named, %d kernel-named", n, user, kernel)
	}
}

// TestPrivilegeMinimal: CAP_BPF + CAP_PERFMON are enough to record; the others missing are
// named in a warning (their absence costs symbols, not the recording).
func TestPrivilegeMinimal(t *testing.T) {
	requireRoot(t)
	w := startWorkload(t, "ratio", "6")
	time.Sleep(200 * time.Millisecond)
	code, stderr, p := runWithCaps(t, []string{"bpf", "perfmon"}, "--pid", strconv.Itoa(w.Process.Pid),
		"--frequency", "199", "--duration", "2")
	if code != 0 || p == nil {
		t.Fatalf("record with CAP_BPF+CAP_PERFMON: exit %d: %s", code, stderr)
	}
	for _, c := range []string{"CAP_SYS_PTRACE", "CAP_DAC_READ_SEARCH", "CAP_SYSLOG"} {
		if !strings.Contains(stderr, c) {
			t.Errorf("warning does not name missing %s: %s", c, stderr)
		}
	}
	if total(samplesOf(p, w.Process.Pid)) == 0 {
		t.Errorf("no samples of the target with CAP_BPF+CAP_PERFMON")
	}
}

// TestPrivilegeMissingRequired: without CAP_BPF or CAP_PERFMON the recorder stops at once
// with exit 1, names the capability, and leaves no output file.
func TestPrivilegeMissingRequired(t *testing.T) {
	requireRoot(t)
	for _, missing := range []string{"bpf", "perfmon"} {
		t.Run("no_"+missing, func(t *testing.T) {
			var caps []string
			for _, c := range allCaps {
				if c != missing {
					caps = append(caps, c)
				}
			}
			code, stderr, p := runWithCaps(t, caps, "--duration", "1")
			want := "CAP_" + strings.ToUpper(missing)
			if code != 1 || !strings.Contains(stderr, "missing capabilities: "+want) {
				t.Errorf("without %s: exit %d, stderr %q; want 1 naming %s", want, code, stderr, want)
			}
			if p != nil {
				t.Errorf("a failed recording left a profile behind")
			}
			if strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
				t.Errorf("want one line of error, got: %q", stderr)
			}
		})
	}
}

// TestPrivilegeMountNamespace: a process in its own mount namespace runs a binary at a path
// where the host has a different file. Its frames are symbolized from its own file (through
// /proc/PID/root or map_files), never from the host's file of the same name.
func TestPrivilegeMountNamespace(t *testing.T) {
	requireRoot(t)
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Fatal("unshare (util-linux) is needed: run scripts/install-deps.sh")
	}
	dir := t.TempDir()
	prog := filepath.Join(dir, "prog")
	// the host's /tmp/.../prog is the syscalls workload; the namespace mounts ratio over it
	decoy, err := os.ReadFile(buildPath(t, "workloads/syscalls"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(prog, decoy, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c",
		"mount --bind "+buildPath(t, "workloads/ratio")+" "+prog+" && exec "+prog+" 8")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	time.Sleep(500 * time.Millisecond)
	p, _ := record(t, "--pid", strconv.Itoa(cmd.Process.Pid), "--frequency", "199", "--duration", "2")
	ss := samplesOf(p, cmd.Process.Pid)
	sh := shareByStack(ss, "hot_a", "hot_b", "hot_c", "read_zero", "write_null", "main")
	t.Logf("%d samples; hot_a/b/c %.0f%%, decoy functions %.0f%%", total(ss),
		sh["hot_a"]+sh["hot_b"]+sh["hot_c"], sh["read_zero"]+sh["write_null"])
	if total(ss) < 20 {
		t.Fatalf("only %d samples of the namespaced process", total(ss))
	}
	if sh["read_zero"]+sh["write_null"] > 0 {
		t.Errorf("frames symbolized with the host's file at the same path (decoy functions seen)")
	}
	if sh["hot_a"]+sh["hot_b"]+sh["hot_c"] < 90 {
		t.Errorf("only %.0f%% of samples named from the namespace's own binary", sh["hot_a"]+sh["hot_b"]+sh["hot_c"])
	}
}

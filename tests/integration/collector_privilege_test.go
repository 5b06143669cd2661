package integration

// Least privilege for the collector (issue 7): without the capabilities it needs, the
// collector with an `ebpfprofiler` receiver refuses to start - it exits, rather than running
// a pipeline whose receiver is dead - and its last line names the receiver, the missing
// capabilities and the ways to grant them. With them, and no root, it starts.

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// privConfig writes a profiles pipeline (ebpfprofiler -> debug) that any uid can read.
func privConfig(t *testing.T, errorMode string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "otelprof-collector-caps-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.yaml")
	yaml := `receivers:
  ebpfprofiler:
    error_mode: ` + errorMode + `
exporters:
  debug:
    verbosity: basic
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    profiles:
      receivers: [ebpfprofiler]
      exporters: [debug]
`
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// asNobody is setpriv running its command as uid/gid 65534 with exactly caps.
func asNobody(t *testing.T, caps ...string) []string {
	t.Helper()
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Fatal("setpriv (util-linux) is needed to drop root: run scripts/install-deps.sh")
	}
	set := "-all"
	for _, c := range caps {
		set += ",+" + c
	}
	return []string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
		"--inh-caps=" + set, "--ambient-caps=" + set, "--bounding-set=" + set}
}

// rootWithout is setpriv keeping uid 0 but removing caps from the bounding set, as a
// container runtime or systemd's CapabilityBoundingSet= does: root then lacks them too.
func rootWithout(t *testing.T, caps ...string) []string {
	t.Helper()
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Fatal("setpriv (util-linux) is needed: run scripts/install-deps.sh")
	}
	set := ""
	for _, c := range caps {
		set += ",-" + c
	}
	return []string{"setpriv", "--inh-caps=-all", "--bounding-set=" + set[1:]}
}

func TestCollectorMissingCapabilities(t *testing.T) {
	requireRoot(t)
	const grantAll = "grant CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH and CAP_SYSLOG"
	cases := []struct {
		name    string
		wrapper []string
		missing string // the list the message must give, exactly
		wayOut  string
	}{
		{"uid_65534_no_caps", asNobody(t), "CAP_BPF, CAP_PERFMON", "run as root, or " + grantAll},
		{"uid_65534_without_perfmon", asNobody(t, "bpf", "sys_ptrace", "dac_read_search", "syslog"),
			"CAP_PERFMON", "run as root, or " + grantAll},
		// CAP_SYS_ADMIN grants what CAP_BPF and CAP_PERFMON do: all three must go.
		{"root_without_bpf_perfmon_sys_admin", rootWithout(t, "bpf", "perfmon", "sys_admin"),
			"CAP_BPF, CAP_PERFMON", "running as root, but they are not in its capability set"},
	}
	cfg := privConfig(t, "propagate")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := startCollectorUnder(t, "collector", tc.wrapper, nil,
				"--config", cfg, "--feature-gates=service.profilesSupport")
			// Bounded by the test, not timed: a collector that keeps running with a dead
			// receiver never gets here.
			select {
			case <-c.done:
			case <-time.After(60 * time.Second):
				t.Fatalf("collector still running 60 s after start without %s:\n%s", tc.missing, c.tail(10))
			}
			var ee *exec.ExitError
			if !errors.As(c.err, &ee) || ee.ExitCode() == 0 {
				t.Fatalf("collector exited with %v, want a non-zero exit:\n%s", c.err, c.tail(10))
			}
			last := c.tail(1) // what a user reads first
			t.Logf("exit %d; last line: %s", ee.ExitCode(), last)
			for _, want := range []string{
				`failed to start "ebpfprofiler" receiver`,
				"missing capabilities: " + tc.missing + " (",
				tc.wayOut,
				"give them to the collector process (systemd AmbientCapabilities=",
			} {
				if !strings.Contains(last, want) {
					t.Errorf("last line lacks %q", want)
				}
			}
			if strings.Contains(last, "operation not permitted") {
				t.Errorf("last line still gives strerror's generic text")
			}
			if c.logContains("Everything is ready") || c.logContains("eBPF profiler started") {
				t.Errorf("collector reported itself ready without the capabilities:\n%s", c.tail(10))
			}
		})
	}
}

// error_mode: ignore is the documented way to run the rest of a collector where profiling
// cannot: it keeps running and still says why the receiver is off.
func TestCollectorMissingCapabilitiesIgnored(t *testing.T) {
	requireRoot(t)
	c := startCollectorUnder(t, "collector", asNobody(t), nil,
		"--config", privConfig(t, "ignore"), "--feature-gates=service.profilesSupport")
	waitUntil(t, 30*time.Second, "the collector to be ready", func() bool {
		return c.logContains("Everything is ready")
	}, c)
	if !c.logContains("profiling disabled (error_mode: ignore)") ||
		!c.logContains("missing capabilities: CAP_BPF, CAP_PERFMON (") {
		t.Errorf("error_mode ignore: no line saying why profiling is off:\n%s", c.tail(10))
	}
	c.stop(t, 30*time.Second)
}

// The documented capabilities without root are enough, and so is root whose bounding set
// lost CAP_BPF and CAP_PERFMON but kept CAP_SYS_ADMIN (the kernel accepts it for both).
func TestCollectorWithCapabilities(t *testing.T) {
	requireRoot(t)
	cfg := privConfig(t, "propagate")
	cases := []struct {
		name    string
		wrapper []string
	}{
		{"uid_65534_documented_caps", asNobody(t, allCaps...)},
		{"root_with_sys_admin_only", rootWithout(t, "bpf", "perfmon")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := startCollectorUnder(t, "collector", tc.wrapper, nil,
				"--config", cfg, "--feature-gates=service.profilesSupport")
			waitUntil(t, 60*time.Second, "the receiver to start", func() bool {
				return c.logContains("eBPF profiler started")
			}, c)
			if c.logContains("missing capabilities") {
				t.Errorf("warned about missing capabilities:\n%s", c.tail(10))
			}
			c.stop(t, 30*time.Second)
		})
	}
}

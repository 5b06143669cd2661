package integration

import (
	"strings"
	"testing"
	"time"
)

// The configurations shipped in collector-config/ are valid for the distribution `make`
// builds (no privileges needed: `validate` starts nothing).
func TestCollectorShippedConfigsValidate(t *testing.T) {
	bin := buildPath(t, "otelcol-otelprof")
	for _, name := range []string{"local.yaml", "agent.yaml", "gateway.yaml", "pull-mode.yaml"} {
		t.Run(name, func(t *testing.T) {
			r := run(t, time.Minute, bin, "validate", "--config", shippedConfig(t, name),
				"--feature-gates=service.profilesSupport")
			if r.code != 0 {
				t.Fatalf("validate %s: exit %d\n%s%s", name, r.code, r.stdout, r.stderr)
			}
		})
	}
}

// The distribution has the components the configurations and the README name.
func TestCollectorComponents(t *testing.T) {
	r := run(t, time.Minute, buildPath(t, "otelcol-otelprof"), "components")
	if r.code != 0 {
		t.Fatalf("components: exit %d\n%s", r.code, r.stderr)
	}
	for _, want := range []string{"name: ebpfprofiler", "name: otlp\n", "name: debug", "name: file",
		"name: otlp_grpc", "name: otlp_http", "name: memory_limiter", "name: pprof"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("components lack %q:\n%s", strings.TrimSpace(want), r.stdout)
		}
	}
}

// Without --feature-gates=service.profilesSupport the collector refuses a profiles pipeline
// at start, saying which gate to enable.
func TestCollectorProfilesNeedFeatureGate(t *testing.T) {
	r := run(t, time.Minute, buildPath(t, "otelcol-otelprof"), "--config", shippedConfig(t, "local.yaml"))
	if r.code == 0 {
		t.Fatal("collector started a profiles pipeline without the feature gate")
	}
	if !strings.Contains(r.stderr, `"service.profilesSupport" feature gate`) {
		t.Errorf("error does not name the feature gate:\n%s", r.stderr)
	}
	t.Logf("%s", lastLine(r.stderr))
}

// A bad value fails the start with a message naming the receiver and the key.
func TestCollectorBadConfigNamesKey(t *testing.T) {
	bin := buildPath(t, "otelcol-otelprof")
	for _, tc := range []struct{ set, want string }{
		{"receivers::ebpfprofiler::samples_per_second=0", "receivers::ebpfprofiler: samples_per_second"},
		{"receivers::ebpfprofiler::reporter_interval=1ms", "receivers::ebpfprofiler: reporter_interval"},
		{"receivers::ebpfprofiler::error_mode=loud", "receivers::ebpfprofiler: error_mode"},
		{"receivers::ebpfprofiler::samples_per_secnd=20", "samples_per_secnd"},
	} {
		t.Run(tc.set, func(t *testing.T) {
			r := run(t, time.Minute, bin, "--config", shippedConfig(t, "local.yaml"),
				"--feature-gates=service.profilesSupport", "--set="+tc.set)
			if r.code == 0 {
				t.Fatal("collector accepted the bad value")
			}
			if !strings.Contains(r.stderr, tc.want) {
				t.Errorf("error lacks %q:\n%s", tc.want, r.stderr)
			}
			t.Logf("%s", lastLine(r.stderr))
		})
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

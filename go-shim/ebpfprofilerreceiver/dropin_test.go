package ebpfprofilerreceiver

import (
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/confmap"
)

// upstreamConfig is the upstream receiver's full key set (v0.0.202632 and v0.0.202633
// spellings) with non-default values, as a user would write it under `profiling:`.
var upstreamConfig = map[string]any{
	"reporter_interval":          "3s",
	"reporter_jitter":            0.5,
	"monitor_interval":           "7s",
	"samples_per_second":         99,
	"frame_cache_size":           2048,
	"probabilistic_interval":     "2m",
	"probabilistic_threshold":    40,
	"tracers":                    "native,python,labels",
	"interpreters":               map[string]any{"v8": map[string]any{"disabled": true}, "ruby": map[string]any{"skip_native_resume": true}, "go": map[string]any{"labels": map[string]any{"disabled": true}}},
	"clock_sync_interval":        "1m",
	"send_error_frames":          true,
	"send_idle_frames":           true,
	"filter_min_process_age":     "1s",
	"verbose_mode":               true,
	"off_cpu_threshold":          0.25,
	"include_env_vars":           "HOME, LANG",
	"load_probe":                 true,
	"map_scale_factor":           3,
	"go_labels_map_scale_factor": 2,
	"bpf_verifier_log_level":     2,
	"no_kernel_version_check":    true,
	"max_grpc_retries":           9,
	"max_rpc_msg_size":           1 << 20,
	"bpf_fs_root":                "/run/bpf",
	"error_mode":                 "IGNORE",
	"obi_process_ctx":            true,
	"pid_namespace_translation":  true,
	"pin_cpu_ids":                "0-1,3",
}

func TestUpstreamConfigAccepted(t *testing.T) {
	cfg := createDefaultConfig()
	if err := confmap.NewFromStringMap(upstreamConfig).Unmarshal(cfg); err != nil {
		t.Fatalf("upstream keys refused: %v", err)
	}
	if err := confmap.Validate(cfg); err != nil {
		t.Fatalf("valid upstream config refused: %v", err)
	}
	if cfg.ErrorMode != ErrorModeIgnore {
		t.Errorf("error_mode %q, want ignore (case-insensitive as upstream)", cfg.ErrorMode)
	}
	o := cfg.options()
	// tracers python+labels, v8 off again by interpreters, go off twice
	if want := []string{"golabels", "hotspot", "v8"}; !slices.Equal(o.RuntimesOff, want) {
		t.Errorf("runtimes off %v, want %v", o.RuntimesOff, want)
	}
	if !slices.Equal(o.IncludeEnvVars, []string{"HOME", "LANG"}) {
		t.Errorf("include_env_vars %v", o.IncludeEnvVars)
	}
	if o.ProbabilisticThreshold != 40 || o.ProbabilisticInterval != 2*time.Minute {
		t.Errorf("probabilistic %d/%v", o.ProbabilisticThreshold, o.ProbabilisticInterval)
	}
	if o.NoErrorFrames || !o.IdleFrames || o.ClockSyncInterval != time.Minute ||
		o.OffCPUThreshold != 0.25 || o.FrequencyHz != 99 {
		t.Errorf("options %+v", o)
	}
	// every key without an equivalent that was set is named in the start-up log line
	named := map[string]bool{}
	for _, f := range cfg.noEffect() {
		named[f.Key] = true
	}
	for _, k := range []string{"frame_cache_size", "filter_min_process_age", "map_scale_factor",
		"go_labels_map_scale_factor", "max_grpc_retries", "max_rpc_msg_size", "bpf_fs_root",
		"obi_process_ctx", "pid_namespace_translation", "pin_cpu_ids", "load_probe",
		"interpreters.ruby.skip_native_resume"} {
		if !named[k] {
			t.Errorf("%s set but not logged as without an equivalent", k)
		}
	}
}

func TestUpstreamDefaults(t *testing.T) {
	cfg := createDefaultConfig()
	if err := confmap.Validate(cfg); err != nil {
		t.Fatal(err)
	}
	if f := cfg.noEffect(); len(f) != 0 {
		t.Errorf("defaults logged as set: %v", f)
	}
	o := cfg.options()
	// upstream defaults: all tracers, always sampling, no error or idle frames
	if len(o.RuntimesOff) != 0 || o.ProbabilisticThreshold != 0 || !o.NoErrorFrames ||
		o.IdleFrames || o.ClockSyncInterval != 3*time.Minute || len(o.IncludeEnvVars) != 0 {
		t.Errorf("default options %+v", o)
	}
	if cfg.ReporterJitter != 0.2 || cfg.MonitorInterval != 5*time.Second ||
		cfg.ProbabilisticInterval != time.Minute || cfg.ProbabilisticThreshold != 100 ||
		cfg.Tracers != "all" || cfg.MaxGRPCRetries != 5 || cfg.MaxRPCMsgSize != 32<<20 ||
		cfg.FrameCacheSize != 16384 || cfg.BPFFSRoot != "/sys/fs/bpf/" {
		t.Errorf("defaults differ from upstream's: %+v", cfg.Upstream)
	}
}

func TestUpstreamValidation(t *testing.T) {
	for _, c := range []struct {
		key  string
		val  any
		want string
	}{
		{"probabilistic_interval", "30s", "probabilistic_interval: use a duration between 1 and 5 minutes"},
		{"probabilistic_interval", "6m", "probabilistic_interval"},
		{"probabilistic_threshold", 0, "probabilistic_threshold: must be between 1 and 100"},
		{"probabilistic_threshold", 101, "probabilistic_threshold"},
		{"tracers", "native,cobol", `tracers: unknown tracer "cobol"`},
		{"tracers", "-fortran", `unknown tracer "fortran"`},
		{"reporter_jitter", 1.5, "reporter_jitter"},
		{"monitor_interval", "0s", "monitor_interval"},
		{"map_scale_factor", 9, "map_scale_factor: 9 exceeds the limit 8"},
		{"go_labels_map_scale_factor", 9, "go_labels_map_scale_factor"},
		{"bpf_verifier_log_level", 3, "bpf_verifier_log_level"},
		{"frame_cache_size", 10, "frame_cache_size"},
		{"filter_min_process_age", "-1s", "filter_min_process_age"},
		{"pin_cpu_ids", "a-b", "pin_cpu_ids"},
		{"probe_links", []any{"uprobe:/bin/true"}, "probe_links: invalid format"},
		{"probe_links", []any{"xprobe:foo"}, `unknown probe type "xprobe"`},
		{"probe_links", []any{"kprobe:vfs_open"}, "kernel probes are not supported by this receiver yet"},
		{"probes", []any{map[string]any{"type": "kprobe", "mode": "uprobe", "symbol": "f"}}, "probes[0]"},
		{"error_mode", "sometimes", "error_mode"},
	} {
		t.Run(c.key, func(t *testing.T) {
			cfg := createDefaultConfig()
			if err := confmap.NewFromStringMap(map[string]any{c.key: c.val, "no_kernel_version_check": true}).Unmarshal(cfg); err != nil {
				t.Fatal(err)
			}
			err := confmap.Validate(cfg)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: %v: error %v, want one containing %q", c.key, c.val, err, c.want)
			}
		})
	}
}

func TestParseTracers(t *testing.T) {
	for _, c := range []struct {
		in  string
		off []string
	}{
		{"all", nil},
		{"", []string{"customlabels", "golabels", "hotspot", "python", "v8"}},
		{"native", []string{"customlabels", "golabels", "hotspot", "python", "v8"}},
		{"PYTHON, Go", []string{"customlabels", "hotspot", "v8"}},
		{"all,-python", []string{"python"}},
		{"golabels,customlabels", []string{"hotspot", "python", "v8"}},
	} {
		cfg := createDefaultConfig()
		cfg.Tracers = c.in
		if got := cfg.options().RuntimesOff; !slices.Equal(got, c.off) {
			t.Errorf("tracers %q: runtimes off %v, want %v", c.in, got, c.off)
		}
	}
	cfg := createDefaultConfig()
	cfg.Tracers = "python,perl,ruby"
	noRuntime, wanted := cfg.namedTracers()
	if !slices.Equal(noRuntime, []string{"perl", "ruby"}) || !slices.Equal(wanted, []string{"python"}) {
		t.Errorf("named tracers: without a runtime %v, want [perl ruby]; runtimes %v, want [python]",
			noRuntime, wanted)
	}
}

func TestJitter(t *testing.T) {
	lo, hi := time.Hour, time.Duration(0)
	for range 1000 {
		d := jittered(10*time.Second, 0.2)
		lo, hi = min(lo, d), max(hi, d)
	}
	if lo < 8*time.Second || hi > 12*time.Second || hi-lo < 3*time.Second {
		t.Errorf("jittered 10s by 0.2 spans %v..%v, want within 8s..12s and spread", lo, hi)
	}
	if jittered(time.Second, 0) != time.Second {
		t.Error("jitter 0 changed the interval")
	}
}

// FuzzUpstreamParsers: the parsers of the upstream keys' strings never panic, and what they
// accept is well formed (go test -fuzz=FuzzUpstreamParsers).
func FuzzUpstreamParsers(f *testing.F) {
	for _, s := range []string{"all", "native,go", "all,-python", "PYTHON, v8", "uprobe:/bin/sh:main",
		"kprobe:vfs_open", "0-3,6", "", ",", "-", "uretprobe::x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if on, err := parseTracers(s); err == nil {
			for name := range on {
				if _, ok := tracerRuntimes[name]; !ok {
					t.Fatalf("parseTracers(%q) enabled unknown %q", s, name)
				}
			}
		}
		if p, err := parseProbeLink(s); err == nil {
			if p.Symbol == "" || (p.Mode == "uprobe" || p.Mode == "uretprobe") && p.Target == "" {
				t.Fatalf("parseProbeLink(%q) = %+v", s, p)
			}
		}
		if cpus, err := parseCPURange(s); err == nil && len(cpus) == 0 {
			t.Fatalf("parseCPURange(%q) accepted no CPU", s)
		}
	})
}

package ebpfprofilerreceiver

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
)

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	custom := createDefaultConfig()
	custom.SamplesPerSecond = 99
	custom.ReporterInterval = 10 * time.Second
	custom.Pids = []int{1, 42}
	custom.KernelFrames = false
	custom.Symbolize = false
	custom.FramePointersOnly = true
	custom.ResourceAttributesOnSamples = true
	custom.RingBufferBytes = 1 << 20
	custom.ErrorMode = ErrorModeIgnore
	custom.VerboseMode = true

	for _, tc := range []struct {
		id   component.ID
		want *Config
	}{
		{component.MustNewID(typeStr), createDefaultConfig()},
		{component.MustNewIDWithName(typeStr, "custom"), custom},
		{component.MustNewIDWithName(typeStr, "upstream_keys"), createDefaultConfig()},
	} {
		t.Run(tc.id.String(), func(t *testing.T) {
			sub, err := cm.Sub(tc.id.String())
			if err != nil {
				t.Fatal(err)
			}
			cfg := NewFactory().CreateDefaultConfig().(*Config)
			if err := sub.Unmarshal(cfg); err != nil {
				t.Fatal(err)
			}
			if err := confmap.Validate(cfg); err != nil {
				t.Fatalf("valid config rejected: %v", err)
			}
			if !reflect.DeepEqual(cfg, tc.want) {
				t.Errorf("got %+v\nwant %+v", cfg, tc.want)
			}
		})
	}
}

// Every bad value must be refused with an error that names the key, as a user reads it in
// the collector's start-up failure.
func TestValidateNamesTheKey(t *testing.T) {
	for _, tc := range []struct {
		name string
		conf map[string]any
		key  string
	}{
		{"zero frequency", map[string]any{"samples_per_second": 0}, "samples_per_second"},
		{"negative frequency", map[string]any{"samples_per_second": -5}, "samples_per_second"},
		{"frequency too high", map[string]any{"samples_per_second": 10001}, "samples_per_second"},
		{"zero interval", map[string]any{"reporter_interval": "0s"}, "reporter_interval"},
		{"tiny interval", map[string]any{"reporter_interval": "5ms"}, "reporter_interval"},
		{"negative interval", map[string]any{"reporter_interval": "-1s"}, "reporter_interval"},
		{"interval not a duration", map[string]any{"reporter_interval": "soon"}, "reporter_interval"},
		{"pid zero", map[string]any{"pids": []any{0}}, "pids"},
		{"pid negative", map[string]any{"pids": []any{12, -3}}, "pids"},
		{"pid twice", map[string]any{"pids": []any{7, 7}}, "pids"},
		{"pid not a number", map[string]any{"pids": []any{"init"}}, "pids"},
		{"kernel_frames not a bool", map[string]any{"kernel_frames": "maybe"}, "kernel_frames"},
		{"bad error mode", map[string]any{"error_mode": "silent"}, "error_mode"},
		{"empty error mode", map[string]any{"error_mode": ""}, "error_mode"},
		{"ring buffer not a power of two", map[string]any{"ring_buffer_bytes": 100000}, "ring_buffer_bytes"},
		{"ring buffer too small", map[string]any{"ring_buffer_bytes": 4096}, "ring_buffer_bytes"},
		{"off-cpu probability above 1", map[string]any{"off_cpu_threshold": 1.5}, "off_cpu_threshold"},
		{"off-cpu probability negative", map[string]any{"off_cpu_threshold": -0.1}, "off_cpu_threshold"},
		{"alloc mean negative", map[string]any{"alloc_mean_bytes": -1}, "alloc_mean_bytes"},
		{"unknown key", map[string]any{"sample_per_second": 20}, "sample_per_second"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := createDefaultConfig()
			err := confmap.NewFromStringMap(tc.conf).Unmarshal(cfg)
			if err == nil {
				err = confmap.Validate(cfg)
			}
			if err == nil {
				t.Fatalf("config %v accepted", tc.conf)
			}
			if !strings.Contains(err.Error(), tc.key) {
				t.Errorf("error does not name %q: %v", tc.key, err)
			}
			t.Logf("%v", err)
		})
	}
}

func TestValidateReportsEveryBadKey(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.SamplesPerSecond = 0
	cfg.ErrorMode = "loud"
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), "samples_per_second") ||
		!strings.Contains(err.Error(), "error_mode") {
		t.Fatalf("want both keys named, got %v", err)
	}
}

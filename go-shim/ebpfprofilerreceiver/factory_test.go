package ebpfprofilerreceiver

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/receiver/receivertest"
)

func TestFactory(t *testing.T) {
	f := NewFactory()
	if got := f.Type().String(); got != "ebpfprofiler" {
		t.Errorf("type %q, want ebpfprofiler", got)
	}
	if got := f.ProfilesStability(); got != component.StabilityLevelDevelopment {
		t.Errorf("profiles stability %v", got)
	}
	cfg, ok := f.CreateDefaultConfig().(*Config)
	if !ok {
		t.Fatalf("default config is %T", f.CreateDefaultConfig())
	}
	if err := componenttest.CheckConfigStruct(cfg); err != nil {
		t.Errorf("config struct: %v", err)
	}
	want := Config{SamplesPerSecond: 20, ReporterInterval: 5 * time.Second, KernelFrames: true,
		Symbolize: true, ErrorMode: ErrorModePropagate}
	if cfg.SamplesPerSecond != want.SamplesPerSecond || cfg.ReporterInterval != want.ReporterInterval ||
		cfg.KernelFrames != want.KernelFrames || cfg.Symbolize != want.Symbolize ||
		cfg.ErrorMode != want.ErrorMode || len(cfg.Pids) != 0 || cfg.OffCPUThreshold != 0 ||
		cfg.FramePointersOnly || cfg.RingBufferBytes != 0 || cfg.VerboseMode {
		t.Errorf("defaults %+v, want %+v", *cfg, want)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("default config invalid: %v", err)
	}

	set := receivertest.NewNopSettings(f.Type())
	r, err := f.CreateProfiles(context.Background(), set, cfg, consumertest.NewNop())
	if err != nil || r == nil {
		t.Fatalf("CreateProfiles: %v, %v", r, err)
	}
	// Shutdown without Start must be harmless (the collector does it when another component
	// fails to start).
	if err := r.Shutdown(context.Background()); err != nil {
		t.Errorf("shutdown before start: %v", err)
	}
	// The receiver only supports profiles.
	if _, err := f.CreateTraces(context.Background(), set, cfg, consumertest.NewNop()); err == nil {
		t.Error("traces pipeline accepted")
	}
}

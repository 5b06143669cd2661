// Package ebpfprofilerreceiver is an OpenTelemetry Collector receiver, type `ebpfprofiler`,
// that profiles CPU time of every process on the host with libotelprof (eBPF) and emits
// OTLP profiles into a `profiles` pipeline. Run the collector with
// --feature-gates=service.profilesSupport.
package ebpfprofilerreceiver

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer/xconsumer"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/xreceiver"

	"github.com/otelprof/otelprof/go-shim/internal/otelprof"
)

// typeStr is the receiver's name in collector YAML (`receivers: [ebpfprofiler]`).
const typeStr = "ebpfprofiler"

// Stability of the profiles signal of this receiver (see metadata.yaml).
const profilesStability = component.StabilityLevelDevelopment

// profiler is what the receiver needs from libotelprof; *otelprof.Profiler implements it and
// tests substitute a fake so the collect loop runs without root.
type profiler interface {
	Start() error
	Stop() error
	CollectOTLP() ([]byte, error)
	Stats() (otelprof.Stats, error)
	Close()
}

type openFunc func(otelprof.Options) (profiler, error)

func openLibrary(opts otelprof.Options) (profiler, error) {
	p, err := otelprof.Open(opts)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// NewFactory returns the factory of the `ebpfprofiler` receiver.
func NewFactory() xreceiver.Factory {
	return newFactory(openLibrary)
}

func newFactory(open openFunc) xreceiver.Factory {
	return xreceiver.NewFactory(
		component.MustNewType(typeStr),
		func() component.Config { return createDefaultConfig() },
		xreceiver.WithProfiles(func(_ context.Context, set receiver.Settings,
			cfg component.Config, next xconsumer.Profiles,
		) (xreceiver.Profiles, error) {
			return newReceiver(set, cfg.(*Config), next, open), nil
		}, profilesStability),
	)
}

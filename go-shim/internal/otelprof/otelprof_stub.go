//go:build !cgo || !linux

package otelprof

// LogFunc receives one library message (see the cgo build).
type LogFunc func(level Level, msg string)

// SetLogger does nothing in builds without the library.
func SetLogger(fn LogFunc, max Level) {}

// Version is empty in builds without the library.
func Version() string { return "" }

// Profiler is never created in builds without the library.
type Profiler struct{}

// Open always fails with ErrUnsupported.
func Open(opts Options) (*Profiler, error) { return nil, ErrUnsupported }

func (p *Profiler) Start() error                 { return ErrUnsupported }
func (p *Profiler) Stop() error                  { return nil }
func (p *Profiler) CollectOTLP() ([]byte, error) { return nil, ErrUnsupported }
func (p *Profiler) Stats() (Stats, error)        { return Stats{}, ErrUnsupported }
func (p *Profiler) Close()                       {}

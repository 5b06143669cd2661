package ebpfprofilerreceiver

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/otelprof/otelprof/go-shim/internal/otelprof"
)

// Upstream holds the keys of the upstream OpenTelemetry eBPF profiler's `profiling` receiver
// (go.opentelemetry.io/ebpf-profiler/collector/config) that our own keys do not already
// cover, with its defaults and validation. The keys shared with it (samples_per_second,
// reporter_interval, off_cpu_threshold, verbose_mode, error_mode) live in Config.
//
// Two upstream generations are accepted: v0.0.202632 and older (`tracers`, `probe_links`,
// `load_probe`) and v0.0.202633 / HEAD (`interpreters`, `probes`, `frame_cache_size`,
// `filter_min_process_age`, `pid_namespace_translation`, `pin_cpu_ids`). README.md,
// "Migrating from the upstream receiver", says what each key does here.
type Upstream struct {
	// ReporterJitter varies each report's interval by up to ± this fraction (0..1,
	// default 0.2), so that a fleet's agents do not report in step.
	ReporterJitter float64 `mapstructure:"reporter_jitter"`
	// MonitorInterval is how often the receiver's telemetry is refreshed from the library's
	// counters (default 5s).
	MonitorInterval time.Duration `mapstructure:"monitor_interval"`
	// ProbabilisticInterval and ProbabilisticThreshold: at the start of each interval (1 to
	// 5 minutes, default 1m) sampling is turned on with a chance of threshold in 100
	// (1..100, default 100 = always on).
	ProbabilisticInterval  time.Duration `mapstructure:"probabilistic_interval"`
	ProbabilisticThreshold uint          `mapstructure:"probabilistic_threshold"`
	// Tracers selects the language runtimes by the upstream names (comma-separated,
	// default "all"); Interpreters is the newer upstream form of the same choice.
	Tracers      string       `mapstructure:"tracers"`
	Interpreters Interpreters `mapstructure:"interpreters"`
	// ClockSyncInterval is how often the wall clock's offset from the monotonic clock is
	// measured again (default 3m).
	ClockSyncInterval time.Duration `mapstructure:"clock_sync_interval"`
	// SendErrorFrames keeps the "[unwind error: reason]" frame at the end of stacks whose
	// walk failed (default false: the stack ends at its last good frame).
	SendErrorFrames bool `mapstructure:"send_error_frames"`
	// SendIdleFrames records the idle task's samples (default false).
	SendIdleFrames bool `mapstructure:"send_idle_frames"`
	// IncludeEnvVars is a comma-separated list of environment variables whose values each
	// process's resource carries as process.environment_variable.<NAME>.
	IncludeEnvVars string `mapstructure:"include_env_vars"`
	// ProbeLinks (`uprobe:<binary>:<symbol>`, ...) and Probes (type/mode/target/symbol):
	// functions whose every call is a sample (stack at the call).
	ProbeLinks []string `mapstructure:"probe_links"`
	LoadProbe  bool     `mapstructure:"load_probe"`
	Probes     []Probe  `mapstructure:"probes"`
	// BPFVerifierLogLevel (0..2): above 0 the library's debug messages, which carry the
	// verifier's log when a program is refused, reach the collector log.
	BPFVerifierLogLevel uint `mapstructure:"bpf_verifier_log_level"`
	// NoKernelVersionCheck skips the check, at validation, that the kernel is 5.10 or newer.
	NoKernelVersionCheck bool `mapstructure:"no_kernel_version_check"`

	// Keys accepted with upstream's defaults and validation but without an equivalent here
	// (noEffect lists them with the reason; Start logs the ones set).
	FrameCacheSize          uint          `mapstructure:"frame_cache_size"`
	FilterMinProcessAge     time.Duration `mapstructure:"filter_min_process_age"`
	MapScaleFactor          uint          `mapstructure:"map_scale_factor"`
	GoLabelsMapScaleFactor  uint          `mapstructure:"go_labels_map_scale_factor"`
	MaxGRPCRetries          uint32        `mapstructure:"max_grpc_retries"`
	MaxRPCMsgSize           int           `mapstructure:"max_rpc_msg_size"`
	BPFFSRoot               string        `mapstructure:"bpf_fs_root"`
	OBIProcessCtx           bool          `mapstructure:"obi_process_ctx"`
	PIDNamespaceTranslation bool          `mapstructure:"pid_namespace_translation"`
	PinCPUIDs               string        `mapstructure:"pin_cpu_ids"`
}

// Probe is one entry of upstream HEAD's `probes` list (type kprobe; mode kprobe, kretprobe,
// uprobe or uretprobe; symbol; target for user-space probes).
type Probe struct {
	Type   string `mapstructure:"type"`
	Mode   string `mapstructure:"mode"`
	Symbol string `mapstructure:"symbol"`
	Target string `mapstructure:"target"`
}

// interpreterToggle is upstream's interpreter.BaseConfig.
type interpreterToggle struct {
	Disabled bool `mapstructure:"disabled"`
}

// Interpreters mirrors upstream's interpreterconfig.Config: every interpreter on unless
// `disabled: true`.
type Interpreters struct {
	Python  interpreterToggle `mapstructure:"python"`
	Perl    interpreterToggle `mapstructure:"perl"`
	PHP     interpreterToggle `mapstructure:"php"`
	Hotspot interpreterToggle `mapstructure:"hotspot"`
	Ruby    struct {
		interpreterToggle `mapstructure:",squash"`
		SkipNativeResume  bool `mapstructure:"skip_native_resume"`
	} `mapstructure:"ruby"`
	V8     interpreterToggle `mapstructure:"v8"`
	Dotnet interpreterToggle `mapstructure:"dotnet"`
	Go     struct {
		interpreterToggle `mapstructure:",squash"`
		Labels            interpreterToggle `mapstructure:"labels"`
		Symbolization     interpreterToggle `mapstructure:"symbolization"`
	} `mapstructure:"go"`
	BEAM   interpreterToggle `mapstructure:"beam"`
	LuaJIT interpreterToggle `mapstructure:"luajit"`
}

// Upstream limits (collector/config of the upstream receiver).
const (
	maxMapScaleFactor      = 8
	minFrameCacheSize      = 1024
	maxFrameCacheSize      = 1024 * 1024
	probabilisticThreshMax = 100
)

func upstreamDefaults() Upstream {
	return Upstream{
		ReporterJitter:         0.2,
		MonitorInterval:        5 * time.Second,
		ProbabilisticInterval:  time.Minute,
		ProbabilisticThreshold: probabilisticThreshMax,
		Tracers:                "all",
		ClockSyncInterval:      3 * time.Minute,
		FrameCacheSize:         16384,
		MaxGRPCRetries:         5,
		MaxRPCMsgSize:          32 << 20,
		BPFFSRoot:              "/sys/fs/bpf/",
	}
}

// tracerRuntimes maps the upstream tracer names to the op_runtime names of the library's
// runtimes (lib/otelprof.c runtime_ctors[]). Go code is symbolized natively whatever the
// choice; upstream's `go` tracer also reads Go pprof labels, which is our golabels runtime,
// and upstream's `labels` is the custom-labels TLS ABI. Names with no runtime here are known
// (accepted, a warning when named) but have nothing to turn on.
var tracerRuntimes = map[string][]string{
	"go":      {"golabels"},
	"labels":  {"customlabels"},
	"python":  {"python"},
	"v8":      {"v8"},
	"hotspot": {"hotspot"},
	"perl":    nil,
	"php":     nil,
	"ruby":    nil,
	"dotnet":  nil,
	"luajit":  nil,
	"beam":    nil,
}

// tracerAliases are our own names accepted for upstream's.
var tracerAliases = map[string]string{"golabels": "go", "customlabels": "labels", "node": "v8",
	"java": "hotspot", "jvm": "hotspot"}

// parseTracers is upstream's tracer-string parser (tracer/types.Parse): comma-separated,
// case-insensitive names, `all`, and `native` (always on, accepted). Unknown names fail as
// upstream's do. Our extension: `-name` removes a tracer (e.g. "all,-python"). It returns
// the enabled upstream names.
func parseTracers(s string) (map[string]bool, error) {
	on := map[string]bool{}
	for _, name := range strings.Split(s, ",") {
		name = strings.ToLower(strings.TrimSpace(name))
		if name == "" || name == "native" {
			continue
		}
		off := strings.HasPrefix(name, "-")
		name = strings.TrimPrefix(name, "-")
		if a, ok := tracerAliases[name]; ok {
			name = a
		}
		names := []string{name}
		if name == "all" {
			names = names[:0]
			for n := range tracerRuntimes {
				names = append(names, n)
			}
		} else if _, ok := tracerRuntimes[name]; !ok {
			return nil, fmt.Errorf("tracers: unknown tracer %q (known: all, native, %s; "+
				"prefix a name with - to leave it out)", name, strings.Join(tracerNames(), ", "))
		}
		for _, n := range names {
			on[n] = !off
		}
	}
	return on, nil
}

func tracerNames() []string {
	var out []string
	for n := range tracerRuntimes {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// enabledTracers combines `tracers` with `interpreters` (both may be given; a runtime is on
// only if neither turns it off).
func (u *Upstream) enabledTracers() (map[string]bool, error) {
	on, err := parseTracers(u.Tracers)
	if err != nil {
		return nil, err
	}
	in := u.Interpreters
	for name, disabled := range map[string]bool{
		"python": in.Python.Disabled, "perl": in.Perl.Disabled, "php": in.PHP.Disabled,
		"hotspot": in.Hotspot.Disabled, "ruby": in.Ruby.Disabled, "v8": in.V8.Disabled,
		"dotnet": in.Dotnet.Disabled, "beam": in.BEAM.Disabled, "luajit": in.LuaJIT.Disabled,
		"go": in.Go.Disabled || in.Go.Labels.Disabled,
	} {
		if disabled {
			on[name] = false
		}
	}
	return on, nil
}

// namedTracers are the upstream names the user turned on by name (not through `all`): the
// ones with no runtime here are warned about at start, the others are passed to the library,
// which warns about any it does not have (a runtime not built into it).
func (u *Upstream) namedTracers() (noRuntime []string, runtimes []string) {
	for _, name := range strings.Split(u.Tracers, ",") {
		name = strings.ToLower(strings.TrimSpace(name))
		if a, ok := tracerAliases[name]; ok {
			name = a
		}
		rts, ok := tracerRuntimes[name]
		switch {
		case !ok:
		case len(rts) == 0:
			noRuntime = append(noRuntime, name)
		default:
			runtimes = append(runtimes, rts...)
		}
	}
	return noRuntime, runtimes
}

// probeSpec is one probe to attach: mode (uprobe, uretprobe, kprobe, kretprobe), target
// binary (user-space probes) and symbol.
type probeSpec struct {
	Mode, Target, Symbol string
}

func (p probeSpec) String() string {
	if p.Target == "" {
		return p.Mode + ":" + p.Symbol
	}
	return p.Mode + ":" + p.Target + ":" + p.Symbol
}

// parseProbeLink parses upstream's probe link: `kprobe:<symbol>`, `kretprobe:<symbol>`,
// `uprobe:<binary>:<symbol>`, `uretprobe:<binary>:<symbol>` (type case-insensitive).
func parseProbeLink(s string) (probeSpec, error) {
	parts := strings.SplitN(s, ":", 3)
	if len(parts) < 2 {
		return probeSpec{}, fmt.Errorf("invalid format %q, expected <probe_type>:<symbol> or "+
			"<probe_type>:<binary>:<symbol>", s)
	}
	mode := strings.ToLower(parts[0])
	switch mode {
	case "kprobe", "kretprobe":
		if len(parts) != 2 || parts[1] == "" {
			return probeSpec{}, fmt.Errorf("invalid format %q, expected %s:<symbol>", s, mode)
		}
		return probeSpec{Mode: mode, Symbol: parts[1]}, nil
	case "uprobe", "uretprobe":
		if len(parts) != 3 || parts[1] == "" || parts[2] == "" {
			return probeSpec{}, fmt.Errorf("invalid format %q, expected %s:<binary>:<symbol>",
				s, mode)
		}
		return probeSpec{Mode: mode, Target: parts[1], Symbol: parts[2]}, nil
	}
	return probeSpec{}, fmt.Errorf("unknown probe type %q in %q: use kprobe, kretprobe, "+
		"uprobe or uretprobe", parts[0], s)
}

// probeSpecs is probe_links and probes together, validated.
func (u *Upstream) probeSpecs() ([]probeSpec, []error) {
	var out []probeSpec
	var errs []error
	for _, l := range u.ProbeLinks {
		p, err := parseProbeLink(l)
		if err != nil {
			errs = append(errs, fmt.Errorf("probe_links: %w", err))
			continue
		}
		out = append(out, p)
	}
	for i, p := range u.Probes {
		if t := strings.ToLower(p.Type); t != "kprobe" {
			errs = append(errs, fmt.Errorf("probes[%d]: unknown type %q (upstream's only "+
				"probe type is kprobe; its mode says kprobe, kretprobe, uprobe or uretprobe)",
				i, p.Type))
			continue
		}
		mode := strings.ToLower(p.Mode)
		if mode == "" {
			mode = "kprobe"
		}
		link := mode + ":" + p.Symbol
		if p.Target != "" || mode == "uprobe" || mode == "uretprobe" {
			link = mode + ":" + p.Target + ":" + p.Symbol
		}
		s, err := parseProbeLink(link)
		if err != nil {
			errs = append(errs, fmt.Errorf("probes[%d]: %w", i, err))
			continue
		}
		out = append(out, s)
	}
	return out, errs
}

func (u *Upstream) validate() []error {
	var errs []error
	if u.ReporterJitter < 0 || u.ReporterJitter > 1 || u.ReporterJitter != u.ReporterJitter {
		errs = append(errs, fmt.Errorf("reporter_jitter: must be between 0 (no jitter) and 1, "+
			"got %g", u.ReporterJitter))
	}
	if u.MonitorInterval <= 0 {
		errs = append(errs, fmt.Errorf("monitor_interval: must be a positive duration, got %s",
			u.MonitorInterval))
	}
	if u.ProbabilisticInterval < time.Minute || u.ProbabilisticInterval > 5*time.Minute {
		errs = append(errs, fmt.Errorf("probabilistic_interval: use a duration between 1 and "+
			"5 minutes, got %s", u.ProbabilisticInterval))
	}
	if u.ProbabilisticThreshold < 1 || u.ProbabilisticThreshold > probabilisticThreshMax {
		errs = append(errs, fmt.Errorf("probabilistic_threshold: must be between 1 and %d "+
			"(the chance in %d that sampling is on in an interval; %d = always), got %d",
			probabilisticThreshMax, probabilisticThreshMax, probabilisticThreshMax,
			u.ProbabilisticThreshold))
	}
	if _, err := u.enabledTracers(); err != nil {
		errs = append(errs, err)
	}
	if u.ClockSyncInterval < 0 {
		errs = append(errs, fmt.Errorf("clock_sync_interval: must not be negative, got %s",
			u.ClockSyncInterval))
	}
	specs, perrs := u.probeSpecs()
	errs = append(errs, perrs...)
	for _, p := range specs {
		if p.Target == "" {
			// Refused rather than accepted and ignored: no kernel probes here yet.
			errs = append(errs, fmt.Errorf("probe_links/probes: %s: kernel probes are not "+
				"supported by this receiver yet (uprobe and uretprobe are); remove it, or keep "+
				"the upstream receiver for kernel probes", p))
		}
	}
	if u.FrameCacheSize < minFrameCacheSize || u.FrameCacheSize > maxFrameCacheSize {
		errs = append(errs, fmt.Errorf("frame_cache_size: must be between %d and %d, got %d",
			minFrameCacheSize, maxFrameCacheSize, u.FrameCacheSize))
	}
	if u.FilterMinProcessAge < 0 {
		errs = append(errs, fmt.Errorf("filter_min_process_age: must not be negative, got %s",
			u.FilterMinProcessAge))
	}
	if u.MapScaleFactor > maxMapScaleFactor {
		errs = append(errs, fmt.Errorf("map_scale_factor: %d exceeds the limit %d",
			u.MapScaleFactor, maxMapScaleFactor))
	}
	if u.GoLabelsMapScaleFactor > maxMapScaleFactor {
		errs = append(errs, fmt.Errorf("go_labels_map_scale_factor: %d exceeds the limit %d",
			u.GoLabelsMapScaleFactor, maxMapScaleFactor))
	}
	if u.BPFVerifierLogLevel > 2 {
		errs = append(errs, fmt.Errorf("bpf_verifier_log_level: must be 0, 1 or 2, got %d",
			u.BPFVerifierLogLevel))
	}
	if u.PinCPUIDs != "" {
		if _, err := parseCPURange(u.PinCPUIDs); err != nil {
			errs = append(errs, fmt.Errorf("pin_cpu_ids: %w", err))
		}
	}
	if !u.NoKernelVersionCheck {
		if err := checkKernelVersion(); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// maxCPUs bounds CPU numbers (the kernel's largest NR_CPUS).
const maxCPUs = 8192

// parseCPURange parses a CPU list as /sys/devices/system/cpu/online writes it ("0-3,6").
func parseCPURange(s string) ([]int, error) {
	var cpus []int
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("%q is not a CPU number or range (e.g. 0-3,6)", part)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("%q is not a CPU range (e.g. 0-3)", part)
			}
		}
		if b >= maxCPUs {
			return nil, fmt.Errorf("%q: CPU numbers go up to %d", part, maxCPUs-1)
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// checkKernelVersion is upstream's check: kernel 5.10 or newer.
func checkKernelVersion() error {
	var u syscall.Utsname
	if err := syscall.Uname(&u); err != nil {
		return fmt.Errorf("cannot read the kernel version: %v (no_kernel_version_check: "+
			"true skips the check)", err)
	}
	var b strings.Builder
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		b.WriteByte(byte(c))
	}
	rel := b.String()
	var major, minor int
	if _, err := fmt.Sscanf(rel, "%d.%d", &major, &minor); err != nil {
		return fmt.Errorf("cannot parse the kernel version %q (no_kernel_version_check: "+
			"true skips the check)", rel)
	}
	if major < 5 || (major == 5 && minor < 10) {
		return fmt.Errorf("the profiler requires kernel 5.10 or newer, this is %s "+
			"(no_kernel_version_check: true skips the check)", rel)
	}
	return nil
}

// apply sets the library options of the upstream keys. (Our own `labels: false` turns the
// label runtimes off whatever the tracers say.)
func (u *Upstream) apply(o *otelprof.Options) {
	on, err := u.enabledTracers()
	if err != nil { // Validate refused it already
		on = map[string]bool{}
	}
	for name, rts := range tracerRuntimes {
		if !on[name] {
			o.RuntimesOff = append(o.RuntimesOff, rts...)
		}
	}
	slices.Sort(o.RuntimesOff)
	_, o.RuntimesWanted = u.namedTracers()
	for _, v := range strings.Split(u.IncludeEnvVars, ",") {
		if v = strings.TrimSpace(v); v != "" {
			o.IncludeEnvVars = append(o.IncludeEnvVars, v)
		}
	}
	if u.ProbabilisticThreshold < probabilisticThreshMax {
		o.ProbabilisticThreshold = u.ProbabilisticThreshold
		o.ProbabilisticInterval = u.ProbabilisticInterval
	}
	o.NoErrorFrames = !u.SendErrorFrames
	o.IdleFrames = u.SendIdleFrames
	o.ClockSyncInterval = u.ClockSyncInterval
	specs, _ := u.probeSpecs()
	for _, p := range specs {
		if p.Target != "" {
			o.Probes = append(o.Probes, otelprof.Probe{Binary: p.Target, Symbol: p.Symbol,
				Ret: p.Mode == "uretprobe"})
		}
	}
}

// jittered is d varied by up to ± jitter·d (upstream's libpf.AddJitter).
func jittered(d time.Duration, jitter float64) time.Duration {
	if jitter <= 0 {
		return d
	}
	return time.Duration(float64(d) * (1 + jitter*(2*rand.Float64()-1)))
}

// noEffect says, for each upstream key without an equivalent in our design that is set to
// other than its default, why it does nothing here. Start logs it once.
func (u *Upstream) noEffect() []zap.Field {
	d := upstreamDefaults()
	var f []zap.Field
	add := func(set bool, key, why string) {
		if set {
			f = append(f, zap.String(key, why))
		}
	}
	add(u.FrameCacheSize != d.FrameCacheSize, "frame_cache_size",
		"symbolized frames are cached per binary by file identity, without an LRU to size")
	add(u.FilterMinProcessAge != 0, "filter_min_process_age",
		"every process is profiled from its first sample; short-lived ones are kept")
	add(u.MapScaleFactor != 0, "map_scale_factor",
		"BPF map sizes are fixed per design (unwind tables are shared by file, not per process); "+
			"ring_buffer_bytes sizes the one buffer that grows with load")
	add(u.GoLabelsMapScaleFactor != 0, "go_labels_map_scale_factor",
		"Go labels are read into the sample record itself; there is no Go labels map to size")
	add(u.MaxGRPCRetries != d.MaxGRPCRetries, "max_grpc_retries",
		"the receiver sends nothing over gRPC itself; the pipeline's exporter retries")
	add(u.MaxRPCMsgSize != d.MaxRPCMsgSize, "max_rpc_msg_size",
		"the receiver sends nothing over gRPC itself; the exporter's own limits apply")
	add(u.BPFFSRoot != d.BPFFSRoot, "bpf_fs_root",
		"nothing is pinned in bpffs (it served OBI trace-id sharing)")
	add(u.OBIProcessCtx, "obi_process_ctx",
		"no pinned map shared with OpenTelemetry eBPF Instrumentation; trace links come from "+
			"the labels threads publish")
	add(u.PIDNamespaceTranslation, "pid_namespace_translation",
		"pids are host pids; the container is named by container.id")
	add(u.PinCPUIDs != "", "pin_cpu_ids", "the sampler runs on every online CPU")
	add(u.LoadProbe, "load_probe",
		"no generic program is left loaded for other tools to attach; use probe_links")
	add(u.Interpreters.Ruby.SkipNativeResume, "interpreters.ruby.skip_native_resume",
		"no Ruby unwinder yet")
	add(u.Interpreters.Go.Symbolization.Disabled, "interpreters.go.symbolization",
		"Go code is symbolized from its own tables like any native code; there is no separate "+
			"Go symbolizer to turn off")
	return f
}

// logDropin logs, once at start, the upstream keys with nothing to do here and the tracers
// named with no runtime behind them.
func (u *Upstream) logDropin(logger *zap.Logger) {
	if f := u.noEffect(); len(f) > 0 {
		logger.Info("upstream receiver keys without an equivalent here are accepted and do "+
			"nothing (README.md, Migrating from the upstream receiver)", f...)
	}
	if names, _ := u.namedTracers(); len(names) > 0 {
		logger.Warn("tracers: no unwinder for these runtimes yet; their code shows as native "+
			"frames", zap.Strings("tracers", names))
	}
	on, _ := u.enabledTracers()
	var off []string
	for _, n := range tracerNames() {
		if !on[n] {
			off = append(off, n)
		}
	}
	if len(off) > 0 {
		logger.Info("tracers off", zap.Strings("tracers", off))
	}
}

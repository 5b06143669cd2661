package integration

// Drop-in for the upstream OpenTelemetry eBPF profiler's collector receiver (issue 22): the
// README's migration config runs, each upstream key has its effect, the receiver's telemetry
// is on the collector's metrics endpoint, and the output's key sets match the upstream
// receiver's side by side.

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pprofile"
)

// migrationConfig is the YAML block of README.md that follows the
// <!-- dropin-migration-config --> marker: the test runs exactly what the README shows.
func migrationConfig(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "<!-- dropin-migration-config -->")
	if i < 0 {
		t.Fatal("README.md has no <!-- dropin-migration-config --> marker")
	}
	s = s[i:]
	start := strings.Index(s, "```yaml\n")
	end := strings.Index(s[start+8:], "```")
	if start < 0 || end < 0 {
		t.Fatal("no ```yaml block after the migration marker")
	}
	cfg := filepath.Join(t.TempDir(), "migration.yaml")
	if err := os.WriteFile(cfg, []byte(s[start+8:start+8+end]), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// scrape reads the collector's Prometheus metrics endpoint: series (name{labels}) -> value.
func scrape(port int) (map[string]float64, error) {
	resp, err := http.Get(fmt.Sprintf("http://localhost:%d/metrics", port))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		out[line[:i]] = v
	}
	return out, sc.Err()
}

// metric is the sum of the series of name whose labels contain every one of want.
func metric(m map[string]float64, name string, want ...string) (float64, bool) {
	var sum float64
	found := false
	for k, v := range m {
		if k != name && !strings.HasPrefix(k, name+"{") {
			continue
		}
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(k, w)
		}
		if ok {
			sum += v
			found = true
		}
	}
	return sum, found
}

func busyEnv(t *testing.T, env []string) int {
	t.Helper()
	w := startBinaryEnv(t, env, "/bin/sh", "-c", "while :; do :; done")
	return w.Process.Pid
}

func TestDropinMigrationConfig(t *testing.T) {
	requireRoot(t)
	cfg := migrationConfig(t)
	out := filepath.Join(t.TempDir(), "profiles.pb")
	port := freePort(t)
	pid := busyEnv(t, []string{"DROPIN_MIGRATION=from-upstream"})
	col := startCollector(t, "migration", []string{"PROFILES_FILE=" + out,
		"METRICS_PORT=" + strconv.Itoa(port)}, "--config", cfg, "--feature-gates=service.profilesSupport")
	var m map[string]float64
	// the processes gauge counts those whose samples were symbolized: the first report may hold
	// the busy workload's alone, so wait for a report with the host's other processes too
	waitUntil(t, 60*time.Second, "receiver metrics with accepted samples and the host's processes "+
		"(otelcol_ebpfprofiler_processes >= 2) on the metrics endpoint",
		func() bool {
			var err error
			if m, err = scrape(port); err != nil {
				return false
			}
			acc, _ := metric(m, "otelcol_receiver_accepted_profile_samples", `receiver="ebpfprofiler"`)
			taken, _ := metric(m, "otelcol_ebpfprofiler_samples_taken")
			procs, _ := metric(m, "otelcol_ebpfprofiler_processes")
			return acc > 0 && taken > 0 && procs >= 2
		}, col)
	for _, name := range []string{"otelcol_ebpfprofiler_samples_lost", "otelcol_ebpfprofiler_samples_dropped",
		"otelcol_ebpfprofiler_processes", "otelcol_ebpfprofiler_binaries",
		"otelcol_ebpfprofiler_unwind_table_bytes", "otelcol_ebpfprofiler_symbolize_backlog_bytes",
		"otelcol_ebpfprofiler_samples_delivered", "otelcol_receiver_refused_profile_samples"} {
		if _, ok := metric(m, name); !ok {
			t.Errorf("metric %s not on the metrics endpoint", name)
		}
	}
	var byPID map[int64]*otlpProcess
	waitUntil(t, 60*time.Second, "50 samples of the busy workload in the file", func() bool {
		batches, err := readProtoFile(out)
		if err != nil {
			return false
		}
		byPID = otlpByPid(t, batches)
		n := 0
		if pr := byPID[int64(pid)]; pr != nil {
			for _, s := range pr.samples {
				n += s.weight
			}
		}
		return n >= 50
	}, col)
	col.stop(t, 30*time.Second)
	// include_env_vars
	pr := byPID[int64(pid)]
	if got := pr.resource["process.environment_variable.DROPIN_MIGRATION"]; got != "from-upstream" {
		t.Errorf("resource process.environment_variable.DROPIN_MIGRATION = %q, want from-upstream "+
			"(resource %v)", got, pr.resource)
	}
	for p, pr := range byPID {
		for k := range pr.resource {
			if strings.HasPrefix(k, "process.environment_variable.") &&
				k != "process.environment_variable.DROPIN_MIGRATION" &&
				k != "process.environment_variable.HOME" {
				t.Errorf("pid %d: resource %s, not in include_env_vars", p, k)
			}
		}
	}
	// send_idle_frames: the idle task's samples (pid 0) are recorded
	idle := 0
	if pr := byPID[0]; pr != nil {
		for _, s := range pr.samples {
			idle += s.weight
		}
	}
	t.Logf("%d samples of the idle task", idle)
	// the keys without an equivalent are logged once, the tracer without an unwinder warned
	for _, want := range []string{"without an equivalent here are accepted and do nothing",
		"map_scale_factor", "max_grpc_retries", "no unwinder for these runtimes yet", "perl"} {
		if !col.logContains(want) {
			t.Errorf("collector log lacks %q:\n%s", want, col.tail(40))
		}
	}
}

// labelsShare is the share of pid's samples carrying any label attribute, and their number.
func labelsShare(t *testing.T, out string, pid int) (float64, int) {
	t.Helper()
	batches, err := readProtoFile(out)
	if err != nil {
		t.Fatal(err)
	}
	pr := otlpByPid(t, batches)[int64(pid)]
	if pr == nil {
		return 0, 0
	}
	n, labelled := 0, 0
	for _, s := range pr.samples {
		n += s.weight
		for k := range s.attrs {
			if strings.HasPrefix(k, labelKey) {
				labelled += s.weight
				break
			}
		}
	}
	if n == 0 {
		return 0, 0
	}
	return float64(labelled) / float64(n), n
}

// TestDropinTracersOff: with the go tracer off (tracers or interpreters), Go pprof labels are
// no longer read; with it on they are.
func TestDropinTracersOff(t *testing.T) {
	requireRoot(t)
	bin := buildGoLabels(t, "", false)
	cases := []struct {
		name   string
		keys   []string
		labels bool
	}{
		{"tracers all", []string{`tracers: "all"`}, true},
		{"tracers without go", []string{`tracers: "native,python,v8,hotspot,labels"`}, false},
		{"tracers all,-go", []string{`tracers: "all,-go"`}, false},
		{"interpreters go disabled", []string{"interpreters:", "  go:", "    disabled: true"}, false},
		{"interpreters go labels disabled", []string{"interpreters:", "  go:", "    labels:",
			"      disabled: true"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := startBinaryEnv(t, nil, bin, "60")
			cfg, out := fileCollectorConfig(t, w.Process.Pid,
				append([]string{"samples_per_second: 199"}, c.keys...)...)
			col := startCollector(t, "collector", nil, "--config", cfg,
				"--feature-gates=service.profilesSupport")
			waitUntil(t, 60*time.Second, "200 samples of the workload", func() bool {
				_, n := labelsShare(t, out, w.Process.Pid)
				return n >= 200
			}, col)
			col.stop(t, 30*time.Second)
			share, n := labelsShare(t, out, w.Process.Pid)
			t.Logf("%d samples, %.0f%% labelled", n, 100*share)
			if c.labels && share < 0.4 {
				t.Errorf("labelled share %.2f, want >= 0.4 (the workload labels 75%% of its work)", share)
			}
			if !c.labels && share != 0 {
				t.Errorf("labelled share %.2f with the go tracer off, want 0", share)
			}
		})
	}
}

// TestDropinProbabilistic: probabilistic_threshold 1 leaves sampling off in 99 of 100
// intervals of one minute. The receiver's telemetry says whether this run's interval was on;
// the samples must agree: none of a busy process when off.
func TestDropinProbabilistic(t *testing.T) {
	requireRoot(t)
	pid := busyEnv(t, nil)
	port := freePort(t)
	cfg, out := fileCollectorConfig(t, pid, "samples_per_second: 199", "probabilistic_threshold: 1",
		"probabilistic_interval: 1m", "monitor_interval: 1s")
	b, _ := os.ReadFile(cfg)
	withMetrics := strings.Replace(string(b), "      level: none\n", fmt.Sprintf(`      level: normal
      readers:
        - pull:
            exporter:
              prometheus:
                host: localhost
                port: %d
`, port), 1)
	if err := os.WriteFile(cfg, []byte(withMetrics), 0o644); err != nil {
		t.Fatal(err)
	}
	col := startCollector(t, "collector", nil, "--config", cfg, "--feature-gates=service.profilesSupport")
	var on, off float64
	waitUntil(t, 60*time.Second, "the probabilistic interval on the metrics endpoint", func() bool {
		m, err := scrape(port)
		if err != nil {
			return false
		}
		on, _ = metric(m, "otelcol_ebpfprofiler_probabilistic_intervals", `sampling="on"`)
		off, _ = metric(m, "otelcol_ebpfprofiler_probabilistic_intervals", `sampling="off"`)
		return on+off >= 1
	}, col)
	time.Sleep(5 * time.Second) // a busy process at 199 Hz: ~1000 samples if sampling were on
	col.stop(t, 30*time.Second)
	batches, err := readProtoFile(out)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	if pr := otlpByPid(t, batches)[int64(pid)]; pr != nil {
		for _, s := range pr.samples {
			n += s.weight
		}
	}
	t.Logf("interval on=%v off=%v; %d samples of the busy process", on, off, n)
	if off == 1 && n != 0 {
		t.Errorf("%d samples in an interval with sampling off", n)
	}
	if on == 1 && n < 100 {
		t.Errorf("%d samples in an interval with sampling on, want >= 100", n)
	}
}

// keySets is what backends key on in a receiver's output.
type keySets struct {
	sampleTypes, resourceKeys, sampleKeys, frameTypes, locationKeys, mappingKeys map[string]bool
}

func outputKeys(batches []pprofile.Profiles) keySets {
	k := keySets{map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{},
		map[string]bool{}, map[string]bool{}}
	for _, pd := range batches {
		dict := pd.Dictionary()
		strs := dict.StringTable()
		str := func(i int32) string {
			if int(i) < strs.Len() {
				return strs.At(int(i))
			}
			return "?"
		}
		for _, rp := range pd.ResourceProfiles().All() {
			for key := range rp.Resource().Attributes().All() {
				k.resourceKeys[key] = true
			}
			for _, sp := range rp.ScopeProfiles().All() {
				for _, prof := range sp.Profiles().All() {
					st := prof.SampleType()
					k.sampleTypes[str(st.TypeStrindex())+"/"+str(st.UnitStrindex())] = true
					for _, smp := range prof.Samples().All() {
						for _, ai := range smp.AttributeIndices().All() {
							if int(ai) < dict.AttributeTable().Len() {
								k.sampleKeys[str(dict.AttributeTable().At(int(ai)).KeyStrindex())] = true
							}
						}
					}
				}
			}
		}
		for _, m := range dict.MappingTable().All() {
			for _, ai := range m.AttributeIndices().All() {
				if int(ai) < dict.AttributeTable().Len() {
					k.mappingKeys[str(dict.AttributeTable().At(int(ai)).KeyStrindex())] = true
				}
			}
		}
		for _, loc := range dict.LocationTable().All() {
			for _, ai := range loc.AttributeIndices().All() {
				if int(ai) >= dict.AttributeTable().Len() {
					continue
				}
				a := dict.AttributeTable().At(int(ai))
				k.locationKeys[str(a.KeyStrindex())] = true
				if str(a.KeyStrindex()) == "profile.frame.type" {
					k.frameTypes[a.Value().AsString()] = true
				}
			}
		}
	}
	return k
}

// sideBySideDifferences are the differences README.md ("Output conventions") lists, each with
// its reason there; any other difference fails the test.
var sideBySideDifferences = map[string]string{
	"resource key: ours only: service.name": "we name the service from the process's " +
		"OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES as its SDK does (env_resource: false turns it off)",
}

// runtimeFrameTypes are upstream's frame types of language runtimes. When a process of such a
// runtime runs on the host, upstream shows its frames; ours shows them only once the runtime's
// unwinder is in this build (python, v8 and hotspot are; the others are not
// planned). Until then its code is native frames of the interpreter or JIT: a difference the
// README lists. A runtime we do show must use upstream's name (any other name fails).
var runtimeFrameTypes = map[string]string{
	"cpython": "python", "jvm": "hotspot", "v8js": "v8", "php": "php", "perl": "perl",
	"ruby": "ruby", "dotnet": "dotnet", "beam": "beam", "luajit": "luajit",
}

func diffSets(what string, ours, theirs map[string]bool) []string {
	var d []string
	for k := range theirs {
		if !ours[k] {
			d = append(d, fmt.Sprintf("%s: upstream only: %s", what, k))
		}
	}
	for k := range ours {
		if !theirs[k] {
			d = append(d, fmt.Sprintf("%s: ours only: %s", what, k))
		}
	}
	sort.Strings(d)
	return d
}

// TestDropinSideBySide runs the upstream collector (bench/build-upstream.sh) and ours on the
// same host at the same time, with the same receiver configuration renamed, into file
// exporters, and compares the sample types, resource and sample attribute keys and frame
// types.
func TestDropinSideBySide(t *testing.T) {
	requireRoot(t)
	upstream := filepath.Join(buildDir(t), "bench", "otelcol-ebpf-profiler")
	shim := filepath.Join(buildDir(t), "bench", "memlock-shim")
	if _, err := os.Stat(upstream); err != nil {
		t.Skip("the upstream collector is not built (bench/build-upstream.sh)")
	}
	bin := buildGoLabels(t, "", false)
	w := startBinaryEnv(t, []string{"DROPIN_SIDE=1", "OTEL_SERVICE_NAME=checkout"}, bin, "60")
	// a traced function for both receivers' probes (upstream HEAD's `probes` spelling)
	dir := t.TempDir()
	probeSrc, probeBin := filepath.Join(dir, "probe.c"), filepath.Join(dir, "probe")
	if err := os.WriteFile(probeSrc, []byte(probeWorkload), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, dir, nil, "cc", "-O1", "-g", "-fno-omit-frame-pointer", "-o", probeBin, probeSrc)
	pw := startBinaryEnv(t, []string{"DROPIN_SIDE=2"}, probeBin)
	receiver := fmt.Sprintf(`    samples_per_second: 97
    reporter_interval: 2s
    include_env_vars: "DROPIN_SIDE"
    send_error_frames: true
    probes:
      - type: kprobe
        mode: uprobe
        target: %s
        symbol: traced
`, probeBin)
	write := func(name, typ string) (string, string) {
		dir := t.TempDir()
		out := filepath.Join(dir, "profiles.pb")
		cfg := filepath.Join(dir, "config.yaml")
		if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`receivers:
  %s:
%sexporters:
  file:
    path: %s
    format: proto
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    profiles:
      receivers: [%s]
      exporters: [file]
`, typ, receiver, out, typ)), 0o644); err != nil {
			t.Fatal(err)
		}
		return cfg, out
	}
	upCfg, upOut := write("upstream", "profiling")
	ourCfg, ourOut := write("ours", "ebpfprofiler")
	up := startUpstream(t, shim, upstream, "--config", upCfg, "--feature-gates=service.profilesSupport")
	ours := startCollector(t, "ours", nil, "--config", ourCfg, "--feature-gates=service.profilesSupport")
	has := func(out string) bool {
		b, err := readProtoFile(out)
		if err != nil {
			return false
		}
		pr := otlpByPid(t, b)[int64(w.Process.Pid)]
		return pr != nil && len(pr.samples) >= 20
	}
	probed := func(out string) bool {
		b, err := readProtoFile(out)
		if err != nil {
			return false
		}
		st, _ := eventStacks(t, b, pw.Process.Pid)
		return len(st) > 0
	}
	waitUntil(t, 90*time.Second, "samples of the Go workload and probe events from both receivers",
		func() bool { return has(upOut) && has(ourOut) && probed(upOut) && probed(ourOut) }, ours)
	ours.stop(t, 30*time.Second)
	up.stop(t, 30*time.Second)
	// with probe links on, every runtime still runs (each has a program on the probe chain)
	if ours.logContains("unavailable (frames stay native") {
		t.Errorf("a language runtime is unavailable with probe links on:\n%s", ours.tail(12))
	}
	ub, err := readProtoFile(upOut)
	if err != nil {
		t.Fatal(err)
	}
	ob, err := readProtoFile(ourOut)
	if err != nil {
		t.Fatal(err)
	}
	u, o := outputKeys(ub), outputKeys(ob)
	keys := func(m map[string]bool) string {
		var l []string
		for k := range m {
			l = append(l, k)
		}
		sort.Strings(l)
		return strings.Join(l, " ")
	}
	for _, k := range []keySets{u, o} {
		if len(k.sampleTypes) == 0 || len(k.resourceKeys) == 0 || len(k.sampleKeys) == 0 ||
			len(k.frameTypes) == 0 {
			t.Fatalf("empty key set: %+v", k)
		}
	}
	for _, side := range []struct {
		name string
		k    keySets
	}{{"upstream", u}, {"ours", o}} {
		t.Logf("%s: sample types [%s] resource [%s] sample [%s] frame types [%s] location [%s] "+
			"mapping [%s]", side.name, keys(side.k.sampleTypes), keys(side.k.resourceKeys),
			keys(side.k.sampleKeys), keys(side.k.frameTypes), keys(side.k.locationKeys),
			keys(side.k.mappingKeys))
	}
	var diffs []string
	diffs = append(diffs, diffSets("sample type", o.sampleTypes, u.sampleTypes)...)
	diffs = append(diffs, diffSets("resource key", o.resourceKeys, u.resourceKeys)...)
	diffs = append(diffs, diffSets("sample key", o.sampleKeys, u.sampleKeys)...)
	diffs = append(diffs, diffSets("frame type", o.frameTypes, u.frameTypes)...)
	diffs = append(diffs, diffSets("location key", o.locationKeys, u.locationKeys)...)
	diffs = append(diffs, diffSets("mapping key", o.mappingKeys, u.mappingKeys)...)
	for _, d := range diffs {
		if strings.HasPrefix(d, "frame type: ") && strings.HasSuffix(d, " only: abort-marker") {
			// both write it (send_error_frames: true here) only for a walk that failed in
			// the window: whether one did is chance, not a convention
			t.Logf("%s (a failed walk in one collector's window only)", d)
			continue
		}
		if ft, ok := strings.CutPrefix(d, "frame type: upstream only: "); ok && runtimeFrameTypes[ft] != "" {
			t.Logf("%s (README: the %s runtime has no unwinder in this build: its code shows "+
				"as native frames)", d, runtimeFrameTypes[ft])
			continue
		}
		if why, ok := sideBySideDifferences[d]; ok {
			t.Logf("%s (README: %s)", d, why)
		} else {
			t.Errorf("%s: not listed in README.md's differences", d)
		}
	}
}

// startUpstream runs the upstream collector under bench/upstream/memlock-shim (see there why),
// logging to a file; it is killed at test end.
func startUpstream(t *testing.T, shim, bin string, args ...string) *collectorProc {
	t.Helper()
	c := &collectorProc{name: "upstream", log: filepath.Join(t.TempDir(), "upstream.log"),
		done: make(chan struct{})}
	f, err := os.Create(c.log)
	if err != nil {
		t.Fatal(err)
	}
	c.cmd = exec.Command(shim, append([]string{bin}, args...)...)
	c.cmd.Stdout, c.cmd.Stderr = f, f
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		c.err = c.cmd.Wait()
		f.Close()
		close(c.done)
	}()
	t.Cleanup(func() {
		if !c.exited() {
			_ = c.cmd.Process.Kill()
			<-c.done
		}
		if t.Failed() {
			t.Logf("--- upstream log (tail):\n%s", c.tail(12))
		}
	})
	return c
}

// abortShare is the share of pid's samples whose stack ends in an abort-marker frame (an
// "[unwind error: reason]" marker) and their number.
func abortShare(t *testing.T, out string, pid int) (float64, int) {
	t.Helper()
	batches, err := readProtoFile(out)
	if err != nil {
		t.Fatal(err)
	}
	n, marked := 0, 0
	for _, pd := range batches {
		dict := pd.Dictionary()
		strs, attrs, locs := dict.StringTable(), dict.AttributeTable(), dict.LocationTable()
		isAbort := func(li int32) bool {
			if int(li) >= locs.Len() {
				return false
			}
			for _, ai := range locs.At(int(li)).AttributeIndices().All() {
				if int(ai) < attrs.Len() {
					a := attrs.At(int(ai))
					if int(a.KeyStrindex()) < strs.Len() && strs.At(int(a.KeyStrindex())) == "profile.frame.type" &&
						a.Value().AsString() == "abort-marker" {
						return true
					}
				}
			}
			return false
		}
		for _, rp := range pd.ResourceProfiles().All() {
			if v, ok := rp.Resource().Attributes().Get("process.pid"); !ok || v.Int() != int64(pid) {
				continue
			}
			for _, sp := range rp.ScopeProfiles().All() {
				for _, prof := range sp.Profiles().All() {
					for _, smp := range prof.Samples().All() {
						w := 0
						for _, v := range smp.Values().All() {
							w += int(v)
						}
						if w == 0 {
							w = smp.TimestampsUnixNano().Len()
						}
						n += w
						if si := int(smp.StackIndex()); si < dict.StackTable().Len() {
							for _, li := range dict.StackTable().At(si).LocationIndices().All() {
								if isAbort(li) {
									marked += w
									break
								}
							}
						}
					}
				}
			}
		}
	}
	if n == 0 {
		return 0, 0
	}
	return float64(marked) / float64(n), n
}

// TestDropinErrorFrames: a recursion 300 deep is more than a walk takes (128 frames), a walk
// error as upstream's (stack length exceeded); send_error_frames says whether such stacks
// carry the marker frame (upstream's abort-marker) or end at their last good frame.
func TestDropinErrorFrames(t *testing.T) {
	requireRoot(t)
	for _, c := range []struct {
		send bool
	}{{true}, {false}} {
		t.Run(fmt.Sprintf("send_error_frames=%v", c.send), func(t *testing.T) {
			w := startWorkload(t, "bench_deep", "60", "300")
			cfg, out := fileCollectorConfig(t, w.Process.Pid, "samples_per_second: 199",
				fmt.Sprintf("send_error_frames: %v", c.send))
			col := startCollector(t, "collector", nil, "--config", cfg,
				"--feature-gates=service.profilesSupport")
			waitUntil(t, 60*time.Second, "200 samples of the workload", func() bool {
				_, n := abortShare(t, out, w.Process.Pid)
				return n >= 200
			}, col)
			col.stop(t, 30*time.Second)
			share, n := abortShare(t, out, w.Process.Pid)
			t.Logf("%d samples, %.0f%% end in an abort-marker frame", n, 100*share)
			if c.send && share < 0.5 {
				t.Errorf("abort-marker share %.2f with send_error_frames, want the walk's errors marked", share)
			}
			if !c.send && share != 0 {
				t.Errorf("abort-marker share %.2f without send_error_frames, want 0", share)
			}
		})
	}
}

// probeWorkload is a C program whose function traced() is called three times from caller_a
// for each call from caller_b, about 4000 times a second.
const probeWorkload = `#include <unistd.h>
volatile int sink;
__attribute__((noinline)) void traced(int i) { sink += i; __asm__ volatile(""); }
__attribute__((noinline)) void caller_a(void) { traced(1); traced(2); traced(3); __asm__ volatile(""); }
__attribute__((noinline)) void caller_b(void) { traced(4); __asm__ volatile(""); }
int main(void) { for (;;) { caller_a(); caller_b(); usleep(1000); } }
`

// eventStacks are the events/count samples of pid: each sample's function names, leaf first,
// with its number of events; and the sample types of pid's profiles.
func eventStacks(t *testing.T, batches []pprofile.Profiles, pid int) (map[string]int, map[string]bool) {
	t.Helper()
	stacks, types := map[string]int{}, map[string]bool{}
	for _, pd := range batches {
		dict := pd.Dictionary()
		strs := dict.StringTable()
		str := func(i int32) string {
			if int(i) < strs.Len() {
				return strs.At(int(i))
			}
			return "?"
		}
		for _, rp := range pd.ResourceProfiles().All() {
			if v, ok := rp.Resource().Attributes().Get("process.pid"); !ok || v.Int() != int64(pid) {
				continue
			}
			for _, sp := range rp.ScopeProfiles().All() {
				for _, prof := range sp.Profiles().All() {
					st := str(prof.SampleType().TypeStrindex()) + "/" + str(prof.SampleType().UnitStrindex())
					types[st] = true
					if st != "events/count" {
						continue
					}
					for _, smp := range prof.Samples().All() {
						w := 0
						for _, v := range smp.Values().All() {
							w += int(v)
						}
						var names []string
						if si := int(smp.StackIndex()); si < dict.StackTable().Len() {
							for _, li := range dict.StackTable().At(si).LocationIndices().All() {
								loc := dict.LocationTable().At(int(li))
								for _, ln := range loc.Lines().All() {
									names = append(names, str(dict.FunctionTable().At(int(ln.FunctionIndex())).NameStrindex()))
								}
							}
						}
						stacks[strings.Join(names, ";")] += w
					}
				}
			}
		}
	}
	return stacks, types
}

// TestDropinProbeLinks: a uprobe link on traced() samples the stack at each call: an
// events/count profile whose stacks start at traced, called from caller_a three times as
// often as from caller_b.
func TestDropinProbeLinks(t *testing.T) {
	requireRoot(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "probe.c")
	bin := filepath.Join(dir, "probe")
	if err := os.WriteFile(src, []byte(probeWorkload), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, dir, nil, "cc", "-O1", "-g", "-fno-omit-frame-pointer", "-o", bin, src)
	w := startBinaryEnv(t, nil, bin)
	cfg, out := fileCollectorConfig(t, w.Process.Pid, "samples_per_second: 19",
		fmt.Sprintf("probe_links: [\"uprobe:%s:traced\"]", bin))
	col := startCollector(t, "collector", nil, "--config", cfg, "--feature-gates=service.profilesSupport")
	var stacks map[string]int
	var types map[string]bool
	total := 0
	waitUntil(t, 60*time.Second, "2000 probe events of the workload", func() bool {
		b, err := readProtoFile(out)
		if err != nil {
			return false
		}
		stacks, types = eventStacks(t, b, w.Process.Pid)
		total = 0
		for _, n := range stacks {
			total += n
		}
		return total >= 2000
	}, col)
	col.stop(t, 30*time.Second)
	a, b := 0, 0
	for s, n := range stacks {
		if !strings.HasPrefix(s, "traced;") {
			t.Errorf("event stack %q (%d) does not start at the traced function", s, n)
		}
		switch {
		case strings.HasPrefix(s, "traced;caller_a;main"):
			a += n
		case strings.HasPrefix(s, "traced;caller_b;main"):
			b += n
		}
	}
	t.Logf("%d events: caller_a %d, caller_b %d; sample types %v", total, a, b, types)
	if float64(a+b) < 0.95*float64(total) {
		t.Errorf("only %d of %d events have traced;caller_x;main stacks: %v", a+b, total, stacks)
	}
	if r := float64(a) / float64(a+b); r < 0.72 || r > 0.78 {
		t.Errorf("caller_a share %.3f of the events, want 0.75 (3 calls in 4)", r)
	}
}

// TestDropinIdleFrames: with send_idle_frames the idle task's samples (pid 0, the kernel's
// idle loop) are in the output; without, never. The whole host is profiled (a pid filter
// leaves the idle task out); a machine busy on every CPU for the whole minute has no idle
// samples to show, and the test says so.
func TestDropinIdleFrames(t *testing.T) {
	requireRoot(t)
	for _, send := range []bool{true, false} {
		t.Run(fmt.Sprintf("send_idle_frames=%v", send), func(t *testing.T) {
			cfg, out := fileCollectorConfig(t, 1, "samples_per_second: 499",
				fmt.Sprintf("send_idle_frames: %v", send))
			b, _ := os.ReadFile(cfg)
			if err := os.WriteFile(cfg, []byte(strings.Replace(string(b), "    pids: [1]\n", "", 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			col := startCollector(t, "collector", nil, "--config", cfg, "--feature-gates=service.profilesSupport")
			idle, others := 0, 0
			count := func() {
				batches, err := readProtoFile(out)
				if err != nil {
					return
				}
				idle, others = 0, 0
				for pid, pr := range otlpByPid(t, batches) {
					for _, s := range pr.samples {
						if pid == 0 {
							idle += s.weight
						} else {
							others += s.weight
						}
					}
				}
			}
			if send {
				deadline := time.Now().Add(60 * time.Second)
				for count(); idle == 0 && time.Now().Before(deadline); count() {
					time.Sleep(time.Second)
				}
				col.stop(t, 30*time.Second)
				if idle == 0 {
					t.Skipf("no CPU went idle in a minute (%d samples of other processes): nothing to show", others)
				}
				t.Logf("%d samples of the idle task, %d of other processes", idle, others)
				return
			}
			time.Sleep(8 * time.Second)
			col.stop(t, 30*time.Second)
			count()
			t.Logf("%d samples of the idle task, %d of other processes", idle, others)
			if others == 0 {
				t.Fatal("no samples at all")
			}
			if idle != 0 {
				t.Errorf("%d samples of the idle task without send_idle_frames", idle)
			}
		})
	}
}

// TestDropinProbeLinkBadSymbol: a probe link to a function the binary does not have stops the
// collector with one line naming the link and the way to check it.
func TestDropinProbeLinkBadSymbol(t *testing.T) {
	requireRoot(t)
	cfg, _ := fileCollectorConfig(t, os.Getpid(), `probe_links: ["uprobe:/bin/sh:no_such_function"]`)
	col := startCollector(t, "collector", nil, "--config", cfg, "--feature-gates=service.profilesSupport")
	select {
	case <-col.done:
	case <-time.After(60 * time.Second):
		t.Fatal("the collector still runs with a probe link to a missing function")
	}
	want := "cannot attach uprobe to no_such_function in /bin/sh"
	if col.err == nil || !col.logContains(want) || !col.logContains("nm -D /bin/sh") {
		t.Errorf("exit %v; log lacks %q and its hint:\n%s", col.err, want, col.tail(5))
	}
}

// TestDropinClockSync: clock_sync_interval is how often the wall clock's offset is measured
// again; the library says so at debug level (verbose_mode, the collector's logs at debug).
// Stepping the wall clock would disturb the machine, so the test counts the measurements.
func TestDropinClockSync(t *testing.T) {
	requireRoot(t)
	for _, c := range []struct {
		interval string
		min, max int
	}{{"1s", 4, 100}, {"3m", 1, 1}} {
		t.Run(c.interval, func(t *testing.T) {
			cfg, _ := fileCollectorConfig(t, os.Getpid(), "verbose_mode: true",
				"clock_sync_interval: "+c.interval)
			b, _ := os.ReadFile(cfg)
			// sampling off: the collector's log sampler keeps 10 of a kind per 10 s and
			// libbpf's debug lines at the start fill its buckets, so the one measurement
			// at the start could be dropped from the log (seen under the sanitizer build)
			debug := strings.Replace(string(b), "  telemetry:\n",
				"  telemetry:\n    logs:\n      level: debug\n      sampling:\n        enabled: false\n", 1)
			if err := os.WriteFile(cfg, []byte(debug), 0o644); err != nil {
				t.Fatal(err)
			}
			col := startCollector(t, "collector", nil, "--config", cfg, "--feature-gates=service.profilesSupport")
			waitUntil(t, 60*time.Second, "the receiver started", func() bool {
				return col.logContains("eBPF profiler started")
			}, col)
			time.Sleep(6 * time.Second)
			col.stop(t, 30*time.Second)
			log, _ := os.ReadFile(col.log)
			n := strings.Count(string(log), "clock sync: wall clock offset")
			t.Logf("%d clock measurements in about 6 s", n)
			if n < c.min || n > c.max {
				t.Errorf("%d clock measurements with clock_sync_interval %s, want %d..%d",
					n, c.interval, c.min, c.max)
			}
		})
	}
}

// TestDropinTracersPythonOff: `tracers` without python leaves a Python process's stacks
// native (the interpreter's eval loop, no Python function), with python they carry its
// functions - the key switches the runtime's unwinder, not just a label.
func TestDropinTracersPythonOff(t *testing.T) {
	requireRoot(t)
	py := pythons(t)["3.12"]
	if py == "" {
		t.Skip("skipped: no Python 3.12 under /root/.pyenv/versions")
	}
	for _, c := range []struct {
		tracers string
		python  bool
	}{{"all", true}, {"all,-python", false}} {
		t.Run(c.tracers, func(t *testing.T) {
			_, pid, _ := startPython(t, py, "ab")
			cfg, out := fileCollectorConfig(t, pid, "samples_per_second: 199",
				fmt.Sprintf("tracers: %q", c.tracers))
			col := startCollector(t, "collector", nil, "--config", cfg,
				"--feature-gates=service.profilesSupport")
			var pv *procView
			waitUntil(t, 90*time.Second, "300 samples of the Python workload", func() bool {
				batches, err := readProtoFile(out)
				if err != nil {
					t.Fatalf("file exporter output: %v", err)
				}
				pv = byPid(t, batches)[int64(pid)]
				return pv != nil && pv.samples >= 300
			}, col)
			col.stop(t, 30*time.Second)
			py, loop := pv.functions["<module>"], pv.functions["_PyEval_EvalFrameDefault"]
			t.Logf("tracers %q: %d samples, %d with <module> (%d with work_a), %d with the eval loop",
				c.tracers, pv.samples, py, pv.functions["work_a"], loop)
			if c.python && (py < pv.samples*9/10 || pv.functions["work_a"] == 0) {
				t.Errorf("python on: <module> on %d of %d samples (want >= 90%%), work_a on %d",
					py, pv.samples, pv.functions["work_a"])
			}
			if !c.python && (py+pv.functions["work_a"] != 0 || loop < pv.samples*9/10) {
				t.Errorf("python off: %d samples with Python functions (want 0), the eval loop "+
					"on %d of %d (want >= 90%%)", py, loop, pv.samples)
			}
		})
	}
}

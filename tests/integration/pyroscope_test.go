package integration

// A real backend end to end (issue 18): our collector exports the profiles of a program with
// two hot functions at 2:1 into Grafana Pyroscope (built by scripts/build-pyroscope.sh, cached
// under build/tools), and the flamegraph read back through Pyroscope's query API has the
// functions, their shares and the service's own name.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pprofile"
)

const (
	pyroscopeVersion = "v1.21.1"
	// what Pyroscope makes of samples/count with period cpu/nanoseconds
	pyroscopeCPUType = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
)

var (
	pyroscopeBuildOnce sync.Once
	pyroscopeBuildErr  error  // why the build failed (its output's last line)
	pyroscopeNoTime    string // set when the run's -timeout leaves no room for a cold build
)

// pyroscopeBinary is the cached Pyroscope build, built now when missing (8 to 15 minutes on
// 2 cores); the test is skipped, saying why, only when it cannot be built here.
func pyroscopeBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(buildDir(t), "tools", "pyroscope-"+pyroscopeVersion)
	pyroscopeBuildOnce.Do(func() {
		if _, e := os.Stat(bin); e == nil {
			return
		}
		if dl, ok := t.Deadline(); ok && time.Until(dl) < 25*time.Minute {
			pyroscopeNoTime = time.Until(dl).Round(time.Minute).String()
			return
		}
		t.Logf("building Pyroscope %s with scripts/build-pyroscope.sh (cached under %s)",
			pyroscopeVersion, filepath.Dir(bin))
		cmd := exec.Command(filepath.Join(repoRoot(t), "scripts", "build-pyroscope.sh"))
		cmd.Env = append(os.Environ(), "BUILD="+buildDir(t), "PYROSCOPE_VERSION="+pyroscopeVersion)
		if out, err := cmd.CombinedOutput(); err != nil {
			pyroscopeBuildErr = fmt.Errorf("%v: %s", err, lastLine(string(out)))
		}
	})
	if pyroscopeNoTime != "" {
		t.Fatalf("Grafana Pyroscope %s is not built yet and this run's -timeout leaves %s: run "+
			"`make pyroscope` (scripts/build-pyroscope.sh) first, or go test -timeout 40m",
			pyroscopeVersion, pyroscopeNoTime)
	}
	if pyroscopeBuildErr != nil {
		t.Skipf("skipped: Grafana Pyroscope %s cannot be built on this machine "+
			"(scripts/build-pyroscope.sh: %v)", pyroscopeVersion, pyroscopeBuildErr)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("scripts/build-pyroscope.sh succeeded but %s is missing: %v", bin, err)
	}
	return bin
}

type pyroscopeServer struct {
	url string
	log string
}

// startPyroscope runs Pyroscope in single-binary mode with every listener and every address
// it advertises on 127.0.0.1 (HTTP, gRPC, memberlist, the rings), its data in a temporary
// directory, no self-profiling and no usage reporting; it returns once /ready answers.
func startPyroscope(t *testing.T) *pyroscopeServer {
	t.Helper()
	bin := pyroscopeBinary(t)
	dir := t.TempDir()
	const lo = "127.0.0.1"
	hp, gp, ml := freePort(t), freePort(t), freePort(t)
	args := []string{
		"-server.http-listen-address=" + lo, "-server.http-listen-port=" + strconv.Itoa(hp),
		"-server.grpc-listen-address=" + lo, "-server.grpc-listen-port=" + strconv.Itoa(gp),
		"-memberlist.bind-addr=" + lo, "-memberlist.bind-port=" + strconv.Itoa(ml),
		"-memberlist.advertise-addr=" + lo, "-memberlist.advertise-port=" + strconv.Itoa(ml),
		"-memberlist.join=" + lo + ":" + strconv.Itoa(ml),
		"-ingester.lifecycler.addr=" + lo, "-distributor.ring.instance-addr=" + lo,
		"-compactor.ring.instance-addr=" + lo, "-overrides-exporter.ring.instance-addr=" + lo,
		"-query-frontend.instance-addr=" + lo, "-query-scheduler.ring.instance-addr=" + lo,
		"-store-gateway.sharding-ring.instance-addr=" + lo,
		"-ingester.min-ready-duration=0s", "-self-profiling.disable-push",
		"-usage-stats.enabled=false",
		"-pyroscopedb.data-path=" + filepath.Join(dir, "data"),
		"-compactor.data-dir=" + filepath.Join(dir, "compactor"),
		"-blocks-storage.bucket-store.sync-dir=" + filepath.Join(dir, "sync"),
	}
	p := &pyroscopeServer{url: fmt.Sprintf("http://%s:%d", lo, hp), log: filepath.Join(dir, "pyroscope.log")}
	f, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); f.Close(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		if t.Failed() {
			b, _ := os.ReadFile(p.log)
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			if len(lines) > 15 {
				lines = lines[len(lines)-15:]
			}
			t.Logf("--- pyroscope log (tail):\n%s", strings.Join(lines, "\n"))
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := (&http.Client{Timeout: 2 * time.Second}).Get(p.url + "/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return p
			}
		}
		select {
		case <-done:
			b, _ := os.ReadFile(p.log)
			t.Fatalf("pyroscope exited at start:\n%s", lastLine(string(b)))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("pyroscope not ready on %s after 60 s", p.url)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// query POSTs a JSON request to one of Pyroscope's connect (HTTP JSON) query methods.
func (p *pyroscopeServer) query(t *testing.T, method string, req, resp any) {
	t.Helper()
	body, _ := json.Marshal(req)
	r, err := http.Post(p.url+"/querier.v1.QuerierService/"+method, "application/json",
		bytes.NewReader(body))
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	if r.StatusCode != 200 {
		t.Fatalf("%s %s: %s: %s", method, body, r.Status, b)
	}
	if err := json.Unmarshal(b, resp); err != nil {
		t.Fatalf("%s: %v: %s", method, err, b)
	}
}

func queryWindow() (int64, int64) {
	now := time.Now()
	return now.Add(-time.Hour).UnixMilli(), now.Add(time.Minute).UnixMilli()
}

// flame is a flamegraph as SelectMergeStacktraces returns it, reduced to the total value of
// the root and, per function, the value of the stacks it is on.
type flame struct {
	total   int64
	onStack map[string]int64
}

// selectMerge reads the merged flamegraph of the CPU profiles of service svc. The response's
// levels hold, per level, [dx, total, self, nameIndex] per node, dx being the gap from the end
// of the previous node on that level; numbers come as JSON strings.
func (p *pyroscopeServer) selectMerge(t *testing.T, svc string) flame {
	t.Helper()
	start, end := queryWindow()
	var resp struct {
		Flamegraph struct {
			Names  []string `json:"names"`
			Levels []struct {
				Values []json.Number `json:"values"`
			} `json:"levels"`
			Total json.Number `json:"total"`
		} `json:"flamegraph"`
	}
	p.query(t, "SelectMergeStacktraces", map[string]any{
		"profileTypeID": pyroscopeCPUType,
		"labelSelector": fmt.Sprintf("{service_name=%q}", svc),
		"start":         start, "end": end, "maxNodes": 8192,
	}, &resp)
	fg := resp.Flamegraph
	f := flame{onStack: map[string]int64{}}
	f.total, _ = fg.Total.Int64()
	// node spans per level, to find each node's ancestors (a recursive function counts once)
	type node struct {
		x, w   int64
		name   string
		parent int // index in the level above, -1 for the root
	}
	var levels [][]node
	for l, lv := range fg.Levels {
		var cur []node
		var end int64
		for i := 0; i+3 < len(lv.Values); i += 4 {
			dx, _ := lv.Values[i].Int64()
			w, _ := lv.Values[i+1].Int64()
			ni, _ := lv.Values[i+3].Int64()
			n := node{x: end + dx, w: w, parent: -1}
			if ni >= 0 && int(ni) < len(fg.Names) {
				n.name = fg.Names[ni]
			}
			end = n.x + w
			if l > 0 {
				for j, pn := range levels[l-1] {
					if n.x >= pn.x && n.x < pn.x+pn.w {
						n.parent = j
						break
					}
				}
			}
			cur = append(cur, n)
			onAncestor := false
			for al, a := l-1, n.parent; al >= 0 && a >= 0; al, a = al-1, levels[al][a].parent {
				if levels[al][a].name == n.name {
					onAncestor = true
					break
				}
			}
			if !onAncestor {
				f.onStack[n.name] += w
			}
		}
		levels = append(levels, cur)
	}
	return f
}

// serviceNames is every value of the service_name label Pyroscope holds.
func (p *pyroscopeServer) serviceNames(t *testing.T) []string {
	t.Helper()
	start, end := queryWindow()
	var resp struct {
		Names []string `json:"names"`
	}
	p.query(t, "LabelValues", map[string]any{"name": "service_name", "start": start, "end": end}, &resp)
	return resp.Names
}

// seriesLabels is the label sets of the series of service svc.
func (p *pyroscopeServer) seriesLabels(t *testing.T, svc string) []map[string]string {
	t.Helper()
	start, end := queryWindow()
	var resp struct {
		LabelsSet []struct {
			Labels []struct{ Name, Value string } `json:"labels"`
		} `json:"labelsSet"`
	}
	p.query(t, "Series", map[string]any{"matchers": []string{fmt.Sprintf("{service_name=%q}", svc)},
		"start": start, "end": end}, &resp)
	var out []map[string]string
	for _, ls := range resp.LabelsSet {
		m := map[string]string{}
		for _, l := range ls.Labels {
			m[l.Name] = l.Value
		}
		out = append(out, m)
	}
	return out
}

// pyroscopeCollectorConfig: the ebpfprofiler receiver on pid (199 Hz, a report a second,
// resource attributes on samples or not) into exporter towards Pyroscope - without sending
// queue and retries, so that a refused export comes back to the receiver, which counts and logs
// it - and, alongside, a file exporter writing the same batches as OTLP/JSON lines.
func pyroscopeCollectorConfig(t *testing.T, pid int, exporter, url string, onSamples bool) (string, string) {
	t.Helper()
	dir := t.TempDir()
	out := filepath.Join(dir, "profiles.jsonl")
	cfg := filepath.Join(dir, "config.yaml")
	endpoint := url
	extra := ""
	if exporter == "otlp_grpc" { // OTLP gRPC over h2c on Pyroscope's HTTP port
		endpoint = strings.TrimPrefix(url, "http://")
		extra = "\n    tls:\n      insecure: true"
	}
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`receivers:
  ebpfprofiler:
    samples_per_second: 199
    reporter_interval: 1s
    pids: [%d]
    resource_attributes_on_samples: %t
exporters:
  %s:
    endpoint: %s%s
    sending_queue:
      enabled: false
    retry_on_failure:
      enabled: false
  file:
    path: %s
    format: json
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    profiles:
      receivers: [ebpfprofiler]
      exporters: [%s, file]
`, pid, onSamples, exporter, endpoint, extra, out, exporter)), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg, out
}

// startPyroscopeGateway runs a gateway collector: the otlp receiver (gRPC, on a free loopback
// port) forwarding with otlp_http into Pyroscope, without queue or retries, so that a refusal
// goes back to the agent. It returns the receiver's URL.
func startPyroscopeGateway(t *testing.T, pyroscopeURL string) (string, *collectorProc) {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cfg := filepath.Join(t.TempDir(), "gateway.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`receivers:
  otlp:
    protocols:
      grpc:
        endpoint: %s
exporters:
  otlp_http:
    endpoint: %s
    sending_queue:
      enabled: false
    retry_on_failure:
      enabled: false
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    profiles:
      receivers: [otlp]
      exporters: [otlp_http]
`, addr, pyroscopeURL)), 0o644); err != nil {
		t.Fatal(err)
	}
	gw := startCollector(t, "gateway", nil, "--config", cfg, "--feature-gates=service.profilesSupport")
	waitUntil(t, 60*time.Second, "the gateway listening on "+addr, func() bool { return listening(addr) }, gw)
	return "http://" + addr, gw
}

// jsonlSamples counts the CPU samples in the file exporter's OTLP/JSON lines so far.
func jsonlSamples(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n := 0
	for _, line := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		pd, err := (&pprofile.JSONUnmarshaler{}).UnmarshalProfiles(line)
		if err != nil {
			return n // a line being written
		}
		for _, rp := range pd.ResourceProfiles().All() {
			for _, sp := range rp.ScopeProfiles().All() {
				for _, prof := range sp.Profiles().All() {
					for _, s := range prof.Samples().All() {
						if s.Values().Len() > 0 {
							for _, v := range s.Values().All() {
								n += int(v)
							}
						} else {
							n += s.TimestampsUnixNano().Len()
						}
					}
				}
			}
		}
	}
	return n
}

var stoppedCounter = regexp.MustCompile(`"(consume_errors|samples_refused|samples_delivered)": (\d+)`)

// receiverCounters reads the receiver's counters from its "eBPF profiler stopped" log line.
func receiverCounters(t *testing.T, col *collectorProc) map[string]int {
	t.Helper()
	f, err := os.Open(col.log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if !strings.Contains(sc.Text(), "eBPF profiler stopped") {
			continue
		}
		m := map[string]int{}
		for _, g := range stoppedCounter.FindAllStringSubmatch(sc.Text(), -1) {
			m[g[1]], _ = strconv.Atoi(g[2])
		}
		return m
	}
	t.Fatalf("the collector log has no \"eBPF profiler stopped\" line:\n%s", col.tail(10))
	return nil
}

// TestPyroscope: twohot (hot_x:hot_y = 2:1) under its own service name, profiled by our
// collector and exported with otlp_http, with otlp_grpc, and through a gateway collector into
// Pyroscope: no export refused,
// every sample the collector sent is in Pyroscope, the flamegraph read back with
// SelectMergeStacktraces names both functions with the shares the collector's own output has
// (within 2 pp; that output converted to pprof by `otelprof convert`), under service_name =
// the program's OTEL_SERVICE_NAME, with its process attributes as labels. And the reason for
// resource_attributes_on_samples: without it, Pyroscope refuses the export as issue 18 says.
func TestPyroscope(t *testing.T) {
	requireRoot(t)
	py := startPyroscope(t)
	twohot := buildPath(t, "workloads/twohot")
	cli := buildPath(t, "otelprof")

	for _, tc := range []struct {
		name, exporter string
		gateway        bool // agent -> otlp_grpc -> gateway (otlp receiver) -> otlp_http -> Pyroscope
	}{
		{"otlp_http", "otlp_http", false},
		{"otlp_grpc", "otlp_grpc", false},
		{"via_gateway", "otlp_grpc", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exporter := tc.exporter
			svc := "twohot-" + strings.ReplaceAll(tc.name, "_", "-")
			target := py.url
			var gw *collectorProc
			if tc.gateway {
				target, gw = startPyroscopeGateway(t, py.url)
			}
			w := startBinaryEnv(t, []string{"OTEL_SERVICE_NAME=" + svc}, twohot, "120", "2", "1")
			cfg, out := pyroscopeCollectorConfig(t, w.Process.Pid, exporter, target, true)
			col := startCollector(t, "collector", nil, "--config", cfg,
				"--feature-gates=service.profilesSupport")
			waitUntil(t, 120*time.Second, "600 samples of twohot exported", func() bool {
				return jsonlSamples(t, out) >= 600
			}, col)
			col.stop(t, 30*time.Second) // the final batch is flushed to both exporters
			_ = w.Process.Kill()

			c := receiverCounters(t, col)
			if c["consume_errors"] != 0 || c["samples_refused"] != 0 || col.logContains("Exporting failed") {
				t.Fatalf("exports refused: %v\n%s", c, col.tail(6))
			}
			if gw != nil {
				gw.stop(t, 30*time.Second)
				if gw.logContains("Exporting failed") {
					t.Fatalf("the gateway's exports refused:\n%s", gw.tail(6))
				}
			}
			sent := jsonlSamples(t, out)
			if c["samples_delivered"] != sent {
				t.Errorf("the receiver delivered %d samples, the file holds %d", c["samples_delivered"], sent)
			}

			// the collector's output as pprof: the shares to compare with
			pprofPath := filepath.Join(t.TempDir(), "twohot.pb.gz")
			if r := run(t, time.Minute, cli, "convert", out, pprofPath); r.code != 0 {
				t.Fatalf("otelprof convert: exit %d: %s", r.code, r.stderr)
			}
			want := onStackShares(t, pprofPath, "hot_x", "hot_y")

			// every sample sent is in Pyroscope (values are samples x period)
			period := parseProfile(t, pprofPath).Period
			if period <= 0 {
				t.Fatalf("the pprof file has period %d", period)
			}
			var f flame
			deadline := time.Now().Add(30 * time.Second)
			for {
				f = py.selectMerge(t, svc)
				if f.total >= int64(sent)*period || time.Now().After(deadline) {
					break
				}
				time.Sleep(500 * time.Millisecond)
			}
			if got := f.total / period; got != int64(sent) {
				t.Errorf("Pyroscope holds %d samples of %s, the collector sent %d", got, svc, sent)
			}
			for _, fn := range []string{"hot_x", "hot_y"} {
				if f.onStack[fn] == 0 {
					t.Errorf("Pyroscope's flamegraph of %s has no %s (functions: %v)", svc, fn, f.onStack)
					continue
				}
				got := 100 * float64(f.onStack[fn]) / float64(f.total)
				within(t, fn+" in Pyroscope vs the pprof file", got, want[fn], 2)
			}
			// and the file itself has about the program's 2:1 (sampling on a loaded 2-core
			// machine strays a few points; a swap or a lost function would be 33 points)
			within(t, "hot_x in the pprof file (2:1 of the work)", want["hot_x"], 100*2.0/3, 12)

			names := py.serviceNames(t)
			found := false
			for _, n := range names {
				found = found || n == svc
				if strings.HasPrefix(n, "unknown_service") {
					t.Errorf("Pyroscope has a series under %q (service names %v)", n, names)
				}
			}
			if !found {
				t.Errorf("service_name %q not in Pyroscope (service names %v)", svc, names)
			}
			series := py.seriesLabels(t, svc)
			if len(series) == 0 {
				t.Fatalf("no series of %s", svc)
			}
			for _, ls := range series {
				if ls["process_pid"] != strconv.Itoa(w.Process.Pid) || ls["process_executable_name"] != "twohot" {
					t.Errorf("series of %s: process_pid %q (want %d), process_executable_name %q", svc,
						ls["process_pid"], w.Process.Pid, ls["process_executable_name"])
					break
				}
			}
			t.Logf("%s: %d samples sent and read back; %d series", tc.name, sent, len(series))
		})
	}

	// Why the key exists: this collector line writes resource attribute keys as string-table
	// indices, which Pyroscope 1.21 does not resolve. When this subtest fails, the export is
	// accepted without the key: Pyroscope or pdata changed, and the README's "Pyroscope"
	// section and the key's default are to be revisited.
	t.Run("resource_attributes_on_resource_refused", func(t *testing.T) {
		w := startBinaryEnv(t, []string{"OTEL_SERVICE_NAME=twohot-refused"}, twohot, "120", "2", "1")
		cfg, _ := pyroscopeCollectorConfig(t, w.Process.Pid, "otlp_grpc", py.url, false)
		col := startCollector(t, "collector", nil, "--config", cfg,
			"--feature-gates=service.profilesSupport")
		waitUntil(t, 60*time.Second, "the collector ready", func() bool {
			return col.logContains("Everything is ready")
		}, col)
		// reports every second: a refusal comes within a few; an acceptance is silent
		for end := time.Now().Add(15 * time.Second); time.Now().Before(end) &&
			!col.logContains("next consumer refused profiles"); {
			time.Sleep(200 * time.Millisecond)
		}
		col.stop(t, 30*time.Second)
		c := receiverCounters(t, col)
		if c["consume_errors"] == 0 || !col.logContains(`invalid label name ''`) {
			t.Errorf("export with resource attributes accepted (counters %v): Pyroscope now reads "+
				"them as this collector line writes them; revisit resource_attributes_on_samples", c)
		}
		if c["samples_delivered"] != 0 {
			t.Errorf("%d samples accepted with resource attributes on the resource", c["samples_delivered"])
		}
	})
}

package integration

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

// fetchPprof GETs a net/http/pprof URL and decodes the answer as a pprof profile; the raw
// answer is kept in save when save is not empty.
func fetchPprof(t *testing.T, url, save string) *profile.Profile {
	t.Helper()
	c := &http.Client{Timeout: 30 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s: %s", url, resp.Status, body)
	}
	if save != "" {
		if err := os.WriteFile(save, body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p, err := profile.ParseData(body)
	if err != nil {
		t.Fatalf("GET %s: the answer (%d bytes) is not a pprof profile: %v", url, len(body), err)
	}
	return p
}

// TestCollectorPprofExtension: the shipped pull-mode configuration runs our receiver and the
// pprof extension side by side; the extension answers on localhost:1777 with the collector's
// own profiles, which decode as pprof: a CPU profile of the asked length, and a goroutine
// profile that shows the receiver's collect loop (the collector's own code, not some other
// process's).
func TestCollectorPprofExtension(t *testing.T) {
	requireRoot(t)
	const addr = "localhost:1777"
	if listening(addr) {
		t.Fatalf("%s is already taken by another process: the test needs the extension's "+
			"default port", addr)
	}
	// The exporter's backend is away (a closed port): exports are retried in the background
	// and do not matter here.
	col := startCollector(t, "collector",
		[]string{fmt.Sprintf("OTELPROF_OTLP_ENDPOINT=http://127.0.0.1:%d", freePort(t))},
		"--config", shippedConfig(t, "pull-mode.yaml"), "--feature-gates=service.profilesSupport")
	waitUntil(t, 60*time.Second, "the collector ready with the pprof extension on "+addr,
		func() bool { return col.logContains("Everything is ready") && listening(addr) }, col)

	cpu := fetchPprof(t, "http://"+addr+"/debug/pprof/profile?seconds=1", "")
	if len(cpu.SampleType) == 0 || cpu.SampleType[len(cpu.SampleType)-1].Type != "cpu" ||
		cpu.PeriodType == nil || cpu.PeriodType.Unit != "nanoseconds" {
		t.Errorf("CPU profile: sample types %v, period type %v", cpu.SampleType, cpu.PeriodType)
	}
	if d := time.Duration(cpu.DurationNanos); d < 900*time.Millisecond || d > 10*time.Second {
		t.Errorf("CPU profile covers %v, asked for 1s", d)
	}
	if len(cpu.Mapping) == 0 || !strings.HasSuffix(cpu.Mapping[0].File, "otelcol-otelprof") {
		t.Errorf("CPU profile's main mapping is not the collector: %+v", cpu.Mapping)
	}

	saved := filepath.Join(t.TempDir(), "goroutine.pb.gz")
	g := fetchPprof(t, "http://"+addr+"/debug/pprof/goroutine", saved)
	found := false
	for _, s := range g.Sample {
		for _, loc := range s.Location {
			for _, ln := range loc.Line {
				if ln.Function != nil && strings.Contains(ln.Function.Name, "ebpfprofilerreceiver") {
					found = true
				}
			}
		}
	}
	if !found {
		t.Errorf("goroutine profile (%d goroutines) shows no ebpfprofilerreceiver function", len(g.Sample))
	}
	// what the README's scraper does with it: our report reads it
	html := filepath.Join(t.TempDir(), "collector.html")
	if r := run(t, time.Minute, buildPath(t, "otelprof"), "report", saved, "-o", html); r.code != 0 {
		t.Errorf("otelprof report of the scraped profile: exit %d: %s", r.code, r.stderr)
	} else if b, _ := os.ReadFile(html); !strings.Contains(string(b), "ebpfprofilerreceiver") {
		t.Errorf("the report of the scraped goroutine profile does not name the receiver")
	}
	t.Logf("CPU profile: %d samples over %v; goroutine profile: %d stacks",
		len(cpu.Sample), time.Duration(cpu.DurationNanos), len(g.Sample))
	col.stop(t, 30*time.Second)
}

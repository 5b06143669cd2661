package integration

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pprofile"
)

// procStatusKiB reads a "Name:   N kB" field (VmRSS, VmHWM) of /proc/PID/status.
func procStatusKiB(t *testing.T, pid int, field string) int {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("agent status: %v", err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		rest, ok := strings.CutPrefix(s.Text(), field+":")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
		if err != nil {
			t.Fatalf("/proc/%d/status %s: %v", pid, field, err)
		}
		return n
	}
	t.Fatalf("/proc/%d/status has no %s", pid, field)
	return 0
}

// startGatewayOn runs collector-config/gateway.yaml listening on addr, writing to out.
func startGatewayOn(t *testing.T, addr, out string) *collectorProc {
	t.Helper()
	gw := startCollector(t, "gateway", []string{
		"OTELPROF_GATEWAY_LISTEN=" + addr,
		"OTELPROF_GATEWAY_OUTPUT=" + out,
	}, "--config", shippedConfig(t, "gateway.yaml"), "--feature-gates=service.profilesSupport",
		"--set=exporters::file::flush_interval=200ms")
	waitUntil(t, 30*time.Second, "the gateway to listen on "+addr, func() bool { return listening(addr) }, gw)
	return gw
}

// agentRSSBoundKiB is the most resident memory the agent may use while its gateway is away.
// The shipped agent.yaml caps the collector's Go memory with memory_limiter (limit_mib 256)
// and keeps at most queue_size 100 batches in the exporter's queue (one batch is a few tens
// of kB at 20 Hz); the library bounds its own buffers. On top of those 256 MiB come the
// binary's mapped text (~100 MiB of a statically linked collector, counted in RSS as far
// as it is touched), the BPF maps' user-side copies and the C heap: 512 MiB leaves room for
// all of that while still failing on a leak that grows with every failed export.
const agentRSSBoundKiB = 512 * 1024

// Issue 7: the agent's exporter cannot reach the gateway. The agent keeps running, its
// memory stays bounded, the failed exports are in its log (not silent), and once a gateway
// listens on the address the workload's profiles arrive there - including the batches taken
// during the outage, which the exporter's sending_queue kept and retried: nothing is lost.
func TestE2EExporterDown(t *testing.T) {
	requireRoot(t)
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	out := filepath.Join(t.TempDir(), "gateway.otlp")
	if listening(addr) {
		t.Fatalf("something already listens on %s", addr)
	}

	// The workload runs far longer than the test; it is killed at the end.
	pid := int64(startWorkload(t, "ratio", "600").Process.Pid)
	agent := startAgent(t, addr, "1s")
	agentPid := agent.cmd.Process.Pid
	startRSS := procStatusKiB(t, agentPid, "VmRSS")

	// ~6 s of reports (one a second) with nobody to take them.
	downSince := time.Now()
	maxRSS := maxRSSWhileDown(t, agent, 6*time.Second, startRSS)
	if agent.exited() {
		t.Fatalf("agent exited (%v) while the gateway was down:\n%s", agent.err, agent.tail(20))
	}
	hwm := procStatusKiB(t, agentPid, "VmHWM")
	t.Logf("agent RSS with the gateway down: %d MiB at start, %d MiB max over %v, peak (VmHWM) %d MiB",
		startRSS/1024, maxRSS/1024, time.Since(downSince).Round(time.Second), hwm/1024)
	if hwm > agentRSSBoundKiB {
		t.Errorf("agent peak RSS %d MiB with the gateway down, bound %d MiB", hwm/1024, agentRSSBoundKiB/1024)
	}

	// The failed exports are visible in the agent's log. The exporter retries them (they sit
	// in its sending_queue), so the receiver sees no refusal; the exporter logs every failed
	// attempt with the gRPC status.
	waitUntil(t, 30*time.Second, "the agent to log a failed export", func() bool {
		return agent.logContains(exportFailedMsg)
	}, agent)
	logText, _ := os.ReadFile(agent.log)
	t.Logf("agent log: %d failed export attempts (%q) while the gateway was down",
		strings.Count(string(logText), exportFailedMsg), exportFailedMsg)
	if !agent.logContains("Unavailable") {
		t.Errorf("agent log has %q but no gRPC Unavailable status:\n%s", exportFailedMsg, agent.tail(20))
	}

	// Recovery: a gateway comes up on the address.
	gwStart := time.Now()
	gw := startGatewayOn(t, addr, out)
	listenAfter := time.Since(gwStart)
	var first time.Duration
	var view *procView
	var batches []pprofile.Profiles
	readGateway := func() {
		var err error
		if batches, err = readProtoFile(out); err != nil {
			t.Fatalf("gateway file: %v", err)
		}
		view = byPid(t, batches)[pid]
	}
	waitUntil(t, 60*time.Second, fmt.Sprintf("the workload (pid %d) in the gateway's file", pid), func() bool {
		readGateway()
		return view != nil
	}, gw, agent)
	first = time.Since(gwStart)

	// The batches of the outage sit in the exporter's queue and are retried with backoff; each
	// failed attempt is logged with the interval to the next one. Once every announced retry
	// is due, plus the exporter's 5 s timeout for an attempt that is still in flight on a slow
	// host and 2 s of slack, and no new failure was logged, all of them went through.
	waitUntil(t, 120*time.Second, "every retry of the outage's batches to be done", func() bool {
		due, n := retriesDue(t, agent)
		return n > 0 && time.Now().After(due.Add(7*time.Second))
	}, gw, agent)
	readGateway()
	ts := slices.Clone(view.timestamps)
	slices.Sort(ts)
	var gap time.Duration // logged only: under CPU contention the workload can miss a second
	for i := 1; i < len(ts); i++ {
		gap = max(gap, time.Duration(ts[i]-ts[i-1]))
	}
	complete := time.Since(gwStart)
	outage := 0
	for _, ts := range view.timestamps {
		if int64(ts) < gwStart.UnixNano() {
			outage++
		}
	}
	t.Logf("recovery: gateway listening %v after start; workload pid %d in its file %v after start, "+
		"last retry done by %v after start (largest gap between its samples %v); %d batches, "+
		"%d samples of the workload, %d of them taken while the gateway was down",
		listenAfter.Round(time.Millisecond), pid, first.Round(time.Millisecond),
		complete.Round(time.Millisecond), gap.Round(time.Millisecond), len(batches), view.samples, outage)
	if view.functions["hot_a"] == 0 {
		t.Errorf("workload's hot_a missing; top functions %v", view.top(6))
	}
	agent.stop(t, 30*time.Second)
	time.Sleep(500 * time.Millisecond) // the file exporter flushes every 200 ms
	gw.stop(t, 30*time.Second)

	// Nothing was lost across the outage: every sample the library took and did not drop
	// (counted in its "stopped" line) is in the gateway's file, and the exporter dropped
	// nothing.
	readGateway()
	took, dropped := agentSampleCounts(t, agent)
	delivered := 0
	for _, pv := range byPid(t, batches) {
		delivered += pv.samples
	}
	t.Logf("agent library: %d samples taken, %d dropped; gateway file: %d samples", took, dropped, delivered)
	if agent.logContains("Dropping data") || agent.logContains("next consumer refused") {
		t.Errorf("agent dropped data after the gateway came back:\n%s", agent.tail(20))
	}
	if took == 0 || delivered != took-dropped {
		t.Errorf("gateway holds %d samples, the agent took %d and dropped %d", delivered, took, dropped)
	}
}

// exportFailedMsg is what the collector's exporter helper logs for each failed attempt that
// it will retry.
const exportFailedMsg = "Exporting failed. Will retry the request after interval."

// retriesDue parses the exporter's "Will retry" lines in the agent's log and returns when
// the last announced retry is due (log time + "interval"), and how many lines there were.
func retriesDue(t *testing.T, agent *collectorProc) (time.Time, int) {
	t.Helper()
	b, err := os.ReadFile(agent.log)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^(\S+)\t\S+\t\S+\t` + regexp.QuoteMeta(exportFailedMsg) + `.*"interval": "([^"]+)"`)
	var due time.Time
	ms := re.FindAllSubmatch(b, -1)
	for _, m := range ms {
		at, err := time.Parse(time.RFC3339Nano, string(m[1]))
		if err != nil {
			t.Fatalf("agent log time %q: %v", m[1], err)
		}
		iv, err := time.ParseDuration(string(m[2]))
		if err != nil {
			t.Fatalf("agent log retry interval %q: %v", m[2], err)
		}
		if at.Add(iv).After(due) {
			due = at.Add(iv)
		}
	}
	return due, len(ms)
}

// maxRSSWhileDown watches the agent for d while its gateway is away: it must keep running;
// returns the largest VmRSS (KiB) seen, at least from.
func maxRSSWhileDown(t *testing.T, agent *collectorProc, d time.Duration, from int) int {
	t.Helper()
	top := from
	for start := time.Now(); time.Since(start) < d; {
		if agent.exited() {
			t.Fatalf("agent exited (%v) while the gateway was away:\n%s", agent.err, agent.tail(20))
		}
		top = max(top, procStatusKiB(t, agent.cmd.Process.Pid, "VmRSS"))
		time.Sleep(200 * time.Millisecond)
	}
	return top
}

package integration

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
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
// listens on the address the workload's profiles arrive there.
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
	maxRSS := startRSS
	for time.Since(downSince) < 6*time.Second {
		if agent.exited() {
			t.Fatalf("agent exited (%v) while the gateway was down:\n%s", agent.err, agent.tail(20))
		}
		maxRSS = max(maxRSS, procStatusKiB(t, agentPid, "VmRSS"))
		time.Sleep(200 * time.Millisecond)
	}
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
	if !agent.logContains("Unavailable") {
		t.Errorf("agent log has %q but no gRPC Unavailable status:\n%s", exportFailedMsg, agent.tail(20))
	}

	// Recovery: a gateway comes up on the address.
	gwStart := time.Now()
	gw := startGatewayOn(t, addr, out)
	listenAfter := time.Since(gwStart)
	var first time.Duration
	waitUntil(t, 60*time.Second, fmt.Sprintf("the workload (pid %d) in the gateway's file", pid), func() bool {
		batches, err := readProtoFile(out)
		if err != nil {
			t.Fatalf("gateway file: %v", err)
		}
		return byPid(t, batches)[pid] != nil
	}, gw, agent)
	first = time.Since(gwStart)
	// Batches queued during the outage are retried; give them a few seconds, then count what
	// arrived from before the gateway started.
	time.Sleep(3 * time.Second)
	batches, err := readProtoFile(out)
	if err != nil {
		t.Fatal(err)
	}
	view := byPid(t, batches)[pid]
	outage := 0
	for _, ts := range view.timestamps {
		if int64(ts) < gwStart.UnixNano() {
			outage++
		}
	}
	t.Logf("recovery: gateway listening %v after start, workload pid %d in its file %v after start; "+
		"after 3 s more: %d batches, %d samples of the workload, %d of them taken while the gateway was down",
		listenAfter.Round(time.Millisecond), pid, first.Round(time.Millisecond), len(batches),
		view.samples, outage)
	if view.functions["hot_a"] == 0 {
		t.Errorf("workload's hot_a missing; top functions %v", view.top(6))
	}
	agent.stop(t, 30*time.Second)
	gw.stop(t, 30*time.Second)
}

// exportFailedMsg is what the collector's exporter helper logs for each failed attempt that
// it will retry.
const exportFailedMsg = "Exporting failed. Will retry the request after interval."

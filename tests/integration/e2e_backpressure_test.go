package integration

// Issue 7: a consumer that fails or blocks. The agent's gateway goes away for longer than
// the agent's exporter queue (queue_size 2 here) can hold, which reaches the receiver in one
// of two ways:
//
//	refused  the queue is full and the exporter refuses new batches (the default)
//	blocked  the queue is full with block_on_overflow: ConsumeProfiles waits for room
//
// Either way the agent keeps running with its memory bounded, what it could not deliver is
// counted and logged with the number of samples, and once a gateway listens again new
// batches with the workload's samples arrive. The books balance: every sample the library
// took is in a gateway's file, or dropped by the library, or in a refused batch.

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// outageRSSBoundKiB is how far the agent's resident memory may grow over its own level before
// the outage. The exporter holds at most 2 batches and the receiver one (tens of kB each for
// one thread at 499 Hz), the library the samples of the outage (~12 bytes each); Go's heap
// may double before a collection. 64 MiB is far above all of that: a generous bound that
// still catches buffering that grows with the outage.
const outageRSSBoundKiB = 64 * 1024

var (
	refusedRe        = regexp.MustCompile(`(?m)next consumer refused profiles; report dropped\t.*"samples": (\d+), .*"samples_dropped_total": (\d+), "reports_dropped_total": (\d+)`)
	samplesRefusedRe = regexp.MustCompile(`eBPF profiler stopped.*"samples_refused": (\d+)`)
	blockedRe        = regexp.MustCompile(`(?m)next consumer has not returned.*"samples_held": (\d+)`)
)

func TestE2EExporterQueueFull(t *testing.T) { testExporterOutage(t, false) }

func TestE2EExporterBlocked(t *testing.T) { testExporterOutage(t, true) }

// startSmallQueueAgent starts the shipped agent config sending to addr, profiling only pid at
// 499 Hz with 1 s reports into an exporter queue of 2 (blocking when block), plus extra flags.
// Only the workload: a whole-host agent's memory follows whatever else the shared host runs
// (symbols and unwind tables of new binaries), not the outage.
func startSmallQueueAgent(t *testing.T, addr string, pid int64, block bool, extra ...string) *collectorProc {
	t.Helper()
	args := append([]string{
		"--config", shippedConfig(t, "agent.yaml"), "--feature-gates=service.profilesSupport",
		"--set=receivers::ebpfprofiler::reporter_interval=1s",
		fmt.Sprintf("--set=receivers::ebpfprofiler::pids=[%d]", pid),
		"--set=receivers::ebpfprofiler::samples_per_second=499",
		"--set=exporters::otlp_grpc::sending_queue::queue_size=2",
		fmt.Sprintf("--set=exporters::otlp_grpc::sending_queue::block_on_overflow=%t", block),
	}, extra...)
	return startCollector(t, "agent", []string{"OTELPROF_GATEWAY=" + addr}, args...)
}

func testExporterOutage(t *testing.T, block bool) {
	requireRoot(t)
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	dir := t.TempDir()
	out1, out2 := filepath.Join(dir, "before.otlp"), filepath.Join(dir, "after.otlp")
	gw1 := startGatewayOn(t, addr, out1)
	pid := int64(startWorkload(t, "ratio", "600").Process.Pid)
	agent := startSmallQueueAgent(t, addr, pid, block,
		// short backoffs: the queue drains soon after the gateway is back
		"--set=exporters::otlp_grpc::retry_on_failure::initial_interval=200ms",
		"--set=exporters::otlp_grpc::retry_on_failure::max_interval=1s",
		// The collector samples its log by default (of one message, 10 lines in 10 s, then
		// one in 100): the checks below read every refusal and every retry line.
		"--set=service::telemetry::logs::sampling::enabled=false")
	agentPid := agent.cmd.Process.Pid
	waitUntil(t, 30*time.Second, "the agent's receiver to start",
		func() bool { return agent.logContains("eBPF profiler started") }, agent)
	waitUntil(t, 60*time.Second, "three batches with the workload in the first gateway's file", func() bool {
		batches, err := readProtoFile(out1)
		if err != nil {
			t.Fatalf("gateway file: %v", err)
		}
		return len(batches) >= 3 && byPid(t, batches)[pid] != nil
	}, gw1, agent)
	before := procStatusKiB(t, agentPid, "VmRSS")

	// The outage: 10 s of 1 s reports, five times what the queue holds.
	gw1.stop(t, 30*time.Second)
	downAt := time.Now()
	during := maxRSSWhileDown(t, agent, 10*time.Second, before)
	logText := func() string {
		b, err := os.ReadFile(agent.log)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	// What could not be delivered is in the log, with numbers.
	if block {
		m := blockedRe.FindAllStringSubmatch(logText(), -1)
		if len(m) == 0 {
			t.Fatalf("no warning about the blocked exporter in the agent's log:\n%s", agent.tail(20))
		}
		t.Logf("blocked: %d warnings during the outage, the last with %s samples held by the library",
			len(m), m[len(m)-1][1])
		if held, _ := strconv.Atoi(m[len(m)-1][1]); held == 0 {
			t.Errorf("blocked warning says no samples are held while the workload runs")
		}
	} else {
		rs := refusals(logText())
		if len(rs) < 2 {
			t.Fatalf("%d refused reports in 10 s of outage with queue_size 2, want several:\n%s",
				len(rs), agent.tail(20))
		}
		last := rs[len(rs)-1]
		t.Logf("refused: %d reports, %d samples dropped during the outage", last.reports, last.total)
		if last.total == 0 {
			t.Errorf("refused reports carry no samples")
		}
	}

	// Recovery: a gateway listens on the address again.
	upAt := time.Now()
	gw2 := startGatewayOn(t, addr, out2)
	var newSamples, outageSamples int
	waitUntil(t, 60*time.Second, "samples of the workload taken after the gateway came back", func() bool {
		batches, err := readProtoFile(out2)
		if err != nil {
			t.Fatalf("gateway file: %v", err)
		}
		pv := byPid(t, batches)[pid]
		if pv == nil || pv.functions["hot_a"] == 0 {
			return false
		}
		newSamples, outageSamples = 0, 0
		for _, ts := range pv.timestamps {
			switch {
			case int64(ts) > upAt.UnixNano():
				newSamples++
			case int64(ts) > downAt.UnixNano():
				outageSamples++
			}
		}
		return newSamples >= 20
	}, gw2, agent)
	recovered := time.Since(upAt)
	after := procStatusKiB(t, agentPid, "VmRSS")
	// Let every retry of the queued batches finish before the agent stops (see
	// TestE2EExporterDown): the books below must balance.
	waitUntil(t, 60*time.Second, "the exporter's retries to be done", func() bool {
		due, n := retriesDue(t, agent)
		return n > 0 && time.Now().After(due.Add(7*time.Second))
	}, gw2, agent)
	hwm := procStatusKiB(t, agentPid, "VmHWM")
	agent.stop(t, 30*time.Second)
	time.Sleep(500 * time.Millisecond) // the file exporter flushes every 200 ms
	gw2.stop(t, 30*time.Second)

	t.Logf("agent RSS: %d MiB before the outage, %d MiB max during 10 s of it, %d MiB after recovery "+
		"(peak VmHWM %d MiB); workload samples in the new gateway %v after it started: %d taken "+
		"after it came back, %d taken during the outage",
		before/1024, during/1024, after/1024, hwm/1024, recovered.Round(time.Millisecond),
		newSamples, outageSamples)
	if during-before > outageRSSBoundKiB || after-before > outageRSSBoundKiB {
		t.Errorf("agent RSS grew from %d MiB to %d MiB during the outage, %d MiB after; bound +%d MiB",
			before/1024, during/1024, after/1024, outageRSSBoundKiB/1024)
	}
	if block && outageSamples == 0 {
		t.Errorf("blocked exporter: the samples the library held during the outage never arrived")
	}

	// The books: took - dropped by the library = delivered + refused by the exporter.
	took, libDropped := agentSampleCounts(t, agent)
	m := samplesRefusedRe.FindStringSubmatch(logText())
	if m == nil {
		t.Fatalf("no samples_refused in the agent's stopped line:\n%s", agent.tail(5))
	}
	refused, _ := strconv.Atoi(m[1])
	// Each refusal line carries the running totals (with the default log sampling, some
	// lines are not written): they add up, and end at the stopped line's total.
	rs := refusals(logText())
	logged := 0
	for i, r := range rs {
		if r.reports != i+1 || r.total != logged+r.samples {
			t.Errorf("refusal line %d: report %d, %d samples, total %d after %d", i+1, r.reports,
				r.samples, r.total, logged)
		}
		logged = r.total
	}
	delivered := 0
	for _, out := range []string{out1, out2} {
		batches, err := readProtoFile(out)
		if err != nil {
			t.Fatal(err)
		}
		for _, pv := range byPid(t, batches) {
			delivered += pv.samples
		}
	}
	t.Logf("agent library: %d samples taken, %d dropped; receiver: %d refused (%d in refusal lines); "+
		"gateways' files: %d samples", took, libDropped, refused, logged, delivered)
	if logged != refused {
		t.Errorf("refusal lines add up to %d samples, the stopped line says %d", logged, refused)
	}
	if block && refused != 0 {
		t.Errorf("blocked exporter: %d samples refused, want none (the library holds them)", refused)
	}
	if !block && refused == 0 {
		t.Errorf("full queue: no samples refused")
	}
	if took == 0 || delivered+refused != took-libDropped {
		t.Errorf("gateways hold %d samples and %d were refused; the library took %d and dropped %d",
			delivered, refused, took, libDropped)
	}
}

// refusal is one "next consumer refused profiles" line of the agent's log.
type refusal struct{ samples, total, reports int }

func refusals(log string) []refusal {
	var out []refusal
	for _, m := range refusedRe.FindAllStringSubmatch(log, -1) {
		var r refusal
		r.samples, _ = strconv.Atoi(m[1])
		r.total, _ = strconv.Atoi(m[2])
		r.reports, _ = strconv.Atoi(m[3])
		out = append(out, r)
	}
	return out
}

// SIGTERM while the exporter blocks (no gateway at all, queue full with block_on_overflow):
// the collector gives none of its components a deadline, so without one of its own the
// receiver waited for the exporter's retries to run out (retry_on_failure max_elapsed_time,
// 5 min in agent.yaml; 9 minutes were seen). It waits 5 s, counts the report it gives up
// and the final one as refused, and the agent exits.
func TestE2EExporterBlockedSIGTERM(t *testing.T) {
	requireRoot(t)
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	pid := int64(startWorkload(t, "ratio", "600").Process.Pid)
	agent := startSmallQueueAgent(t, addr, pid, true)
	waitUntil(t, 60*time.Second, "the receiver to warn that the exporter blocks", func() bool {
		return agent.logContains("next consumer has not returned")
	}, agent)
	signalled := time.Now()
	// 60 s bounds a hang; the exit itself is logged, not asserted.
	agent.stop(t, 60*time.Second)
	b, err := os.ReadFile(agent.log)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`eBPF profiler stopped.*"consume_errors": (\d+), "samples_refused": (\d+)`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no stopped line with consume_errors and samples_refused:\n%s", agent.tail(10))
	}
	reports, _ := strconv.Atoi(string(m[1]))
	refused, _ := strconv.Atoi(string(m[2]))
	t.Logf("agent exited %v after SIGTERM; %d reports (%d samples) refused at shutdown",
		time.Since(signalled).Round(time.Millisecond), reports, refused)
	if reports < 1 || refused == 0 {
		t.Errorf("the report abandoned at shutdown was not counted: %d reports, %d samples refused", reports, refused)
	}
}

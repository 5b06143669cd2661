package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"
)

// e2eWorkloadC is the program the end-to-end tests profile: named functions on named threads.
//
//	e2e-workload        two threads, "e2e-alpha" in e2e_hot_alpha and "e2e-beta" in e2e_hot_beta
//	e2e-workload late   one thread "e2e-late" in e2e_late_words
const e2eWorkloadC = `
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <string.h>

static volatile uint64_t sink;

static void spin(void)
{
	uint64_t x = sink;
	for (int i = 0; i < 200000; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	sink = x;
}

__attribute__((noinline)) void e2e_hot_alpha(void) { for (;;) spin(); }
__attribute__((noinline)) void e2e_hot_beta(void) { for (;;) spin(); }
__attribute__((noinline)) void e2e_late_words(void) { for (;;) spin(); }

static void *run(void *arg)
{
	const char *name = arg;
	pthread_setname_np(pthread_self(), name);
	if (!strcmp(name, "e2e-alpha"))
		e2e_hot_alpha();
	else if (!strcmp(name, "e2e-beta"))
		e2e_hot_beta();
	else
		e2e_late_words();
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t a, b;
	if (argc > 1 && !strcmp(argv[1], "late")) {
		pthread_create(&a, NULL, run, "e2e-late");
	} else {
		pthread_create(&a, NULL, run, "e2e-alpha");
		pthread_create(&b, NULL, run, "e2e-beta");
	}
	pthread_join(a, NULL);
	return 0;
}
`

// agentSampleCounts reads the library counters the receiver logs when it stops.
func agentSampleCounts(t *testing.T, agent *collectorProc) (took, dropped int) {
	t.Helper()
	b, err := os.ReadFile(agent.log)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`eBPF profiler stopped.*"samples": (\d+), "lost": \d+, "dropped": (\d+)`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("agent log has no \"eBPF profiler stopped\" line with counters:\n%s", agent.tail(5))
	}
	took, _ = strconv.Atoi(string(m[1]))
	dropped, _ = strconv.Atoi(string(m[2]))
	return took, dropped
}

// buildE2EWorkload compiles the workload into a temporary directory.
func buildE2EWorkload(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "e2e-workload.c")
	bin := filepath.Join(dir, "e2e-workload")
	if err := os.WriteFile(src, []byte(e2eWorkloadC), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("gcc", "-O1", "-g", "-fno-omit-frame-pointer", "-mno-omit-leaf-frame-pointer",
		"-pthread", "-o", bin, src).CombinedOutput()
	if err != nil {
		t.Fatalf("cannot build the workload: %v\n%s", err, out)
	}
	return bin
}

func startE2EWorkload(t *testing.T, bin string, args ...string) int {
	t.Helper()
	cmd := exec.Command(bin, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd.Process.Pid
}

// startGateway runs collector-config/gateway.yaml on a free loopback port, writing to a file
// in the test's temporary directory. It returns the process, its address and the file.
func startGateway(t *testing.T) (*collectorProc, string, string) {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	out := filepath.Join(t.TempDir(), "gateway.otlp")
	return startGatewayOn(t, addr, out), addr, out
}

// startAgent runs collector-config/agent.yaml (whole host) exporting to the gateway.
func startAgent(t *testing.T, gatewayAddr string, reporterInterval string) *collectorProc {
	t.Helper()
	agent := startCollector(t, "agent", []string{"OTELPROF_GATEWAY=" + gatewayAddr},
		"--config", shippedConfig(t, "agent.yaml"), "--feature-gates=service.profilesSupport",
		"--set=receivers::ebpfprofiler::reporter_interval="+reporterInterval)
	waitUntil(t, 30*time.Second, "the agent's receiver to start",
		func() bool { return agent.logContains("eBPF profiler started") }, agent)
	return agent
}

// Agent (ebpfprofiler -> otlp_grpc) and gateway (otlp -> file), both real collectors built by
// `make`, with the shipped configurations: the gateway's file holds the workload's functions,
// its pid as a resource attribute and its thread names.
func TestE2EAgentToGateway(t *testing.T) {
	requireRoot(t)
	bin := buildE2EWorkload(t)
	gw, addr, out := startGateway(t)
	pid := int64(startE2EWorkload(t, bin))
	agent := startAgent(t, addr, "1s")

	var view *procView
	// The workload keeps both CPUs busy, so at 20 Hz the first batches may hold only it: wait
	// for another process too (the collectors themselves), as a whole-host agent must show.
	waitUntil(t, 60*time.Second, fmt.Sprintf("the workload (pid %d) and another process in the gateway's file", pid), func() bool {
		batches, err := readProtoFile(out)
		if err != nil {
			t.Fatalf("gateway file: %v", err)
		}
		procs := byPid(t, batches)
		view = procs[pid]
		return view != nil && view.functions["e2e_hot_alpha"] >= 10 &&
			view.functions["e2e_hot_beta"] >= 10 && len(procs) >= 2
	}, gw, agent)
	agent.stop(t, 30*time.Second)
	gw.stop(t, 30*time.Second)

	batches, err := readProtoFile(out)
	if err != nil {
		t.Fatal(err)
	}
	procs := byPid(t, batches)
	view = procs[pid]
	t.Logf("gateway file: %d batches, %d processes; workload pid %d (%s): %d samples, threads %v, top %v",
		len(batches), len(procs), pid, view.exeName, view.samples, view.threads, view.top(6))
	if view.exeName != "e2e-workload" {
		t.Errorf("process.executable.name = %q, want e2e-workload", view.exeName)
	}
	for _, fn := range []string{"e2e_hot_alpha", "e2e_hot_beta", "spin"} {
		if view.functions[fn] == 0 {
			t.Errorf("function %s missing; top functions %v", fn, view.top(10))
		}
	}
	for _, th := range []string{"e2e-alpha", "e2e-beta"} {
		// Each thread spins on its own: about half the process's samples each.
		if share := float64(view.threads[th]) / float64(view.samples); share < 0.25 {
			t.Errorf("thread.name %q on %.0f%% of the samples, want about half; threads %v",
				th, 100*share, view.threads)
		}
	}
	if len(procs) < 2 {
		t.Errorf("whole-host agent reported only %d process(es)", len(procs))
	}
	if agent.logContains("next consumer refused") || agent.logContains("cannot decode") {
		t.Errorf("agent logged delivery errors:\n%s", agent.tail(20))
	}
}

// SIGTERM to the agent: the receiver stops sampling and its last batch - everything since
// the previous report - reaches the gateway before the agent exits. With reporter_interval
// 1h there is no periodic report, so all the gateway gets comes from that final flush.
func TestE2EFinalFlushOnSIGTERM(t *testing.T) {
	requireRoot(t)
	bin := buildE2EWorkload(t)
	gw, addr, out := startGateway(t)
	agent := startAgent(t, addr, "1h")

	pid := int64(startE2EWorkload(t, bin, "late"))
	started := time.Now()
	time.Sleep(3 * time.Second)
	signalled := time.Now()
	agent.stop(t, 30*time.Second)
	exitTook := time.Since(signalled)

	var view *procView
	waitUntil(t, 15*time.Second, "the final flush in the gateway's file", func() bool {
		batches, err := readProtoFile(out)
		if err != nil {
			t.Fatalf("gateway file: %v", err)
		}
		view = byPid(t, batches)[pid]
		return view != nil
	}, gw)
	// The file exporter flushes every 200ms; give the last write a moment, then read it all.
	time.Sleep(500 * time.Millisecond)
	batches, _ := readProtoFile(out)
	view = byPid(t, batches)[pid]
	gw.stop(t, 30*time.Second)

	slices.Sort(view.timestamps)
	if len(view.timestamps) == 0 {
		t.Fatalf("the workload's samples carry no timestamps; functions %v", view.top(5))
	}
	first := time.Unix(0, int64(view.timestamps[0]))
	last := time.Unix(0, int64(view.timestamps[len(view.timestamps)-1]))
	// 20 Hz per CPU for 3 s of one busy thread is up to 60 samples.
	t.Logf("final flush: %d samples of pid %d over %v (first %v after start, last %v before SIGTERM); "+
		"agent exited %v after SIGTERM; threads %v",
		view.samples, pid, last.Sub(first).Round(time.Millisecond), first.Sub(started).Round(time.Millisecond),
		signalled.Sub(last).Round(time.Millisecond), exitTook.Round(time.Millisecond), view.threads)
	// Nothing the library took before the signal is lost on the way: with no periodic report,
	// every sample it received (minus any it dropped, logged) must be in the gateway's file.
	took, dropped := agentSampleCounts(t, agent)
	delivered := 0
	for _, pv := range byPid(t, batches) {
		delivered += pv.samples
	}
	t.Logf("agent library: %d samples taken, %d dropped; gateway file: %d samples", took, dropped, delivered)
	if took == 0 || delivered != took-dropped {
		t.Errorf("gateway holds %d samples, the agent took %d and dropped %d", delivered, took, dropped)
	}
	if view.samples < 5 {
		t.Errorf("only %d samples of 3 s of a busy thread at 20 Hz", view.samples)
	}
	if gap := signalled.Sub(last); gap > time.Second {
		t.Errorf("newest sample delivered was taken %v before SIGTERM, want < 1s", gap)
	}
	if view.functions["e2e_late_words"] == 0 || view.threads["e2e-late"] == 0 {
		t.Errorf("functions %v, threads %v: want e2e_late_words on thread e2e-late", view.top(5), view.threads)
	}
}

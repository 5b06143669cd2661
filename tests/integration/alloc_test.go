package integration

// Memory allocation profiling (issue 19): uprobes on the allocator, sampling by bytes,
// Go's heap profile types. tests/workloads/alloc.c allocates 3:1:1 by bytes from alloc_hot,
// alloc_warm and alloc_keep (which keeps its memory) and prints how many bytes each asked for.

import (
	"bufio"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

// allocTypes are the indices of Go's four heap sample types in p, or the test fails.
func allocTypes(t *testing.T, p *profile.Profile) (allocObj, allocSpace, inuseObj, inuseSpace int) {
	t.Helper()
	idx := map[string]int{}
	for i, st := range p.SampleType {
		idx[st.Type+"/"+st.Unit] = i + 1
	}
	for _, k := range []string{"alloc_objects/count", "alloc_space/bytes", "inuse_objects/count", "inuse_space/bytes"} {
		if idx[k] == 0 {
			t.Fatalf("no sample type %s: %v", k, p.SampleType)
		}
	}
	return idx["alloc_objects/count"] - 1, idx["alloc_space/bytes"] - 1, idx["inuse_objects/count"] - 1,
		idx["inuse_space/bytes"] - 1
}

// allocRun is one recording of the workload's whole run (started once probes are attached).
type allocRun struct {
	p                      *profile.Profile
	pid                    int
	total, hot, warm, keep float64 // bytes the workload asked for
	sampled                int     // sampled allocations, from the recorder's summary
	stderr                 string
}

func recordAllocWorkload(t *testing.T, name, mean, mib string, env ...string) allocRun {
	t.Helper()
	return recordAllocMode(t, name, "wait", mean, mib, env...)
}

// recordAllocMode: mode "hostile" runs the workload's hostile part first, recorded too.
func recordAllocMode(t *testing.T, name, mode, mean, mib string, env ...string) allocRun {
	t.Helper()
	w := exec.Command(buildPath(t, "workloads/"+name), mib, mode)
	w.Stderr = os.Stderr
	w.Env = append(os.Environ(), env...)
	stdout, err := w.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Process.Kill(); _ = w.Wait() })
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() || lines.Text() != "ready" {
		t.Fatalf("workload did not start: %q", lines.Text())
	}
	out := t.TempDir() + "/alloc.pb.gz"
	rec, rest := startRecording(t, "--pid", strconv.Itoa(w.Process.Pid), "--frequency", "19",
		"--alloc="+mean, "--output", out)
	_ = w.Process.Signal(syscall.SIGUSR1)
	if mode == "hostile" {
		if !lines.Scan() || lines.Text() != "hostile done" || !lines.Scan() || lines.Text() != "ready" {
			t.Fatalf("workload's hostile part did not end: %q", lines.Text())
		}
		_ = w.Process.Signal(syscall.SIGUSR1)
	}
	if !lines.Scan() {
		t.Fatal("workload ended without its summary")
	}
	f := strings.Fields(lines.Text())
	if len(f) != 5 || f[0] != "done" {
		t.Fatalf("workload summary %q", lines.Text())
	}
	r := allocRun{pid: w.Process.Pid}
	for i, v := range []*float64{&r.total, &r.hot, &r.warm, &r.keep} {
		n, err := strconv.ParseFloat(f[i+1], 64)
		if err != nil {
			t.Fatal(err)
		}
		*v = n
	}
	// records reach user space within the reader's 100 ms poll; the frees are long done
	time.Sleep(500 * time.Millisecond)
	_ = rec.Process.Signal(syscall.SIGINT)
	if err := rec.Wait(); err != nil {
		t.Fatalf("otelprof record: %v: %s", err, <-rest)
	}
	r.stderr = <-rest
	m := regexp.MustCompile(`and (\d+) sampled allocations`).FindStringSubmatch(r.stderr)
	if m == nil {
		t.Fatalf("no allocation summary in the recorder's output: %s", r.stderr)
	}
	r.sampled, _ = strconv.Atoi(m[1])
	checkWithGoToolPprof(t, out)
	r.p = parseProfile(t, out)
	return r
}

// checkAllocShares asserts the figures on one run.
func checkAllocShares(t *testing.T, r allocRun) {
	t.Helper()
	ao, as, io, is := allocTypes(t, r.p)
	if r.sampled < 1000 {
		t.Errorf("%d sampled allocations, want at least 1000", r.sampled)
	}
	var space, objects, inuse float64
	by := map[string]float64{}
	inuseBy := map[string]float64{}
	funcs := []string{"alloc_hot", "alloc_warm", "alloc_keep"}
	for _, s := range samplesOf(r.p, r.pid) {
		space += float64(s.Value[as])
		objects += float64(s.Value[ao])
		inuse += float64(s.Value[is])
		if s.Value[ao] < 0 || s.Value[as] < 0 || s.Value[io] < 0 || s.Value[is] < 0 {
			t.Fatalf("negative value in %v", s.Value)
		}
		for _, fn := range funcs {
			if hasFunc(s, fn) {
				by[fn] += float64(s.Value[as])
				inuseBy[fn] += float64(s.Value[is])
			}
		}
	}
	if space == 0 || objects == 0 {
		t.Fatalf("no alloc_space or alloc_objects in the profile: %s", r.stderr)
	}
	t.Logf("%d sampled allocations; estimated %.1f MB allocated in %.0f objects, truth %.1f MB",
		r.sampled, space/1e6, objects, r.total/1e6)
	within(t, "estimated bytes allocated (of the truth)", 100*space/r.total, 100, 10)
	within(t, "alloc_space in alloc_hot", 100*by["alloc_hot"]/space, 100*r.hot/r.total, 3)
	within(t, "alloc_space in alloc_warm", 100*by["alloc_warm"]/space, 100*r.warm/r.total, 3)
	within(t, "alloc_space in alloc_keep", 100*by["alloc_keep"]/space, 100*r.keep/r.total, 3)
	if inuse == 0 {
		t.Fatal("no inuse_space at the end")
	}
	if pct := 100 * inuseBy["alloc_keep"] / inuse; pct < 90 {
		t.Errorf("inuse_space in alloc_keep: %.1f%%, want >= 90%% (hot %.1f%%, warm %.1f%%)", pct,
			100*inuseBy["alloc_hot"]/inuse, 100*inuseBy["alloc_warm"]/inuse)
	} else {
		t.Logf("inuse_space in alloc_keep: %.1f%% of %.1f MB (kept %.1f MB)", pct, inuse/1e6, r.keep/1e6)
	}
}

// TestAllocGlibc: 64 MiB through glibc's malloc, calloc, realloc, posix_memalign and
// aligned_alloc at a mean of 16 KiB (about 3,000 samples: the shares' standard deviation is
// under 1 pp, the total's under 2 %; the tolerances are 3 pp and 10 %).
func TestAllocGlibc(t *testing.T) {
	requireRoot(t)
	r := recordAllocWorkload(t, "alloc", "16k", "64")
	checkAllocShares(t, r)
}

// TestAllocJemalloc: the same program linked with jemalloc (libjemalloc-dev): its malloc is
// jemalloc's, found by symbol in libjemalloc.so.2 beside glibc's.
func TestAllocJemalloc(t *testing.T) {
	requireRoot(t)
	if _, err := os.Stat(buildPath(t, "workloads/alloc-jemalloc")); err != nil {
		t.Skip("build/workloads/alloc-jemalloc not built (needs libjemalloc-dev)")
	}
	r := recordAllocWorkload(t, "alloc-jemalloc", "16k", "64")
	checkAllocShares(t, r)
}

// TestAllocPreload: the in-process route - the workload runs with libotelprof_alloc.so
// preloaded (mean 16 KiB from its environment), which samples by itself and calls its
// markers only for sampled allocations and their frees; the same figures, and no frame of
// the sampler's own in the stacks.
func TestAllocPreload(t *testing.T) {
	requireRoot(t)
	r := recordAllocWorkload(t, "alloc", "512k", "64", "LD_PRELOAD="+buildPath(t, "libotelprof_alloc.so"),
		"OTELPROF_ALLOC_MEAN=16k")
	checkAllocShares(t, r)
	// allocation samples only: a CPU sample may well land in the preload's calloc (its memset)
	allocObj, _, _, _ := allocTypes(t, r.p)
	for _, s := range samplesOf(r.p, r.pid) {
		if s.Value[allocObj] == 0 {
			continue
		}
		for _, loc := range s.Location {
			if loc.Mapping != nil && strings.Contains(loc.Mapping.File, "libotelprof_alloc") {
				t.Fatalf("a frame of the in-process sampler in %s", strings.Join(funcNames(s), " <- "))
			}
		}
	}
}

// TestAllocHostile: before its 3:1:1 run the workload asks for 2^62 bytes and SIZE_MAX, has a
// calloc overflow, realloc(NULL, n), realloc(p, 0), free(NULL), allocates in a signal handler
// and forks a child that frees the parent's 256 blocks of 64 KiB and exits (the parent frees
// them too). The recorder survives, nothing is invented from the failed calls (the estimate
// stays within 10 % of what was really allocated), the run's shares hold, and nothing of the
// hostile part is left in use.
func TestAllocHostile(t *testing.T) {
	requireRoot(t)
	r := recordAllocMode(t, "alloc", "hostile", "16k", "64")
	_, as, _, is := allocTypes(t, r.p)
	const hostileBytes = 256*65536 + 1000
	var space, three, inuse, keepInuse float64
	by := map[string]float64{}
	for _, s := range samplesOf(r.p, r.pid) {
		space += float64(s.Value[as])
		inuse += float64(s.Value[is])
		if hasFunc(s, "alloc_keep") {
			keepInuse += float64(s.Value[is])
		}
		for _, fn := range []string{"alloc_hot", "alloc_warm", "alloc_keep"} {
			if hasFunc(s, fn) {
				by[fn] += float64(s.Value[as])
				three += float64(s.Value[as])
			}
		}
	}
	t.Logf("%s", strings.TrimSpace(r.stderr[strings.LastIndex(r.stderr, "otelprof: and"):]))
	if m := regexp.MustCompile(`(\d+) sampled calls that failed`).FindStringSubmatch(r.stderr); m == nil || atoi(t, m[1]) < 2 {
		t.Errorf("the failed 2^62 and SIZE_MAX mallocs are not counted: %s", r.stderr)
	}
	within(t, "estimated bytes (of the run's and the hostile part's)", 100*space/(r.total+hostileBytes), 100, 10)
	within(t, "alloc_hot of the three", 100*by["alloc_hot"]/three, 100*r.hot/r.total, 3)
	within(t, "alloc_keep of the three", 100*by["alloc_keep"]/three, 100*r.keep/r.total, 3)
	if inuse == 0 || keepInuse/inuse < 0.9 {
		t.Errorf("inuse_space in alloc_keep: %.0f of %.0f bytes, want >= 90%%", keepInuse, inuse)
	}
}

// TestAllocOff: without --alloc a recording has no heap sample types and probes nothing.
func TestAllocOff(t *testing.T) {
	requireRoot(t)
	w := startWorkload(t, "alloc", "16", "loop")
	p, r := record(t, "--pid", strconv.Itoa(w.Process.Pid), "--duration", "1")
	for _, st := range p.SampleType {
		if strings.HasPrefix(st.Type, "alloc_") || strings.HasPrefix(st.Type, "inuse_") {
			t.Errorf("sample type %s without --alloc", st.Type)
		}
	}
	if strings.Contains(r.stderr, "sampled allocations") {
		t.Errorf("allocation summary without --alloc: %s", r.stderr)
	}
}

// TestAllocBadMean: a mean that is not a byte count is refused with one line naming it.
func TestAllocBadMean(t *testing.T) {
	for _, bad := range []string{"0", "-5", "12x", "abc"} {
		r := run(t, 30*time.Second, buildPath(t, "otelprof"), "record", "--alloc="+bad, "--duration", "1")
		if r.code == 0 || !strings.Contains(r.stderr, "invalid --alloc '"+bad+"'") {
			t.Errorf("--alloc=%s: exit %d, stderr %q", bad, r.code, r.stderr)
		}
	}
}

// TestAllocCollector: alloc_mean_bytes through the collector: OTLP profiles of the four
// heap types, alloc_space with the workload's functions.
func TestAllocCollector(t *testing.T) {
	requireRoot(t)
	w := startWorkload(t, "alloc", "16", "loop")
	cfg, out := fileCollectorConfig(t, w.Process.Pid, "samples_per_second: 19",
		"alloc_mean_bytes: 65536")
	col := startCollector(t, "collector", nil, "--config", cfg, "--feature-gates=service.profilesSupport")
	var types map[string]int64
	waitUntil(t, 60*time.Second, "the four heap profiles in the file", func() bool {
		batches, err := readProtoFile(out)
		if err != nil {
			t.Fatalf("file exporter output: %v", err)
		}
		types = map[string]int64{}
		for _, pd := range batches {
			dict := pd.Dictionary()
			str := func(i int32) string { return dict.StringTable().At(int(i)) }
			for _, rp := range pd.ResourceProfiles().All() {
				for _, sp := range rp.ScopeProfiles().All() {
					for _, prof := range sp.Profiles().All() {
						st := prof.SampleType()
						key := str(st.TypeStrindex()) + "/" + str(st.UnitStrindex())
						for _, smp := range prof.Samples().All() {
							for _, v := range smp.Values().All() {
								types[key] += v
							}
						}
					}
				}
			}
		}
		return types["alloc_objects/count"] > 0 && types["alloc_space/bytes"] > 0 &&
			types["inuse_objects/count"] > 0 && types["inuse_space/bytes"] > 0
	}, col)
	col.stop(t, 30*time.Second)
	t.Logf("values by sample type: %v", types)
	if types["alloc_space/bytes"] < types["alloc_objects/count"]*16 {
		t.Errorf("alloc_space %d below 16 bytes per object (%d objects)", types["alloc_space/bytes"],
			types["alloc_objects/count"])
	}
}

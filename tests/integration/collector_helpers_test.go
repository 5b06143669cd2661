package integration

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pprofile"
)

// repoRoot is the repository's top directory (this package is tests/integration).
func repoRoot(t *testing.T) string {
	t.Helper()
	abs, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// shippedConfig is collector-config/NAME, the configurations users run.
func shippedConfig(t *testing.T, name string) string {
	return filepath.Join(repoRoot(t), "collector-config", name)
}

// collectorProc is a running build/otelcol-otelprof whose output goes to a log file.
type collectorProc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error // exit status, valid after done is closed
}

// startCollector runs the collector with args and env additions; it is killed at test end.
func startCollector(t *testing.T, name string, env []string, args ...string) *collectorProc {
	t.Helper()
	return startCollectorUnder(t, name, nil, env, args...)
}

// startCollectorUnder runs the collector as the last argument of wrapper (e.g. setpriv and
// its options); nil runs it directly.
func startCollectorUnder(t *testing.T, name string, wrapper, env []string, args ...string) *collectorProc {
	t.Helper()
	bin := buildPath(t, "otelcol-otelprof")
	c := &collectorProc{name: name, log: filepath.Join(t.TempDir(), name+".log"), done: make(chan struct{})}
	f, err := os.Create(c.log)
	if err != nil {
		t.Fatal(err)
	}
	argv := append(append(append([]string{}, wrapper...), bin), args...)
	c.cmd = exec.Command(argv[0], argv[1:]...)
	c.cmd.Env = append(os.Environ(), env...)
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
		select {
		case <-c.done:
		default:
			_ = c.cmd.Process.Kill()
			<-c.done
		}
		if t.Failed() {
			if r := c.crashReport(40); r != "" {
				t.Logf("--- %s crashed:\n%s", c.name, r)
			}
			t.Logf("--- %s log (tail):\n%s", c.name, c.tail(12))
		}
	})
	return c
}

func (c *collectorProc) tail(n int) string {
	b, _ := os.ReadFile(c.log)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// crashReport: the first @n lines of a sanitizer report or Go panic in the log, or "" (the
// tail of such a report is only the shadow-byte legend or goroutine dumps).
func (c *collectorProc) crashReport(n int) string {
	b, _ := os.ReadFile(c.log)
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		if strings.Contains(l, "ERROR: AddressSanitizer") || strings.Contains(l, "runtime error:") ||
			strings.HasPrefix(l, "panic: ") || strings.HasPrefix(l, "fatal error: ") ||
			strings.HasPrefix(l, "SIG") {
			end := min(i+n, len(lines))
			return strings.Join(lines[i:end], "\n")
		}
	}
	return ""
}

func (c *collectorProc) logContains(s string) bool {
	b, _ := os.ReadFile(c.log)
	return bytes.Contains(b, []byte(s))
}

func (c *collectorProc) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM and waits up to timeout for a clean exit.
func (c *collectorProc) stop(t *testing.T, timeout time.Duration) {
	t.Helper()
	// The collector logs "Everything is ready" before it installs its SIGTERM handler
	// (otelcol Collector.Run): a signal in between kills it outright. Leave it a moment.
	if c.logContains("Everything is ready") {
		time.Sleep(250 * time.Millisecond)
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(timeout):
		t.Fatalf("%s did not exit within %v of SIGTERM", c.name, timeout)
	}
	if c.err != nil {
		t.Errorf("%s exited with %v after SIGTERM", c.name, c.err)
	}
}

// waitUntil polls cond every 200ms until it holds, the collector exits or timeout passes.
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool, procs ...*collectorProc) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		for _, p := range procs {
			if p.exited() {
				t.Fatalf("%s exited (%v) while waiting for %s", p.name, p.err, what)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// freePort returns a loopback TCP port nobody listens on right now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func listening(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// readProtoFile decodes what the file exporter writes with format: proto: a sequence of
// 4-byte big-endian lengths, each followed by an ExportProfilesServiceRequest.
func readProtoFile(path string) ([]pprofile.Profiles, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil // nothing exported yet
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := bufio.NewReader(f)
	var out []pprofile.Profiles
	var u pprofile.ProtoUnmarshaler
	for {
		var n uint32
		if err := binary.Read(r, binary.BigEndian, &n); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			// A message still being written: use what is complete.
			return out, nil
		}
		buf := make([]byte, n)
		if _, err := io.ReadFull(r, buf); err != nil {
			return out, nil
		}
		pd, err := u.UnmarshalProfiles(buf)
		if err != nil {
			return out, fmt.Errorf("message %d: %w", len(out), err)
		}
		out = append(out, pd)
	}
}

// procView is what the gateway received about one process.
type procView struct {
	samples    int
	functions  map[string]int // function name -> samples with it on the stack
	threads    map[string]int // thread.name -> samples
	exeName    string
	timestamps []uint64 // sample times, ns since the epoch
}

// byPid groups every sample of the batches by the resource attribute process.pid.
func byPid(t *testing.T, batches []pprofile.Profiles) map[int64]*procView {
	t.Helper()
	out := map[int64]*procView{}
	for _, pd := range batches {
		dict := pd.Dictionary()
		strs := dict.StringTable()
		str := func(i int32) string {
			if i <= 0 || int(i) >= strs.Len() {
				return ""
			}
			return strs.At(int(i))
		}
		for _, rp := range pd.ResourceProfiles().All() {
			attrs := rp.Resource().Attributes()
			v, ok := attrs.Get("process.pid")
			if !ok {
				continue
			}
			pv := out[v.Int()]
			if pv == nil {
				pv = &procView{functions: map[string]int{}, threads: map[string]int{}}
				out[v.Int()] = pv
			}
			if n, ok := attrs.Get("process.executable.name"); ok {
				pv.exeName = n.AsString()
			}
			for _, sp := range rp.ScopeProfiles().All() {
				for _, prof := range sp.Profiles().All() {
					for _, smp := range prof.Samples().All() {
						w := 0
						for _, x := range smp.Values().All() {
							w += int(x)
						}
						if w == 0 {
							w = smp.TimestampsUnixNano().Len()
						}
						pv.samples += w
						pv.timestamps = append(pv.timestamps, smp.TimestampsUnixNano().AsRaw()...)
						am, err := pprofile.FromAttributeIndices(dict.AttributeTable(), smp, dict)
						if err != nil {
							t.Errorf("sample attributes: %v", err)
						}
						if tn, ok := am.Get("thread.name"); ok {
							pv.threads[tn.AsString()] += w
						}
						seen := map[string]bool{}
						si := int(smp.StackIndex())
						if si <= 0 || si >= dict.StackTable().Len() {
							continue
						}
						for _, li := range dict.StackTable().At(si).LocationIndices().All() {
							if li <= 0 || int(li) >= dict.LocationTable().Len() {
								continue
							}
							for _, line := range dict.LocationTable().At(int(li)).Lines().All() {
								fi := int(line.FunctionIndex())
								if fi <= 0 || fi >= dict.FunctionTable().Len() {
									continue
								}
								name := str(dict.FunctionTable().At(fi).NameStrindex())
								if name != "" && !seen[name] {
									seen[name] = true
									pv.functions[name] += w
								}
							}
						}
					}
				}
			}
		}
	}
	return out
}

func (pv *procView) top(n int) []string {
	var names []string
	for name := range pv.functions {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool { return pv.functions[names[i]] > pv.functions[names[j]] })
	if len(names) > n {
		names = names[:n]
	}
	return names
}

package integration

// otelprof report, diff and convert (issue 18): recordings of tests/workloads/twohot (two
// hot leaf functions at 2:1, and at 1:2), the report opened in headless Chromium and driven
// over the DevTools protocol, the diff's table, round trips through our OTLP writer checked
// by pdata, and bad input.

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/pprof/profile"
	"go.opentelemetry.io/collector/pdata/pprofile"
)

var (
	twohotMu    sync.Mutex
	twohotFiles = map[string]string{}
	twohotDir   string
)

// recordTwoHot records build/workloads/twohot at x:y for 3 s at 499 Hz (once per test binary
// for each ratio) and returns the pprof file.
func recordTwoHot(t *testing.T, x, y int) string {
	t.Helper()
	requireRoot(t)
	twohotMu.Lock()
	defer twohotMu.Unlock()
	key := fmt.Sprintf("%d-%d", x, y)
	if f, ok := twohotFiles[key]; ok {
		return f
	}
	if twohotDir == "" {
		d, err := os.MkdirTemp("", "otelprof-report-test-")
		if err != nil {
			t.Fatal(err)
		}
		twohotDir = d
	}
	w := startWorkload(t, "twohot", "5", strconv.Itoa(x), strconv.Itoa(y))
	time.Sleep(200 * time.Millisecond)
	out := filepath.Join(twohotDir, "twohot-"+key+".pb.gz")
	recordTo(t, out, "--pid", strconv.Itoa(w.Process.Pid), "--duration", "3", "--frequency", "499")
	twohotFiles[key] = out
	return out
}

func TestMain(m *testing.M) {
	code := m.Run()
	if twohotDir != "" {
		os.RemoveAll(twohotDir)
	}
	os.Exit(code)
}

// onStackShares is each function's share (percent) of the samples with it on the stack, from
// the pprof file itself (google/pprof), value 0 (samples).
func onStackShares(t *testing.T, path string, names ...string) map[string]float64 {
	t.Helper()
	return shareByStack(parseProfile(t, path).Sample, names...)
}

// ---------------------------------------------------------------- the browser

type browser struct {
	ctx    context.Context
	mu     sync.Mutex
	errors []string
}

// openReport loads an HTML file in headless Chromium (the system's package) and waits until
// the page says it has drawn everything (body[data-ready-ms]). Console errors, exceptions and
// browser log errors are collected from the start.
func openReport(t *testing.T, path string) *browser {
	t.Helper()
	exe := "/usr/bin/chromium"
	if _, err := os.Stat(exe); err != nil {
		t.Fatalf("%s is missing: scripts/install-deps.sh installs the chromium package", exe)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1000),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelC(); cancelA() })
	b := &browser{ctx: ctx}
	// start the browser (no timeout on the first call: it would bound the browser's life)
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("chromium does not start: %v", err)
	}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				b.mu.Lock()
				b.errors = append(b.errors, m.String())
				b.mu.Unlock()
			}
		}
	}()
	abs, _ := filepath.Abs(path)
	tctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(tctx, chromedp.Navigate("file://"+abs),
		chromedp.WaitReady(chromedp.CSS("body[data-ready-ms]"))); err != nil {
		t.Fatalf("chromium: %v (page errors: %v)", err, b.errs())
	}
	return b
}

func (b *browser) errs() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.errors...)
}

// eval runs a JavaScript expression in the page and decodes its value into T.
func eval[T any](t *testing.T, b *browser, js string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

func (b *browser) do(t *testing.T, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("chromium: %v (page errors: %v)", err, b.errs())
	}
}

type drawnRect struct {
	Name  string  `json:"name"`
	X     float64 `json:"x"`
	W     float64 `json:"w"`
	Depth int     `json:"depth"`
	Share float64 `json:"share"`
}

func (b *browser) drawn(t *testing.T) []drawnRect {
	t.Helper()
	return eval[[]drawnRect](t, b, `otelprof.drawn()`)
}

type tableRow struct {
	Name  string   `json:"name"`
	Cells []string `json:"cells"`
}

// table reads the rows of one of the page's tables: the name cell's own text (without the
// binary) and every cell's text.
func (b *browser) table(t *testing.T, id string) []tableRow {
	t.Helper()
	return eval[[]tableRow](t, b, `[...document.querySelectorAll('#`+id+` tbody tr')].map(tr => ({
		name: (tr.querySelector('td.name').firstChild || {textContent: ''}).textContent.trim(),
		cells: [...tr.children].map(td => td.textContent.trim())}))`)
}

func percent(t *testing.T, s string) float64 {
	t.Helper()
	m := regexp.MustCompile(`([-+\x{2212}]?[0-9.]+)\s*(%|pp)`).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("no percentage in %q", s)
	}
	v, err := strconv.ParseFloat(strings.Replace(m[1], "\u2212", "-", 1), 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// ---------------------------------------------------------------- tests

func TestReportInChromium(t *testing.T) {
	prof := recordTwoHot(t, 2, 1)
	want := onStackShares(t, prof, "hot_x", "hot_y")
	if want["hot_x"] < 50 || want["hot_y"] < 20 {
		t.Fatalf("the recording does not show the 2:1 workload: %v", want)
	}
	html := filepath.Join(t.TempDir(), "report.html")
	r := run(t, time.Minute, buildPath(t, "otelprof"), "report", prof, "-o", html)
	if r.code != 0 {
		t.Fatalf("otelprof report: exit %d: %s", r.code, r.stderr)
	}
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	// self-contained: nothing is fetched (the page's policy forbids it too)
	for _, ref := range []string{"http://", "https://", "src=", "<link"} {
		if bytes.Contains(page, []byte(ref)) {
			t.Errorf("the report refers to %q: it must load nothing", ref)
		}
	}
	b := openReport(t, html)

	// the top functions table: both names, total shares within 1 point of the file's
	rows := b.table(t, "functions")
	got := map[string]float64{}
	for _, row := range rows {
		if row.Name == "hot_x" || row.Name == "hot_y" {
			got[row.Name] = percent(t, row.Cells[2]) // self, self value, total, ...
		}
	}
	for _, fn := range []string{"hot_x", "hot_y"} {
		g, ok := got[fn]
		if !ok {
			t.Fatalf("the top functions table has no %s: %v", fn, rows)
		}
		if math.Abs(g-want[fn]) > 1 {
			t.Errorf("%s: report shows %.2f%%, the pprof file %.2f%%", fn, g, want[fn])
		}
		t.Logf("%s: report %.2f%%, pprof %.2f%%", fn, g, want[fn])
	}

	// the flamegraph drew both frames, as wide as their shares
	drawnShare := map[string]float64{}
	var hx drawnRect
	for _, d := range b.drawn(t) {
		drawnShare[d.Name] += 100 * d.Share
		if d.Name == "hot_x" {
			hx = d
		}
	}
	for _, fn := range []string{"hot_x", "hot_y"} {
		if math.Abs(drawnShare[fn]-want[fn]) > 1 {
			t.Errorf("flamegraph: %s drawn at %.2f%%, the pprof file has %.2f%%", fn,
				drawnShare[fn], want[fn])
		}
	}

	// the search finds hot_x and shows its share
	b.do(t, chromedp.SendKeys(chromedp.CSS("#search"), "hot_x"),
		chromedp.Poll[chromedp.Void](`document.getElementById('search-result').textContent.includes('matched')`,
			chromedp.WithPollingTimeout(10*time.Second)))
	res := eval[string](t, b, `document.getElementById('search-result').textContent`)
	if !strings.HasPrefix(res, "1 function matched") || math.Abs(percent(t, res)-want["hot_x"]) > 1 {
		t.Errorf("search for hot_x says %q, want 1 function at %.2f%%", res, want["hot_x"])
	}

	// a click on hot_x zooms in: it then spans the whole width, hot_y is gone
	rect := eval[struct{ X, Y float64 }](t, b, `(() => {
		const r = document.getElementById('flame').getBoundingClientRect();
		return {X: r.left, Y: r.top}; })()`)
	b.do(t, chromedp.MouseClickXY(rect.X+hx.X+hx.W/2, rect.Y+float64(hx.Depth)*18+9))
	zoomed := b.drawn(t)
	sawX, sawY := false, false
	for _, d := range zoomed {
		if d.Name == "hot_x" && d.X == 0 && d.W > 1000 {
			sawX = true
		}
		sawY = sawY || d.Name == "hot_y"
	}
	if !sawX || sawY {
		t.Errorf("after a click on hot_x: full-width hot_x %v, hot_y drawn %v", sawX, sawY)
	}

	// the other tables: the workload's executable with its build id, symbolized; the process
	bins := b.table(t, "binaries")
	foundExe := false
	for _, row := range bins {
		if strings.HasSuffix(row.Cells[2], "/workloads/twohot") {
			foundExe = true
			if len(row.Cells[3]) != 40 || row.Cells[4] != "yes" {
				t.Errorf("executables row %v: want a 40-digit build id, symbolized", row.Cells)
			}
		}
	}
	if !foundExe {
		t.Errorf("no twohot row in the executables table: %v", bins)
	}
	procs := b.table(t, "procs")
	if len(procs) < 2 || !strings.Contains(procs[0].Cells[1], "twohot") {
		t.Errorf("processes table: %v, want the twohot process and its thread", procs)
	}
	if e := b.errs(); len(e) > 0 {
		t.Errorf("page errors: %v", e)
	}
}

func TestDiffOppositeSigns(t *testing.T) {
	a := recordTwoHot(t, 2, 1)
	c := recordTwoHot(t, 1, 2)
	html := filepath.Join(t.TempDir(), "diff.html")
	r := run(t, time.Minute, buildPath(t, "otelprof"), "diff", a, c, "--html", html)
	if r.code != 0 {
		t.Fatalf("otelprof diff: exit %d: %s", r.code, r.stderr)
	}
	t.Logf("otelprof diff:\n%s", r.stdout)
	change := map[string]float64{}
	for _, line := range strings.Split(r.stdout, "\n") {
		f := strings.Fields(line)
		// total base, total new, change "pp", self base, self new, change "pp", function
		if len(f) == 9 && (f[8] == "hot_x" || f[8] == "hot_y") {
			if _, ok := change[f[8]]; !ok {
				change[f[8]] = percent(t, f[2]+" pp")
			}
		}
	}
	x, okx := change["hot_x"]
	y, oky := change["hot_y"]
	if !okx || !oky {
		t.Fatalf("diff names hot_x %v, hot_y %v; want both", okx, oky)
	}
	// 2:1 -> 1:2 is a third of the samples moving from hot_x to hot_y
	if !(x < -20 && y > 20) {
		t.Errorf("changes hot_x %+.2f pp, hot_y %+.2f pp: want about -33 and +33", x, y)
	}
	b := openReport(t, html)
	var fnRows []tableRow = b.table(t, "functions")
	sign := map[string]string{}
	for _, row := range fnRows {
		if row.Name == "hot_x" || row.Name == "hot_y" {
			sign[row.Name] = string([]rune(row.Cells[0])[:1])
		}
	}
	if sign["hot_x"] != "\u2212" {
		t.Errorf("differential page: hot_x change %q, want negative", sign["hot_x"])
	}
	if sign["hot_y"] != "+" {
		t.Errorf("differential page: hot_y change %q, want +", sign["hot_y"])
	}
	names := map[string]bool{}
	for _, d := range b.drawn(t) {
		names[d.Name] = true
	}
	if !names["hot_x"] || !names["hot_y"] {
		t.Errorf("differential flamegraph lacks hot_x or hot_y: %v", names)
	}
	if e := b.errs(); len(e) > 0 {
		t.Errorf("page errors: %v", e)
	}
}

// sampleKeys maps each sample of a pprof profile to what a user can tell about it: its
// stack (per location: mapping file and build id, address, function names and lines) and its
// labels; the values add up per key.
func sampleKeys(p *profile.Profile) map[string][]int64 {
	out := map[string][]int64{}
	for _, s := range p.Sample {
		var b strings.Builder
		for _, loc := range s.Location {
			if loc.Mapping != nil {
				fmt.Fprintf(&b, "%s@%s+%#x-%#x:%#x ", loc.Mapping.File, loc.Mapping.BuildID,
					loc.Mapping.Start, loc.Mapping.Limit, loc.Mapping.Offset)
			}
			fmt.Fprintf(&b, "%#x", loc.Address)
			for _, l := range loc.Line {
				fmt.Fprintf(&b, " %s:%s:%d", l.Function.Name, l.Function.Filename, l.Line)
			}
			b.WriteString(" | ")
		}
		var labels []string
		for k, v := range s.Label {
			labels = append(labels, k+"="+strings.Join(v, ","))
		}
		for k, v := range s.NumLabel {
			labels = append(labels, fmt.Sprintf("%s=%v%v", k, v, s.NumUnit[k]))
		}
		sort.Strings(labels)
		key := b.String() + strings.Join(labels, " ")
		if out[key] == nil {
			out[key] = make([]int64, len(s.Value))
		}
		for i, v := range s.Value {
			out[key][i] += v
		}
	}
	return out
}

func TestConvertRoundTrip(t *testing.T) {
	prof := recordTwoHot(t, 2, 1)
	dir := t.TempDir()
	otlp := filepath.Join(dir, "p.otlp.pb")
	back := filepath.Join(dir, "back.pb.gz")
	cli := buildPath(t, "otelprof")
	for _, args := range [][]string{{"convert", prof, otlp}, {"convert", otlp, back}} {
		if r := run(t, time.Minute, cli, args...); r.code != 0 {
			t.Fatalf("otelprof %v: exit %d: %s", args, r.code, r.stderr)
		}
	}
	// the OTLP in between is what pdata reads: every sample there
	raw, err := os.ReadFile(otlp)
	if err != nil {
		t.Fatal(err)
	}
	pd, err := (&pprofile.ProtoUnmarshaler{}).UnmarshalProfiles(raw)
	if err != nil {
		t.Fatalf("pdata cannot decode the converted OTLP: %v", err)
	}
	orig, got := parseProfile(t, prof), parseProfile(t, back)
	var n int64
	for _, rp := range pd.ResourceProfiles().All() {
		for _, sp := range rp.ScopeProfiles().All() {
			for _, p := range sp.Profiles().All() {
				for _, s := range p.Samples().All() {
					n += int64(s.TimestampsUnixNano().Len())
					for _, v := range s.Values().All() {
						n += v
					}
				}
			}
		}
	}
	if total(orig.Sample) != n {
		t.Errorf("OTLP holds %d samples, the pprof file %d", n, total(orig.Sample))
	}
	// totals of both value columns, per-function shares, and every sample with its labels
	for i := range orig.SampleType {
		var a, b int64
		for _, s := range orig.Sample {
			a += s.Value[i]
		}
		for _, s := range got.Sample {
			b += s.Value[i]
		}
		if a != b {
			t.Errorf("total of %s: %d after the round trip, %d before", orig.SampleType[i].Type, b, a)
		}
	}
	fns := []string{"hot_x", "hot_y", "main"}
	if a, b := shareByStack(orig.Sample, fns...), shareByStack(got.Sample, fns...); fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("function shares %v after the round trip, %v before", b, a)
	}
	ka, kb := sampleKeys(orig), sampleKeys(got)
	if len(ka) != len(kb) {
		t.Errorf("%d distinct samples after the round trip, %d before", len(kb), len(ka))
	}
	for k, v := range ka {
		if fmt.Sprint(kb[k]) != fmt.Sprint(v) {
			t.Errorf("sample %s: values %v after the round trip, %v before", k, kb[k], v)
		}
	}
	if t.Failed() {
		return
	}
	t.Logf("pprof -> OTLP -> pprof: %d samples in %d distinct stacks and label sets, equal",
		total(orig.Sample), len(ka))
}

// The fixture's OTLP (tests/unit/test_encode_fixture.h), through our reader and writer, and
// through pdata's JSON (the file exporter's format, two requests on two lines), is still
// exactly the fixture: resources, frame types, build ids, timestamps.
func TestConvertOTLPFixture(t *testing.T) {
	otlpPath, pprofPath := runFixture(t)
	dir := t.TempDir()
	cli := buildPath(t, "otelprof")
	out := filepath.Join(dir, "out.otlp.pb")
	if r := run(t, time.Minute, cli, "convert", otlpPath, out); r.code != 0 {
		t.Fatalf("convert: exit %d: %s", r.code, r.stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	pd, err := (&pprofile.ProtoUnmarshaler{}).UnmarshalProfiles(data)
	if err != nil {
		t.Fatalf("pdata cannot decode the converted OTLP: %v", err)
	}
	t.Run("otlp-to-otlp", func(t *testing.T) { checkProfiles(t, pd) })

	// OTLP/JSON as the file exporter writes it: one request per line
	raw, _ := os.ReadFile(otlpPath)
	orig, err := (&pprofile.ProtoUnmarshaler{}).UnmarshalProfiles(raw)
	if err != nil {
		t.Fatal(err)
	}
	js, err := (&pprofile.JSONMarshaler{}).MarshalProfiles(orig)
	if err != nil {
		t.Fatal(err)
	}
	jsonl := filepath.Join(dir, "profiles.jsonl")
	os.WriteFile(jsonl, append(append(append(js, '\n'), js...), '\n'), 0o644)
	fromJSON := filepath.Join(dir, "json.pb.gz")
	if r := run(t, time.Minute, cli, "convert", jsonl, fromJSON); r.code != 0 {
		t.Fatalf("convert JSON: exit %d: %s", r.code, r.stderr)
	}
	fp := parseProfile(t, pprofPath)
	jp := parseProfile(t, fromJSON)
	// OTLP carries the executable's path and the container id as resource attributes; our
	// pprof encoder does not write them, the OTLP -> pprof conversion does (as labels)
	for _, s := range jp.Sample {
		delete(s.Label, "process.executable.path")
		delete(s.Label, "container.id")
	}
	if total(jp.Sample) != 2*total(fp.Sample) {
		t.Errorf("two JSON lines of the fixture hold %d samples, want 2 x %d", total(jp.Sample),
			total(fp.Sample))
	}
	ka, kb := sampleKeys(fp), sampleKeys(jp)
	for k, v := range ka {
		if len(kb[k]) == 0 || kb[k][0] != 2*v[0] {
			t.Errorf("sample %s: %v from JSON, want twice %v", k, kb[k], v)
		}
	}
	// and the pprof fixture through OTLP and back
	viaOTLP := filepath.Join(dir, "via.otlp.pb")
	back := filepath.Join(dir, "back.pb.gz")
	for _, args := range [][]string{{"convert", pprofPath, viaOTLP}, {"convert", viaOTLP, back}} {
		if r := run(t, time.Minute, cli, args...); r.code != 0 {
			t.Fatalf("otelprof %v: exit %d: %s", args, r.code, r.stderr)
		}
	}
	kc := sampleKeys(parseProfile(t, back))
	if fmt.Sprint(ka) != fmt.Sprint(kc) {
		t.Errorf("pprof fixture after pprof -> OTLP -> pprof:\n%v\nwant\n%v", kc, ka)
	}
	// folded stacks: the totals add up, the stacks read root first
	folded := filepath.Join(dir, "f.folded")
	if r := run(t, time.Minute, cli, "convert", pprofPath, folded); r.code != 0 {
		t.Fatalf("convert folded: exit %d: %s", r.code, r.stderr)
	}
	ftext, _ := os.ReadFile(folded)
	var sum int64
	for _, line := range strings.Split(strings.TrimSpace(string(ftext)), "\n") {
		i := strings.LastIndexByte(line, ' ')
		n, err := strconv.ParseInt(line[i+1:], 10, 64)
		if err != nil {
			t.Fatalf("folded line %q: %v", line, err)
		}
		sum += n
	}
	if sum != total(fp.Sample) || !strings.Contains(string(ftext), "main;compute;square ") {
		t.Errorf("folded output (total %d, want %d):\n%s", sum, total(fp.Sample), ftext)
	}
}

// Bad input: one line naming the file and what is wrong, exit 1, and no file left behind.
func TestReportBadInput(t *testing.T) {
	_, pprofPath := runFixture(t)
	good, err := os.ReadFile(pprofPath)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(buildPath(t, "otelprof"))
	dir := t.TempDir()
	cases := []struct {
		name, want string
		data       []byte
	}{
		{"empty", "empty file", nil},
		{"truncated.pb.gz", "truncated gzip data", good[:len(good)/2]},
		{"foreign.pb.gz", "not a profile", raw[:4096]},
		{"truncated.json", "truncated JSON", []byte("{\"resourceProfiles\": [")},
		{"notjson.json", "not JSON", []byte("{\"resourceProfiles\": nope}")},
		{"otherjson.json", "not OTLP profiles", []byte(`{"traceEvents": []}`)},
		{"text.txt", "not folded stacks", []byte("main;work 10\nthis is not a stack\n")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := filepath.Join(dir, c.name)
			os.WriteFile(in, c.data, 0o644)
			outDir := t.TempDir()
			for _, args := range [][]string{
				{"report", in, "-o", filepath.Join(outDir, "r.html")},
				{"convert", in, filepath.Join(outDir, "c.otlp.pb")},
				{"diff", in, in, "--html", filepath.Join(outDir, "d.html")},
			} {
				r := run(t, time.Minute, buildPath(t, "otelprof"), args...)
				lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
				if r.code != 1 || len(lines) != 1 || !strings.Contains(r.stderr, in) ||
					!strings.Contains(r.stderr, c.want) {
					t.Errorf("otelprof %s: exit %d, stderr %q; want exit 1 and one line naming %s and %q",
						args[0], r.code, r.stderr, in, c.want)
				}
				if left, _ := os.ReadDir(outDir); len(left) != 0 {
					t.Errorf("otelprof %s left %v behind", args[0], left)
				}
			}
		})
	}
	// a truncated profile that is not gzipped: named as truncated protobuf
	var plain bytes.Buffer
	p := parseProfile(t, pprofPath)
	if err := p.WriteUncompressed(&plain); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "plain.pprof")
	os.WriteFile(in, plain.Bytes()[:plain.Len()/2], 0o644)
	r := run(t, time.Minute, buildPath(t, "otelprof"), "report", in, "-o", filepath.Join(dir, "x.html"))
	if r.code != 1 || !strings.Contains(r.stderr, "truncated") {
		t.Errorf("truncated uncompressed pprof: exit %d, %q", r.code, r.stderr)
	}
	// an output that cannot be written: the error names it, and nothing is left
	r = run(t, time.Minute, buildPath(t, "otelprof"), "report", pprofPath, "-o", "/nonexistent/dir/r.html")
	if r.code != 1 || !strings.Contains(r.stderr, "/nonexistent/dir/r.html") {
		t.Errorf("unwritable output: exit %d, %q", r.code, r.stderr)
	}
}

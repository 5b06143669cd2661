package integration

// Round trip of the C encoders through real decoders: build/fixtures/fixture_otlp writes the
// known profile of tests/unit/test_encode_fixture.h as OTLP and as pprof; the OTLP bytes are
// decoded with the pinned pdata (both unmarshalers the collector uses) and the pprof file with
// google/pprof and `go tool pprof`. Any drift of a field number loses or garbles a value
// asserted here; the size check below also catches a field pdata does not know at all.

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
)

// Facts of tests/unit/test_encode_fixture.h.
const (
	fxPeriod    = 50000000
	fxT0        = 1700000000000000000
	fxDuration  = 1000000000
	fxAppBuild  = "0123456789abcdef0123456789abcdef01234567"
	fxLibcBuild = "aabbccddeeff00112233445566778899aabbccdd"
	fxLibcHTL   = "00112233445566778899aabbccddeeff"
	fxGoBuildID = "goid-abc/goid-def"
	fxServerHTL = "ffeeddccbbaa99887766554433221100"
	fxContainer = "c0ffee0000000000000000000000000000000000000000000000000000000001"
)

// fxFrame is one location of a stack as a user sees it: function names (innermost inlined
// first), frame type, mapping file, and build id attributes of that mapping.
type fxFrame struct {
	funcs     []string
	frameType string
	file      string
	buildIDs  map[string]string
}

type fxSample struct {
	pid        int64
	threadName string
	tid        int64
	cpu        int64
	timestamps []uint64
	stack      []fxFrame
}

var (
	appBuild  = map[string]string{"process.executable.build_id.gnu": fxAppBuild}
	libcBuild = map[string]string{"process.executable.build_id.gnu": fxLibcBuild,
		"process.executable.build_id.htlhash": fxLibcHTL}
	serverBuild = map[string]string{"process.executable.build_id.go": fxGoBuildID,
		"process.executable.build_id.htlhash": fxServerHTL}
	kernelFrame = func(f string) fxFrame {
		return fxFrame{[]string{f}, "kernel", "[kernel.kallsyms]", map[string]string{}}
	}
	appInline = fxFrame{[]string{"square", "compute"}, "native", "/usr/bin/app", appBuild}
	appMain   = fxFrame{[]string{"main"}, "native", "/usr/bin/app", appBuild}
	ts        = func(ks ...uint64) []uint64 {
		out := make([]uint64, len(ks))
		for i, k := range ks {
			out[i] = fxT0 + 1000*k
		}
		return out
	}
	fxSamples = []fxSample{
		{100, "app-main", 100, 0, ts(0, 1, 2), []fxFrame{appInline, appMain}},
		{100, "app-main", 100, 0, ts(3), []fxFrame{kernelFrame("ksys_write"),
			kernelFrame("entry_SYSCALL_64"),
			{[]string{"__write"}, "native", "/usr/lib/x86_64-linux-gnu/libc.so.6", libcBuild},
			appMain}},
		{100, "app-worker", 101, 1, ts(4, 5), []fxFrame{appInline, appMain}},
		{200, "server", 200, 1, ts(6, 7, 8, 9), []fxFrame{
			{[]string{"main.handler"}, "go", "/opt/server", serverBuild},
			{[]string{"main.main"}, "go", "/opt/server", serverBuild},
			{[]string{"[truncated]"}, "abort-marker", "", map[string]string{}}}},
	}
)

// runFixture writes the fixture's OTLP and pprof files and returns their paths.
func runFixture(t *testing.T) (otlpPath, pprofPath string) {
	t.Helper()
	dir := t.TempDir()
	otlpPath = filepath.Join(dir, "fixture.otlp")
	pprofPath = filepath.Join(dir, "fixture.pb.gz")
	r := run(t, time.Minute, buildPath(t, "fixtures/fixture_otlp"), otlpPath, pprofPath)
	if r.code != 0 {
		t.Fatalf("fixture_otlp: exit %d: %s", r.code, r.stderr)
	}
	return otlpPath, pprofPath
}

// versionString is OTELPROF_VERSION_STRING from include/otelprof.h.
func versionString(t *testing.T) string {
	t.Helper()
	h, err := os.ReadFile("../../include/otelprof.h")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`#define OTELPROF_VERSION_STRING "([^"]+)"`).FindSubmatch(h)
	if m == nil {
		t.Fatal("OTELPROF_VERSION_STRING not found in include/otelprof.h")
	}
	return string(m[1])
}

func TestOTLPRoundTrip(t *testing.T) {
	otlpPath, _ := runFixture(t)
	data, err := os.ReadFile(otlpPath)
	if err != nil {
		t.Fatal(err)
	}
	decoders := map[string]func([]byte) (pprofile.Profiles, error){
		// what the otlp receiver does with a request body
		"ExportRequest.UnmarshalProto": func(b []byte) (pprofile.Profiles, error) {
			req := pprofileotlp.NewExportRequest()
			err := req.UnmarshalProto(b)
			return req.Profiles(), err
		},
		"ProtoUnmarshaler": func(b []byte) (pprofile.Profiles, error) {
			return (&pprofile.ProtoUnmarshaler{}).UnmarshalProfiles(b)
		},
	}
	for name, decode := range decoders {
		t.Run(name, func(t *testing.T) {
			pd, err := decode(data)
			if err != nil {
				t.Fatalf("pdata cannot decode our OTLP: %v", err)
			}
			checkProfiles(t, pd)
			// Re-encoding what pdata understood gives our size back only if pdata decoded
			// every byte we wrote: a field at a number pdata does not know is dropped. pdata
			// writes the zero link's two empty byte fields, which proto3 protobuf-c omits.
			const zeroLinkFields = 4
			if n := (&pprofile.ProtoMarshaler{}).ProfilesSize(pd); n != len(data)+zeroLinkFields {
				t.Errorf("pdata re-encodes %d bytes of our %d (+%d expected): some field was "+
					"not understood (field number drift?)", n, len(data), zeroLinkFields)
			}
		})
	}
}

func checkProfiles(t *testing.T, pd pprofile.Profiles) {
	t.Helper()
	dict := pd.Dictionary()
	strs := dict.StringTable()
	str := func(i int32) string {
		if i < 0 || int(i) >= strs.Len() {
			t.Fatalf("string index %d out of range [0, %d)", i, strs.Len())
		}
		return strs.At(int(i))
	}
	attrs := func(rec interface{ AttributeIndices() pcommon.Int32Slice }) map[string]any {
		m, err := pprofile.FromAttributeIndices(dict.AttributeTable(), rec, dict)
		if err != nil {
			t.Fatalf("attributes: %v", err)
		}
		return m.AsRaw()
	}

	// zero entries at index 0 of every table
	if strs.Len() == 0 || strs.At(0) != "" {
		t.Errorf("string_table[0] must be \"\"")
	}
	for name, n := range map[string]int{"mapping": dict.MappingTable().Len(),
		"location": dict.LocationTable().Len(), "function": dict.FunctionTable().Len(),
		"link": dict.LinkTable().Len(), "attribute": dict.AttributeTable().Len(),
		"stack": dict.StackTable().Len()} {
		if n == 0 {
			t.Errorf("%s_table is empty: index 0 must hold the zero entry", name)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	if !dict.MappingTable().At(0).Equal(pprofile.NewMapping()) ||
		!dict.LocationTable().At(0).Equal(pprofile.NewLocation()) ||
		!dict.FunctionTable().At(0).Equal(pprofile.NewFunction()) ||
		!dict.LinkTable().At(0).Equal(pprofile.NewLink()) ||
		!dict.StackTable().At(0).Equal(pprofile.NewStack()) ||
		dict.AttributeTable().At(0).KeyStrindex() != 0 {
		t.Errorf("a dictionary table's entry 0 is not the zero value")
	}
	seen := map[string]bool{}
	for i := 0; i < strs.Len(); i++ {
		if seen[strs.At(i)] {
			t.Errorf("string %q appears twice in string_table", strs.At(i))
		}
		seen[strs.At(i)] = true
	}
	// exactly what the fixture references: 9 functions, 8 locations, 4 mappings, 3 stacks
	if n := dict.FunctionTable().Len() - 1; n != 9 {
		t.Errorf("function_table has %d entries, want 9", n)
	}
	if n := dict.LocationTable().Len() - 1; n != 8 {
		t.Errorf("location_table has %d entries, want 8", n)
	}
	if n := dict.MappingTable().Len() - 1; n != 4 {
		t.Errorf("mapping_table has %d entries, want 4", n)
	}
	if n := dict.StackTable().Len() - 1; n != 3 {
		t.Errorf("stack_table has %d entries, want 3", n)
	}

	frame := func(li int32) fxFrame {
		loc := dict.LocationTable().At(int(li))
		var f fxFrame
		for _, l := range loc.Lines().All() {
			fn := dict.FunctionTable().At(int(l.FunctionIndex()))
			f.funcs = append(f.funcs, str(fn.NameStrindex()))
		}
		ft, _ := attrs(loc)["profile.frame.type"].(string)
		f.frameType = ft
		f.buildIDs = map[string]string{}
		if mi := loc.MappingIndex(); mi != 0 {
			m := dict.MappingTable().At(int(mi))
			f.file = str(m.FilenameStrindex())
			for k, v := range attrs(m) {
				f.buildIDs[k], _ = v.(string)
			}
		}
		return f
	}

	version := versionString(t)
	var got []fxSample
	rps := pd.ResourceProfiles()
	if rps.Len() != 2 {
		t.Fatalf("%d ResourceProfiles, want one per process (2)", rps.Len())
	}
	for _, rp := range rps.All() {
		res := rp.Resource().Attributes().AsRaw()
		pid, _ := res["process.pid"].(int64)
		want := map[string]any{"process.pid": int64(100), "process.executable.name": "app",
			"process.executable.path": "/usr/bin/app", "container.id": fxContainer}
		if pid == 200 {
			want = map[string]any{"process.pid": int64(200),
				"process.executable.name": "server", "process.executable.path": "/opt/server"}
		}
		if !reflect.DeepEqual(res, want) {
			t.Errorf("resource attributes %v, want %v", res, want)
		}
		if rp.ScopeProfiles().Len() != 1 {
			t.Fatalf("%d ScopeProfiles, want 1", rp.ScopeProfiles().Len())
		}
		sp := rp.ScopeProfiles().At(0)
		if sp.Scope().Name() != "otelprof" || sp.Scope().Version() != version {
			t.Errorf("scope %q %q, want otelprof %q", sp.Scope().Name(), sp.Scope().Version(),
				version)
		}
		if sp.Profiles().Len() != 1 {
			t.Fatalf("%d Profiles, want 1", sp.Profiles().Len())
		}
		p := sp.Profiles().At(0)
		if st := p.SampleType(); str(st.TypeStrindex()) != "samples" || str(st.UnitStrindex()) != "count" {
			t.Errorf("sample_type %s/%s, want samples/count", str(st.TypeStrindex()),
				str(st.UnitStrindex()))
		}
		if pt := p.PeriodType(); str(pt.TypeStrindex()) != "cpu" || str(pt.UnitStrindex()) != "nanoseconds" {
			t.Errorf("period_type %s/%s, want cpu/nanoseconds", str(pt.TypeStrindex()),
				str(pt.UnitStrindex()))
		}
		if p.Period() != fxPeriod {
			t.Errorf("period %d, want %d", p.Period(), fxPeriod)
		}
		if uint64(p.Time()) != fxT0 || p.DurationNano() != fxDuration {
			t.Errorf("time %d duration %d, want %d %d", p.Time(), p.DurationNano(), uint64(fxT0),
				fxDuration)
		}
		if p.ProfileID().IsEmpty() {
			t.Errorf("profile_id is empty")
		}
		for _, s := range p.Samples().All() {
			if s.Values().Len() != 0 && s.Values().Len() != s.TimestampsUnixNano().Len() {
				t.Errorf("sample has %d values and %d timestamps", s.Values().Len(),
					s.TimestampsUnixNano().Len())
			}
			if s.LinkIndex() != 0 {
				t.Errorf("sample link_index %d, want 0", s.LinkIndex())
			}
			a := attrs(s)
			g := fxSample{pid: pid, timestamps: s.TimestampsUnixNano().AsRaw()}
			g.threadName, _ = a["thread.name"].(string)
			g.tid, _ = a["thread.id"].(int64)
			g.cpu, _ = a["cpu.logical_number"].(int64)
			if len(a) != 3 {
				t.Errorf("sample attributes %v, want thread.name, thread.id, cpu.logical_number", a)
			}
			if s.StackIndex() <= 0 || int(s.StackIndex()) >= dict.StackTable().Len() {
				t.Fatalf("stack_index %d out of range", s.StackIndex())
			}
			for _, li := range dict.StackTable().At(int(s.StackIndex())).LocationIndices().All() {
				g.stack = append(g.stack, frame(li))
			}
			got = append(got, g)
		}
	}
	for _, w := range fxSamples {
		found := false
		for _, g := range got {
			if reflect.DeepEqual(g, w) {
				found = true
			}
		}
		if !found {
			t.Errorf("no sample %+v\namong %+v", w, got)
		}
	}
	if len(got) != len(fxSamples) {
		t.Errorf("%d samples, want %d", len(got), len(fxSamples))
	}

	// details the comparison above does not cover: line numbers, columns, addresses, offsets
	for _, loc := range dict.LocationTable().All() {
		if loc.Lines().Len() == 2 {
			l0, l1 := loc.Lines().At(0), loc.Lines().At(1)
			if l0.Line() != 22 || l0.Column() != 5 || l1.Line() != 12 || loc.Address() != 0x401010 {
				t.Errorf("inline location: lines %d:%d, %d at %#x, want 22:5, 12 at 0x401010",
					l0.Line(), l0.Column(), l1.Line(), loc.Address())
			}
		}
	}
	for _, fn := range dict.FunctionTable().All() {
		if str(fn.NameStrindex()) == "compute" && (str(fn.SystemNameStrindex()) != "compute" ||
			str(fn.FilenameStrindex()) != "app.c" || fn.StartLine() != 10) {
			t.Errorf("function compute: %s %s %d", str(fn.SystemNameStrindex()),
				str(fn.FilenameStrindex()), fn.StartLine())
		}
	}
	for _, m := range dict.MappingTable().All() {
		if strings.HasSuffix(str(m.FilenameStrindex()), "libc.so.6") &&
			(m.MemoryStart() != 0x7f0000000000 || m.MemoryLimit() != 0x7f0000200000 ||
				m.FileOffset() != 0x28000) {
			t.Errorf("libc mapping %#x-%#x @%#x", m.MemoryStart(), m.MemoryLimit(), m.FileOffset())
		}
	}
}

func TestPprofFixture(t *testing.T) {
	_, pprofPath := runFixture(t)
	raw, err := os.ReadFile(pprofPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) < 2 || raw[0] != 0x1f || raw[1] != 0x8b {
		t.Fatalf("pprof file is not gzip-compressed")
	}
	p, err := profile.Parse(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("google/pprof cannot parse our pprof: %v", err)
	}
	if err := p.CheckValid(); err != nil {
		t.Fatalf("invalid profile: %v", err)
	}
	if len(p.SampleType) != 2 || p.SampleType[0].Type != "samples" ||
		p.SampleType[1].Type != "cpu" || p.SampleType[1].Unit != "nanoseconds" {
		t.Errorf("sample types %v", p.SampleType)
	}
	if p.Period != fxPeriod || p.PeriodType == nil || p.PeriodType.Type != "cpu" {
		t.Errorf("period %d %v", p.Period, p.PeriodType)
	}
	if p.TimeNanos != fxT0 || p.DurationNanos != fxDuration {
		t.Errorf("time %d duration %d", p.TimeNanos, p.DurationNanos)
	}
	if len(p.Mapping) != 4 || p.Mapping[0].File != "/usr/bin/app" ||
		p.Mapping[0].BuildID != fxAppBuild {
		t.Errorf("mapping[0] must be the main binary /usr/bin/app: %v", p.Mapping)
	}
	var total int64
	want := map[string][]string{
		"app-main/3":   {"square", "compute", "main"},
		"app-main/1":   {"ksys_write", "entry_SYSCALL_64", "__write", "main"},
		"app-worker/2": {"square", "compute", "main"},
		"server/4":     {"main.handler", "main.main", "[truncated]"},
	}
	for _, s := range p.Sample {
		total += s.Value[0]
		if s.Value[1] != s.Value[0]*fxPeriod {
			t.Errorf("sample values %v: cpu must be count*period", s.Value)
		}
		tn := s.Label["thread.name"]
		if len(tn) != 1 {
			t.Fatalf("sample without thread.name label: %v", s.Label)
		}
		key := tn[0] + "/" + string(rune('0'+s.Value[0]))
		if w, ok := want[key]; !ok || !reflect.DeepEqual(funcNames(s), w) {
			t.Errorf("sample %s: stack %v, want %v", key, funcNames(s), w)
		}
		delete(want, key)
		// numeric labels survive a value of 0 (cpu 0)
		for _, k := range []string{"pid", "tid", "cpu"} {
			if len(s.NumLabel[k]) != 1 {
				t.Errorf("sample %s: numeric label %s missing: %v", key, k, s.NumLabel)
			}
		}
		if tn[0] == "app-main" && s.NumLabel["cpu"][0] != 0 {
			t.Errorf("app-main: cpu %v, want 0", s.NumLabel["cpu"])
		}
		if exe := s.Label["process.executable.name"]; len(exe) != 1 {
			t.Errorf("sample %s: no process.executable.name label", key)
		}
		for _, loc := range s.Location {
			fn := loc.Line[0].Function.Name
			switch {
			case fn == "ksys_write" && (loc.Mapping == nil || loc.Mapping.File != "[kernel.kallsyms]"):
				t.Errorf("kernel frame not on the [kernel.kallsyms] mapping: %v", loc.Mapping)
			case fn == "[truncated]" && loc.Mapping != nil:
				t.Errorf("abort marker has a mapping: %v", loc.Mapping)
			}
		}
	}
	if total != 10 || len(want) != 0 {
		t.Errorf("total %d samples, want 10; missing %v", total, want)
	}

	out := checkWithGoToolPprof(t, pprofPath)
	for _, fn := range []string{"square", "compute", "main", "ksys_write", "__write",
		"main.handler", "[truncated]"} {
		if !regexp.MustCompile(`\s` + regexp.QuoteMeta(fn) + `(\s|$)`).MatchString(out) {
			t.Errorf("go tool pprof -top does not show %s:\n%s", fn, out)
		}
	}
	if !strings.Contains(out, "Build ID: "+fxAppBuild) {
		t.Errorf("go tool pprof does not report the main binary's build id:\n%s", out)
	}
}

// A collect with no samples still gives valid payloads: an OTLP request with a dictionary and
// no ResourceProfiles, and a pprof profile without samples.
func TestEncodeEmptyProfile(t *testing.T) {
	dir := t.TempDir()
	otlpPath, pprofPath := filepath.Join(dir, "empty.otlp"), filepath.Join(dir, "empty.pb.gz")
	r := run(t, time.Minute, buildPath(t, "fixtures/fixture_otlp"), "--empty", otlpPath, pprofPath)
	if r.code != 0 {
		t.Fatalf("fixture_otlp --empty: exit %d: %s", r.code, r.stderr)
	}
	data, err := os.ReadFile(otlpPath)
	if err != nil {
		t.Fatal(err)
	}
	req := pprofileotlp.NewExportRequest()
	if err := req.UnmarshalProto(data); err != nil {
		t.Fatalf("ExportRequest.UnmarshalProto: %v", err)
	}
	pd, err := (&pprofile.ProtoUnmarshaler{}).UnmarshalProfiles(data)
	if err != nil {
		t.Fatalf("ProtoUnmarshaler: %v", err)
	}
	for _, p := range []pprofile.Profiles{req.Profiles(), pd} {
		if p.ResourceProfiles().Len() != 0 || p.SampleCount() != 0 {
			t.Errorf("empty profile decodes to %d resources, %d samples",
				p.ResourceProfiles().Len(), p.SampleCount())
		}
		if st := p.Dictionary().StringTable(); st.Len() != 1 || st.At(0) != "" {
			t.Errorf("empty profile: string_table %v, want [\"\"]", st.AsRaw())
		}
	}
	p := parseProfile(t, pprofPath)
	if err := p.CheckValid(); err != nil || len(p.Sample) != 0 {
		t.Errorf("empty pprof: %d samples, %v", len(p.Sample), err)
	}
	checkWithGoToolPprof(t, pprofPath)
}

package integration

// End-to-end proofs of the symbolizer (issue 5) in profiles recorded by `otelprof record`:
// DWARF file:line with inline chains (from the binary and from a separate debug file found by
// build id), demangled C++ names with the raw symbol kept, Go names from .gopclntab (stripped
// too) with Go frame types, named kernel frames, what `go tool pprof -lines` prints, and
// --no-symbolize leaving addresses and build ids a backend can symbolize.

import (
	"bufio"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
)

// symRecord is record() that also returns the file written, for `go tool pprof` and OTLP.
func symRecord(t *testing.T, args ...string) (*profile.Profile, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out.pb.gz")
	p, _ := recordTo(t, out, args...)
	return p, out
}

// startBinary runs a binary outside $BUILD/workloads and kills it at the end of the test.
func startBinary(t *testing.T, path string, args ...string) *exec.Cmd {
	t.Helper()
	return startBinaryEnv(t, nil, path, args...)
}

// startBinaryEnv is startBinary with environment variables added to the test's own.
func startBinaryEnv(t *testing.T, env []string, path string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

// mustRun runs a build step and fails the test with its output if it fails.
func mustRun(t *testing.T, dir string, env []string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

// markerLine is the 1-based line of src containing marker.
func markerLine(t *testing.T, src, marker string) int64 {
	t.Helper()
	f, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := int64(1); sc.Scan(); n++ {
		if strings.Contains(sc.Text(), marker) {
			return n
		}
	}
	t.Fatalf("no line of %s contains %q", src, marker)
	return 0
}

// gnuBuildID reads the hex GNU build id of an ELF file.
func gnuBuildID(t *testing.T, path string) string {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := f.Section(".note.gnu.build-id")
	if s == nil {
		t.Fatalf("%s has no .note.gnu.build-id", path)
	}
	d, err := s.Data()
	if err != nil || len(d) < 16 {
		t.Fatalf("%s: bad build-id note (%v)", path, err)
	}
	namesz := binary.LittleEndian.Uint32(d[0:])
	descsz := binary.LittleEndian.Uint32(d[4:])
	off := 12 + (namesz+3)&^3
	if int(off+descsz) > len(d) {
		t.Fatalf("%s: truncated build-id note", path)
	}
	return hex.EncodeToString(d[off : off+descsz])
}

func symInlineSource(t *testing.T) string {
	t.Helper()
	src, err := filepath.Abs("../workloads/sym_inline.c")
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// checkInlineProfile asserts what a user sees for sym_inline: leaf locations with two lines
// for one address, sym_hot_inner (innermost) then sym_outer_caller, in sym_inline.c at the
// HOT_LINE / CALL_LINE markers, with the functions' start lines.
func checkInlineProfile(t *testing.T, p *profile.Profile, pid int, binSuffix string) {
	t.Helper()
	src := symInlineSource(t)
	hot, call := markerLine(t, src, "/* HOT_LINE */"), markerLine(t, src, "/* CALL_LINE */")
	innerStart := markerLine(t, src, "sym_hot_inner(unsigned long x)")
	outerStart := markerLine(t, src, "sym_outer_caller(unsigned long x)")

	ss := samplesOf(p, pid)
	n := total(ss)
	if n < 100 {
		t.Fatalf("%d samples of sym_inline, want >= 100", n)
	}
	var inlined, atHot int64
	for _, s := range ss {
		leaf := s.Location[0]
		if len(leaf.Line) != 2 || leaf.Line[0].Function == nil || leaf.Line[1].Function == nil ||
			leaf.Line[0].Function.Name != "sym_hot_inner" ||
			leaf.Line[1].Function.Name != "sym_outer_caller" {
			continue
		}
		inlined += count(s)
		in, out := leaf.Line[0], leaf.Line[1]
		for _, l := range []profile.Line{in, out} {
			if filepath.Base(l.Function.Filename) != "sym_inline.c" {
				t.Fatalf("%s is in file %q, want sym_inline.c", l.Function.Name,
					l.Function.Filename)
			}
		}
		if out.Line != call {
			t.Fatalf("sym_outer_caller at line %d, want the CALL_LINE %d", out.Line, call)
		}
		if in.Line <= innerStart || in.Line >= outerStart {
			t.Fatalf("sym_hot_inner at line %d, outside its body (%d..%d)", in.Line,
				innerStart, outerStart)
		}
		if in.Line == hot {
			atHot += count(s)
		}
		if in.Function.StartLine != innerStart || out.Function.StartLine != outerStart {
			t.Errorf("start lines %d, %d, want %d, %d", in.Function.StartLine,
				out.Function.StartLine, innerStart, outerStart)
		}
		if leaf.Mapping == nil || !strings.HasSuffix(leaf.Mapping.File, binSuffix) ||
			!leaf.Mapping.HasInlineFrames || !leaf.Mapping.HasFilenames ||
			!leaf.Mapping.HasLineNumbers {
			t.Errorf("leaf mapping %+v: want %s with inline frames, files and lines",
				leaf.Mapping, binSuffix)
		}
	}
	if inlined < n*8/10 {
		var ex []string
		for i := 0; i < len(ss) && i < 5; i++ {
			ex = append(ex, strings.Join(funcNames(ss[i]), " < "))
		}
		t.Fatalf("%d of %d samples have the leaf [sym_hot_inner, sym_outer_caller], want >= 80%%;"+
			" e.g. %q", inlined, n, ex)
	}
	if atHot < inlined/2 {
		t.Errorf("%d of %d inlined samples at the HOT_LINE %d, want most", atHot, inlined, hot)
	}
	t.Logf("%d samples, %d with the inline pair at one address, %d at sym_inline.c:%d", n,
		inlined, atHot, hot)
}

// TestSymbolsInline: -O2 -g, hot function always inlined: both functions for the same
// address, innermost first, with file and line.
func TestSymbolsInline(t *testing.T) {
	requireRoot(t)
	w := startWorkload(t, "sym_inline", "15")
	time.Sleep(200 * time.Millisecond)
	p, _ := symRecord(t, "--pid", strconv.Itoa(w.Process.Pid), "--frequency", "499",
		"--duration", "3")
	checkInlineProfile(t, p, w.Process.Pid, "/workloads/sym_inline")
}

// stripWithDebugFile copies sym_inline into a temp dir, splits its debug info into
// ROOT/.build-id/xx/rest.debug and strips the copy. Returns the binary and ROOT.
func stripWithDebugFile(t *testing.T) (bin, root string) {
	t.Helper()
	dir := t.TempDir()
	bin = filepath.Join(dir, "sym_inline-stripped")
	data, err := os.ReadFile(buildPath(t, "workloads/sym_inline"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	id := gnuBuildID(t, bin)
	root = filepath.Join(dir, "debug")
	dbg := filepath.Join(root, ".build-id", id[:2], id[2:]+".debug")
	if err := os.MkdirAll(filepath.Dir(dbg), 0o755); err != nil {
		t.Fatal(err)
	}
	mustRun(t, dir, nil, "objcopy", "--only-keep-debug", bin, dbg)
	mustRun(t, dir, nil, "strip", "--strip-all", bin)

	// the stripped copy has neither symbols nor DWARF, and kept its build id
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, s := range []string{".symtab", ".debug_info", ".debug_line", ".gnu_debuglink"} {
		if f.Section(s) != nil {
			t.Fatalf("stripped %s still has %s", bin, s)
		}
	}
	if got := gnuBuildID(t, bin); got != id {
		t.Fatalf("strip changed the build id %s -> %s", id, got)
	}
	return bin, root
}

// TestSymbolsStrippedDebugFile: the same workload stripped, its debug file under a debug root
// (OTELPROF_DEBUG_ROOT, searched as /usr/lib/debug is by default): same names, files, lines;
// without the debug root the inline functions are not found (the check can fail).
func TestSymbolsStrippedDebugFile(t *testing.T) {
	requireRoot(t)
	bin, root := stripWithDebugFile(t)
	w := startBinary(t, bin, "15")
	time.Sleep(200 * time.Millisecond)
	pid := strconv.Itoa(w.Process.Pid)

	t.Setenv("OTELPROF_DEBUG_ROOT", "")
	p, _ := symRecord(t, "--pid", pid, "--frequency", "199", "--duration", "1")
	ss := samplesOf(p, w.Process.Pid)
	if total(ss) == 0 {
		t.Fatal("no samples of the stripped binary")
	}
	if sh := shareByStack(ss, "sym_hot_inner", "sym_outer_caller"); sh["sym_hot_inner"] > 0 ||
		sh["sym_outer_caller"] > 0 {
		t.Fatalf("stripped binary without its debug file named sym_hot_inner/sym_outer_caller "+
			"(%v): the debug file was found some other way, this test proves nothing", sh)
	}

	t.Setenv("OTELPROF_DEBUG_ROOT", root)
	p, _ = symRecord(t, "--pid", pid, "--frequency", "499", "--duration", "3")
	checkInlineProfile(t, p, w.Process.Pid, "/sym_inline-stripped")
}

// TestSymbolsPprofLines: `go tool pprof -lines -top` prints sym_inline.c:LINE entries for
// the inlined function and its caller.
func TestSymbolsPprofLines(t *testing.T) {
	requireRoot(t)
	w := startWorkload(t, "sym_inline", "15")
	time.Sleep(200 * time.Millisecond)
	_, out := symRecord(t, "--pid", strconv.Itoa(w.Process.Pid), "--frequency", "499",
		"--duration", "3")
	r := run(t, 2*time.Minute, "go", "tool", "pprof", "-lines", "-top", "-nodecount=50", out)
	if r.code != 0 {
		t.Fatalf("go tool pprof -lines -top: exit %d: %s", r.code, r.stderr)
	}
	src := symInlineSource(t)
	hot, call := markerLine(t, src, "/* HOT_LINE */"), markerLine(t, src, "/* CALL_LINE */")
	for _, re := range []string{
		`sym_hot_inner \S*sym_inline\.c:` + strconv.FormatInt(hot, 10) + ` \(inline\)`,
		`sym_outer_caller \S*sym_inline\.c:` + strconv.FormatInt(call, 10) + `\b`,
		`main \S*sym_inline\.c:\d+`,
	} {
		if !regexp.MustCompile(re).MatchString(r.stdout) {
			t.Errorf("go tool pprof -lines -top has no line matching %q:\n%s", re, r.stdout)
		}
	}
}

// TestSymbolsCpp: a C++ workload built here with g++ -O2 -g shows demangled names
// (namespace::Class<T>::method) and keeps the mangled symbol as the system name.
func TestSymbolsCpp(t *testing.T) {
	requireRoot(t)
	src, err := filepath.Abs("../unit/data/sym_cpp.cc")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "sym_cpp")
	mustRun(t, dir, nil, "g++", "-O2", "-g", "-o", bin, src)
	w := startBinary(t, bin, "2000000000")
	time.Sleep(200 * time.Millisecond)
	p, _ := symRecord(t, "--pid", strconv.Itoa(w.Process.Pid), "--frequency", "499",
		"--duration", "3")

	ss := samplesOf(p, w.Process.Pid)
	n := total(ss)
	if n < 100 {
		t.Fatalf("%d samples of sym_cpp, want >= 100", n)
	}
	want := map[string]string{ // display name -> Itanium-mangled system name
		"symcpp::detail::Accumulator<int>::add":  "_ZN6symcpp6detail11AccumulatorIiE3addEi",
		"symcpp::detail::Accumulator<long>::add": "_ZN6symcpp6detail11AccumulatorIlE3addEl",
		"symcpp::run_work":                       "_ZN6symcpp8run_workEi",
	}
	seen := map[string]int64{}
	for _, s := range ss {
		for _, loc := range s.Location {
			for _, l := range loc.Line {
				if l.Function == nil {
					continue
				}
				if strings.HasPrefix(l.Function.Name, "_Z") {
					t.Fatalf("function shown mangled: %q", l.Function.Name)
				}
				sys, ok := want[l.Function.Name]
				if !ok {
					continue
				}
				if l.Function.SystemName != sys {
					t.Fatalf("%s has system name %q, want %q", l.Function.Name,
						l.Function.SystemName, sys)
				}
				if filepath.Base(l.Function.Filename) != "sym_cpp.cc" || l.Line == 0 {
					t.Errorf("%s at %s:%d, want sym_cpp.cc:LINE", l.Function.Name,
						l.Function.Filename, l.Line)
				}
				seen[l.Function.Name] += count(s)
			}
		}
	}
	for name := range want {
		if seen[name] < n/10 {
			t.Errorf("%s on the stack of %d of %d samples, want >= 10%%", name, seen[name], n)
		}
	}
	if seen["symcpp::run_work"] < n*8/10 {
		t.Errorf("symcpp::run_work on %d of %d stacks, want >= 80%%", seen["symcpp::run_work"], n)
	}
	t.Logf("%d samples; on stack: %v", n, seen)
}

// goFrameTypes records pids as OTLP and returns, per mapping file, the frame types of the
// locations whose innermost function starts with "main.".
func goFrameTypes(t *testing.T, pids ...int) map[string]map[string]int {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out.otlp")
	args := []string{"record", "--format", "otlp", "--output", out, "--frequency", "199",
		"--duration", "1"}
	for _, pid := range pids {
		args = append(args, "--pid", strconv.Itoa(pid))
	}
	r := run(t, 3*time.Minute, buildPath(t, "otelprof"), args...)
	if r.code != 0 {
		t.Fatalf("otelprof %v: exit %d: %s", args, r.code, r.stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	req := pprofileotlp.NewExportRequest()
	if err := req.UnmarshalProto(data); err != nil {
		t.Fatalf("pdata cannot decode the OTLP output: %v", err)
	}
	dict := req.Profiles().Dictionary()
	strs := dict.StringTable()
	res := map[string]map[string]int{}
	for _, loc := range dict.LocationTable().All() {
		if loc.Lines().Len() == 0 || loc.MappingIndex() <= 0 {
			continue
		}
		fn := dict.FunctionTable().At(int(loc.Lines().At(0).FunctionIndex()))
		if !strings.HasPrefix(strs.At(int(fn.NameStrindex())), "main.") {
			continue
		}
		m := dict.MappingTable().At(int(loc.MappingIndex()))
		file := strs.At(int(m.FilenameStrindex()))
		a, err := pprofile.FromAttributeIndices(dict.AttributeTable(), loc, dict)
		if err != nil {
			t.Fatal(err)
		}
		ft, _ := a.AsRaw()["profile.frame.type"].(string)
		if res[file] == nil {
			res[file] = map[string]int{}
		}
		res[file][ft]++
	}
	return res
}

// TestSymbolsGo: a Go program built here — normally, with -ldflags="-s -w", and as an
// externally linked cgo binary stripped the same way — shows its Go function names, main.go
// lines and inlined calls (all from .gopclntab), frame type "go" in OTLP, and complete stacks:
// the frameless leaf's caller is there in every build (the unwinder reads Go's SP-delta
// tables from .gopclntab; -w drops .debug_frame, and external linking puts .eh_frame for
// the C code next to it).
func TestSymbolsGo(t *testing.T) {
	requireRoot(t)
	src, err := os.ReadFile("../unit/data/sym_go/main.go")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"GOFLAGS=", "CGO_ENABLED=0"}
	full, stripped := filepath.Join(dir, "symgo"), filepath.Join(dir, "symgo-stripped")
	cgo := filepath.Join(dir, "symgo-cgo")
	mustRun(t, dir, env, "go", "build", "-o", full, "main.go")
	mustRun(t, dir, env, "go", "build", "-ldflags=-s -w", "-o", stripped, "main.go")
	mustRun(t, dir, []string{"GOFLAGS=", "CGO_ENABLED=1"}, "go", "build",
		"-ldflags=-s -w -linkmode=external", "-o", cgo, "main.go")
	for _, bin := range []string{stripped, cgo} {
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		if f.Section(".symtab") != nil || f.Section(".debug_info") != nil || f.Section(".debug_frame") != nil {
			t.Fatalf("-s -w left .symtab, .debug_info or .debug_frame in %s", bin)
		}
		if bin == cgo && f.Section(".eh_frame") == nil {
			t.Fatalf("%s: no .eh_frame: not the externally linked layout under test", bin)
		}
		f.Close()
	}
	// symGoHotLoop(n) with n = 1e12 runs far longer than the test
	a := startBinary(t, full, "1000000000000")
	b := startBinary(t, stripped, "1000000000000")
	cg := startBinary(t, cgo, "1000000000000")
	time.Sleep(300 * time.Millisecond)
	p, _ := symRecord(t, "--pid", strconv.Itoa(a.Process.Pid), "--pid",
		strconv.Itoa(b.Process.Pid), "--pid", strconv.Itoa(cg.Process.Pid),
		"--frequency", "499", "--duration", "3")

	for _, c := range []struct {
		name string
		pid  int
	}{{"symgo", a.Process.Pid}, {"symgo-stripped", b.Process.Pid}, {"symgo-cgo", cg.Process.Pid}} {
		ss := samplesOf(p, c.pid)
		n := total(ss)
		if n < 100 {
			t.Errorf("%s: %d samples, want >= 100", c.name, n)
			continue
		}
		sh := shareByStack(ss, "main.symGoHotLoop", "main.(*worker).symGoMethod", "main.main",
			"runtime.main")
		for fn, s := range sh {
			if s < 80 {
				t.Errorf("%s: %s on %.0f%% of stacks, want >= 80%%", c.name, fn, s)
			}
		}
		// symGoSquare is inlined into the loop: one location, the inlined call first
		var inl int64
		for _, s := range ss {
			for _, loc := range s.Location {
				if len(loc.Line) >= 2 && loc.Line[0].Function.Name == "main.symGoSquare" &&
					loc.Line[1].Function.Name == "main.symGoHotLoop" {
					inl += count(s)
					break
				}
			}
		}
		t.Logf("%s: %.0f%% of samples in the inlined main.symGoSquare", c.name, 100*float64(inl)/float64(n))
		if inl*10 < n {
			t.Errorf("%s: %d of %d samples show main.symGoSquare inlined into main.symGoHotLoop, want >= 10%%", c.name, inl, n)
		}
		for _, s := range ss {
			for _, loc := range s.Location {
				if loc.Mapping == nil || !strings.HasSuffix(loc.Mapping.File, "/"+c.name) {
					continue
				}
				if len(loc.Line) == 0 || loc.Line[0].Function.Name == "" {
					// the cgo build's C code (crosscall1, threadentry: thread starts)
					// has no name left after -s; its Go code is checked by the shares
					if c.name == "symgo-cgo" {
						continue
					}
					t.Fatalf("%s: unnamed frame at %#x", c.name, loc.Address)
				}
				for _, l := range loc.Line {
					f := l.Function
					// Some runtime assembly trampolines (runtime.cgoSigtramp) carry no
					// line table at all: a name without file is right for them.
					if strings.HasPrefix(f.Name, "runtime.") && f.Filename == "" && l.Line == 0 {
						continue
					}
					// Go's DWARF file 0 is a "?" placeholder: a file ending in "?" is a
					// misread file index
					if f.Filename == "" || strings.HasSuffix(f.Filename, "?") || l.Line == 0 {
						t.Fatalf("%s: %s at %q:%d, want a source file and line", c.name,
							f.Name, f.Filename, l.Line)
					}
					if strings.HasPrefix(f.Name, "main.") &&
						f.Filename != filepath.Join(dir, "main.go") {
						t.Fatalf("%s: %s in %q, want %s", c.name, f.Name, f.Filename,
							filepath.Join(dir, "main.go"))
					}
				}
			}
		}
		t.Logf("%s: %d samples, shares %v", c.name, n, sh)
	}

	types := goFrameTypes(t, a.Process.Pid, b.Process.Pid, cg.Process.Pid)
	for _, name := range []string{full, stripped, cgo} {
		ft := types[name]
		if ft["go"] == 0 || len(ft) != 1 {
			t.Errorf("%s: frame types of main.* locations %v, want only \"go\"", name, ft)
		}
	}
}

// TestSymbolsKernelNames: a syscall-heavy workload's kernel frames carry kernel function
// names: the read/write syscall path (vfs_read & co.) under the syscall entry.
func TestSymbolsKernelNames(t *testing.T) {
	requireRoot(t)
	w := startWorkload(t, "syscalls", "15")
	time.Sleep(200 * time.Millisecond)
	p, _ := symRecord(t, "--pid", strconv.Itoa(w.Process.Pid), "--frequency", "499",
		"--duration", "3")
	ss := samplesOf(p, w.Process.Pid)
	n := total(ss)
	if n < 100 {
		t.Fatalf("%d samples of the syscall workload, want >= 100", n)
	}
	// names stable for many years on x86-64 and arm64, one of which is on every read/write
	// path even when the others are inlined
	rw := map[string]bool{"vfs_read": true, "vfs_write": true, "ksys_read": true,
		"ksys_write": true, "__x64_sys_read": true, "__x64_sys_write": true,
		"__arm64_sys_read": true, "__arm64_sys_write": true}
	addrLike := regexp.MustCompile(`^(0x)?[0-9a-f]+$|\+0x`)
	var kernel, inRW, inEntry int64
	for _, s := range ss {
		var hasK, hasRW, hasEntry, userSeen bool
		for _, loc := range s.Location {
			isK := loc.Mapping != nil && loc.Mapping.File == "[kernel.kallsyms]"
			if !isK {
				userSeen = true
				continue
			}
			if userSeen {
				t.Fatalf("kernel frame %#x above a user frame (stacks are leaf first)",
					loc.Address)
			}
			if len(loc.Line) == 0 || loc.Line[0].Function.Name == "" {
				continue
			}
			name := loc.Line[0].Function.Name
			if addrLike.MatchString(name) {
				t.Fatalf("kernel frame named like an address: %q", name)
			}
			hasK = true
			hasRW = hasRW || rw[name]
			hasEntry = hasEntry || strings.Contains(strings.ToLower(name), "syscall")
		}
		if hasK {
			kernel += count(s)
		}
		if hasRW {
			inRW += count(s)
		}
		if hasEntry {
			inEntry += count(s)
		}
	}
	if kernel < n/2 {
		t.Fatalf("%d of %d samples have named kernel frames, want most", kernel, n)
	}
	if inRW < kernel*8/10 {
		t.Errorf("%d of %d kernel stacks show a read/write syscall function (%v)", inRW,
			kernel, rw)
	}
	if inEntry < kernel*8/10 {
		t.Errorf("%d of %d kernel stacks show the syscall entry (a name with \"syscall\")",
			inEntry, kernel)
	}
	t.Logf("%d samples, %d with named kernel frames, %d in read/write, %d under the entry",
		n, kernel, inRW, inEntry)
}

// TestSymbolsNoSymbolize: --no-symbolize writes no function names for user frames, but
// mappings keep build ids and addresses that resolve (offline) to the right function.
func TestSymbolsNoSymbolize(t *testing.T) {
	requireRoot(t)
	binPath := buildPath(t, "workloads/sym_inline")
	w := startWorkload(t, "sym_inline", "15")
	time.Sleep(200 * time.Millisecond)
	p, _ := symRecord(t, "--pid", strconv.Itoa(w.Process.Pid), "--no-symbolize", "--frequency",
		"499", "--duration", "3")
	ss := samplesOf(p, w.Process.Pid)
	n := total(ss)
	if n < 100 {
		t.Fatalf("%d samples of sym_inline, want >= 100", n)
	}
	for _, loc := range p.Location {
		if loc.Mapping == nil || loc.Mapping.File == "[kernel.kallsyms]" {
			continue
		}
		for _, l := range loc.Line {
			if l.Function != nil && (l.Function.Name != "" || l.Function.Filename != "") {
				t.Fatalf("--no-symbolize: user frame %#x in %s named %q (%s)", loc.Address,
					loc.Mapping.File, l.Function.Name, l.Function.Filename)
			}
		}
	}

	// the offline side: the binary's build id, and leaf addresses that fall in
	// sym_outer_caller (where sym_hot_inner is inlined) through mapping offset + PT_LOAD
	id := gnuBuildID(t, binPath)
	ef, err := elf.Open(binPath)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	syms, err := ef.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	var lo, hi uint64
	for _, s := range syms {
		if s.Name == "sym_outer_caller" {
			lo, hi = s.Value, s.Value+s.Size
		}
	}
	if hi == 0 {
		t.Fatal("sym_outer_caller not in the workload's symbol table")
	}
	toVaddr := func(off uint64) (uint64, bool) {
		for _, ph := range ef.Progs {
			if ph.Type == elf.PT_LOAD && off >= ph.Off && off < ph.Off+ph.Filesz {
				return off - ph.Off + ph.Vaddr, true
			}
		}
		return 0, false
	}
	var inOuter int64
	for _, s := range ss {
		leaf := s.Location[0]
		m := leaf.Mapping
		if m == nil || m.File != binPath {
			continue
		}
		if m.BuildID != id {
			t.Fatalf("mapping %s has build id %q, want %s", m.File, m.BuildID, id)
		}
		if m.HasFunctions {
			t.Errorf("mapping %s claims has_functions with --no-symbolize", m.File)
		}
		if leaf.Address < m.Start || leaf.Address >= m.Limit {
			t.Fatalf("leaf address %#x outside its mapping %#x-%#x", leaf.Address, m.Start,
				m.Limit)
		}
		if v, ok := toVaddr(leaf.Address - m.Start + m.Offset); ok && v >= lo && v < hi {
			inOuter += count(s)
		}
	}
	if inOuter < n*8/10 {
		t.Errorf("%d of %d leaf addresses resolve offline to sym_outer_caller [%#x, %#x), "+
			"want >= 80%%", inOuter, n, lo, hi)
	}
	t.Logf("%d samples, %d leaf addresses in sym_outer_caller via build id %s", n, inOuter, id)
}

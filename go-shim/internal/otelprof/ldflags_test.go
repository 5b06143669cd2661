package otelprof

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The cgo preamble names the libraries libotelprof.a needs; the Makefile's LDLIBS is the
// source of truth (the CLI and the shared library link with it). A library added there
// but not here breaks only the collector build, late; this test says so early.
func TestLinkFlagsMatchMakefile(t *testing.T) {
	mk, err := os.ReadFile(filepath.Join("..", "..", "..", "Makefile"))
	if err != nil {
		t.Skipf("no top-level Makefile (go-shim used outside the otelprof repository): %v", err)
	}
	m := regexp.MustCompile(`(?m)^LDLIBS\s*:?=\s*(.*)$`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("no LDLIBS line in the Makefile")
	}
	want := strings.Fields(string(m[1]))

	src, err := os.ReadFile("otelprof_cgo.go")
	if err != nil {
		t.Fatal(err)
	}
	c := regexp.MustCompile(`(?m)^#cgo LDFLAGS:(.*)$`).FindSubmatch(src)
	if c == nil {
		t.Fatal("no #cgo LDFLAGS line in otelprof_cgo.go")
	}
	var got []string
	for _, f := range strings.Fields(string(c[1])) {
		if strings.HasPrefix(f, "-l") && f != "-l:libotelprof.a" {
			got = append(got, f)
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("#cgo LDFLAGS libraries %v differ from the Makefile's LDLIBS %v", got, want)
	}
}

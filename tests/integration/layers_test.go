package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The layering check of `make lint` (scripts/check-layers.py): clean on the tree as it is, and
// failing, with the offending include named, when a back edge or a cross-runtime include is
// planted in a copy of the tree.

func runLayers(t *testing.T, root string) (string, int) {
	t.Helper()
	cmd := exec.Command("python3", "../../scripts/check-layers.py", "--root", root)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running check-layers.py: %v", err)
	}
	return string(out), 0
}

// copyTree copies the lib/, bpf/ and include/ sources the check reads into dst.
func copyTree(t *testing.T, dst string) {
	t.Helper()
	for _, top := range []string{"lib", "bpf", "include"} {
		src := filepath.Join("../..", top)
		err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel("../..", p)
			if info.IsDir() {
				return os.MkdirAll(filepath.Join(dst, rel), 0o755)
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func appendLine(t *testing.T, path, line string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(line + "\n"); err != nil {
		t.Fatal(err)
	}
}

func TestLayersClean(t *testing.T) {
	if out, code := runLayers(t, "../.."); code != 0 {
		t.Fatalf("the tree's includes do not point one way (exit %d):\n%s", code, out)
	}
}

func TestLayersBackEdgeFails(t *testing.T) {
	cases := []struct {
		name, file, line, want string
	}{
		{"lib util includes profile", "lib/util/log.c", `#include "profile/profile.h"`,
			`lib/util/log.c:`},
		{"lib binary includes symbol", "lib/binary/filecache.c", `#include "symbol/symbolize.h"`,
			`of lib/symbol, a later stage than lib/binary`},
		{"lib symbol includes a runtime", "lib/symbol/dwarf.c", `#include "runtime/x/x.h"`,
			`of lib/runtime/x, a later stage than lib/symbol`},
		{"runtime includes another runtime", "lib/runtime/y/y.c", `#include "runtime/x/x.h"`,
			`runtime y includes runtime x`},
		{"bpf sample includes an unwinder", "bpf/sample/record.bpf.h", `#include "unwind/native.bpf.h"`,
			`of bpf/unwind, a later stage than bpf/sample`},
		{"relative spelling is judged alike", "lib/unwind/cfi.c", `#include "../symbol/dwarf.h"`,
			`of lib/symbol, a later stage than lib/unwind`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			copyTree(t, root)
			// a runtime x for the cases that include one
			if err := os.MkdirAll(filepath.Join(root, "lib/runtime/x"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, "lib/runtime/x/x.h"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Dir(filepath.Join(root, c.file)), 0o755); err != nil {
				t.Fatal(err)
			}
			if out, code := runLayers(t, root); code != 0 {
				t.Fatalf("copy of the tree not clean before planting (exit %d):\n%s", code, out)
			}
			appendLine(t, filepath.Join(root, c.file), c.line)
			out, code := runLayers(t, root)
			if code != 1 {
				t.Fatalf("planted %s in %s: exit %d, want 1; output:\n%s", c.line, c.file, code, out)
			}
			if !strings.Contains(out, c.want) || !strings.Contains(out, c.file) {
				t.Fatalf("planted %s in %s: output does not name it (want %q):\n%s", c.line, c.file, c.want, out)
			}
		})
	}
}

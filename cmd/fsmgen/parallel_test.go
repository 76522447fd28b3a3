package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParallelNotGenerated: a machine with parallel states checks and
// formats; diagram draws it, export writes it and generate writes its
// package; sql, whose column would hold configurations, says it does not
// render it yet, writing nothing.
func TestParallelNotGenerated(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile(filepath.Join("..", "..", "dsl", "testdata", "parallel", "podlifecycle.fsm"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p := write(t, dir, "pod.fsm", string(src))
	if code, stdout, stderr := runCmd(t, dir, "", "check", "pod.fsm"); code != exitOK || stdout != "" || stderr != "" {
		t.Errorf("check: exit %d, stdout %q, stderr %q; want 0 and nothing", code, stdout, stderr)
	}
	if code, stdout, stderr := runCmd(t, dir, "", "fmt", "pod.fsm"); code != exitOK || stdout != string(src) || stderr != "" {
		t.Errorf("fmt: exit %d, stderr %q, output changed: %v", code, stderr, stdout != string(src))
	}
	for _, args := range [][]string{
		{"diagram", "pod.fsm"},
		{"diagram", "-format", "dot", "pod.fsm"},
		{"export", "-format", "xstate", "pod.fsm"},
		{"export", "-format", "scxml", "pod.fsm"},
	} {
		code, stdout, stderr := runCmd(t, dir, "", args...)
		if code != exitOK || stderr != "" || !strings.Contains(stdout, "Bound") {
			t.Errorf("%v: exit %d, stderr %q, stdout without Bound; want 0 and the machine", args, code, stderr)
		}
	}
	code, stdout, stderr := runCmd(t, dir, "", "sql", "-table", "pods", "-column", "state", "pod.fsm")
	want := "fsmgen sql: " + p + ": machine Pod: a column guard for parallel states is not generated yet\n"
	if code != exitInput || stdout != "" {
		t.Errorf("sql: exit %d, stdout %q; want %d and nothing", code, stdout, exitInput)
	}
	if diff := cmp.Diff(want, stderr); diff != "" {
		t.Errorf("sql: stderr (-want +got):\n%s", diff)
	}
	if code, _, stderr := runCmd(t, dir, "", "generate", "pod.fsm"); code != exitOK || stderr != "" {
		t.Fatalf("generate: exit %d, stderr %q", code, stderr)
	}
	entries, err := os.ReadDir(filepath.Join(dir, "podlifecycle"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	files := []string{"README.md", "diagram.dot", "diagram.mmd", "fsm.go", "fsm_test.go", "runs.go"}
	if diff := cmp.Diff(files, names); diff != "" {
		t.Errorf("generate wrote (-want +got):\n%s", diff)
	}
}

package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/dsl"
	"github.com/fsmgen/fsmgen/gen"
)

// TestGenerateInternalError checks that a defect of the generator, a panic
// on the calling goroutine or gen.Generate's ErrInternal from one of its
// own, is reported as an internal error naming the input, exits 1 and
// writes nothing, not even the files of an input that generated cleanly.
func TestGenerateInternalError(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		render func(*dsl.Spec) ([]gen.File, error)
		want   string
	}{
		{
			name: "panic",
			render: func(spec *dsl.Spec) ([]gen.File, error) {
				if spec.Machines[0].Name == "Door" {
					return gen.Generate(spec)
				}
				var rows []int
				_ = rows[len(spec.Machines)] // index out of range
				return nil, nil
			},
			want: "fsmgen: internal error generating %s: runtime error: index out of range [1] with length 0\n",
		},
		{
			name: "ErrInternal",
			render: func(spec *dsl.Spec) ([]gen.File, error) {
				if spec.Machines[0].Name == "Door" {
					return gen.Generate(spec)
				}
				return nil, fmt.Errorf("machine %s tests: %w: boom", spec.Machines[0].Name, gen.ErrInternal)
			},
			want: "fsmgen: internal error generating %s: machine Lamp tests: boom\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			door := write(t, dir, "door.fsm", good)
			lamp := write(t, dir, "lamp.fsm", strings.ReplaceAll(good, "Door", "Lamp"))
			var stdout, stderr bytes.Buffer
			code := generateWith(tc.render, []string{door, lamp}, &stdout, &stderr)
			if code != exitInput {
				t.Errorf("exit code %d, want %d", code, exitInput)
			}
			if diff := cmp.Diff(fmt.Sprintf(tc.want, lamp), stderr.String()); diff != "" {
				t.Errorf("stderr (-want +got):\n%s", diff)
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			if diff := cmp.Diff([]string{"door.fsm", "lamp.fsm"}, names); diff != "" {
				t.Errorf("files in %s after a failed generate (-want +got):\n%s", filepath.Base(dir), diff)
			}
		})
	}
}

// TestGenerateNoTransitions is the machine that used to pass check and
// panic generate: both now refuse it with the same positioned error.
func TestGenerateNoTransitions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, dir, "lone.fsm", "machine Lone {\n    type \"lone\"\n    version 1\n    initial A\n}\n")
	want := filepath.Join(dir, "lone.fsm") + `:1:1: machine Lone has no transitions: a run could never leave its initial state A; add one, such as "A -> DONE on EVENT"` + "\n"
	for _, cmd := range []string{"check", "generate"} {
		code, _, stderr := runCmd(t, dir, "", cmd, "lone.fsm")
		if code != exitInput {
			t.Errorf("%s: exit code %d, want %d", cmd, code, exitInput)
		}
		if diff := cmp.Diff(want, stderr); diff != "" {
			t.Errorf("%s: stderr (-want +got):\n%s", cmd, diff)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "lone")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("generate wrote %s: %v", filepath.Join(dir, "lone"), err)
	}
}

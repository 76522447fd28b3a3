package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/dsl"
	"github.com/fsmgen/fsmgen/gen"
)

func TestExportUsage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, dir, "door.fsm", good)
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"export", "door.fsm"}, exitUsage, "fsmgen export: -format is required: xstate or scxml\n" + usage},
		{[]string{"export", "-format", "json", "door.fsm"}, exitUsage, "fsmgen export: unknown format \"json\", want xstate or scxml\n"},
		{[]string{"export", "-format", "xstate"}, exitUsage, "fsmgen export: want exactly one .fsm file\n" + usage},
		{[]string{"export", "-format", "xstate", "-machine", "Gate", "door.fsm"}, exitInput, "fsmgen export: " + filepath.Join(dir, "door.fsm") + " has no machine Gate (it has Door)\n"},
	} {
		code, _, stderr := runCmd(t, dir, "", tc.args...)
		if code != tc.code || stderr != tc.stderr {
			t.Errorf("fsmgen %v: exit %d, stderr\n%s\nwant exit %d, stderr\n%s", tc.args, code, stderr, tc.code, tc.stderr)
		}
	}
}

// TestExportFile checks that -o writes what standard output gets, which is
// gen.XState's rendering.
func TestExportFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, dir, "door.fsm", good)
	code, stdout, stderr := runCmd(t, dir, "", "export", "-format", "xstate", "door.fsm")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	out := filepath.Join(dir, "door.json")
	if code, _, stderr := runCmd(t, dir, "", "export", "-format", "xstate", "-o", out, "door.fsm"); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	file, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(stdout, string(file)); diff != "" {
		t.Errorf("-o FILE and standard output differ (-stdout +file):\n%s", diff)
	}
	spec := loadString(t, filepath.Join(dir, "door.fsm"), good)
	want, err := gen.XState(spec.Machines[0])
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), stdout); diff != "" {
		t.Errorf("export differs from gen.XState (-want +got):\n%s", diff)
	}
}

func loadString(t *testing.T, name, src string) *dsl.Spec {
	t.Helper()
	spec, ds := dsl.Load(name, []byte(src))
	if spec == nil || ds.HasErrors() {
		t.Fatalf("%s: %v", name, ds.Err())
	}
	return spec
}

func TestImportUsage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"import", "m.json"}, exitUsage, "fsmgen import: -format is required: xstate\n" + usage},
		{[]string{"import", "-format", "scxml", "m.json"}, exitUsage, "fsmgen import: unknown format \"scxml\", want xstate\n"},
		{[]string{"import", "-format", "xstate"}, exitUsage, "fsmgen import: want exactly one XState JSON file\n" + usage},
		{[]string{"import", "-format", "xstate", "-o", "m.txt", "m.json"}, exitUsage, "fsmgen import: -o m.txt is not a .fsm file\n"},
	} {
		code, _, stderr := runCmd(t, dir, "", tc.args...)
		if code != tc.code || stderr != tc.stderr {
			t.Errorf("fsmgen %v: exit %d, stderr\n%s\nwant exit %d, stderr\n%s", tc.args, code, stderr, tc.code, tc.stderr)
		}
	}
}

// TestImportExport runs export then import through the command: the .fsm
// it writes checks and exports to the same JSON.
func TestImportExport(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, dir, "door.fsm", good)
	js := filepath.Join(dir, "door.json")
	if code, _, stderr := runCmd(t, dir, "", "export", "-format", "xstate", "-o", js, "door.fsm"); code != exitOK {
		t.Fatalf("export: exit %d: %s", code, stderr)
	}
	back := filepath.Join(dir, "back", "door.fsm")
	if code, _, stderr := runCmd(t, dir, "", "import", "-format", "xstate", "-o", back, js); code != exitOK || stderr != "" {
		t.Fatalf("import: exit %d: %s", code, stderr)
	}
	code, again, stderr := runCmd(t, dir, "", "export", "-format", "xstate", back)
	if code != exitOK {
		t.Fatalf("export of the import: exit %d: %s", code, stderr)
	}
	first, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(first), again); diff != "" {
		t.Errorf("export of the import differs (-first +second):\n%s", diff)
	}
}

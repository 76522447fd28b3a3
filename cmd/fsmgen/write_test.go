package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime/pgtest"
)

// asMain makes the test binary run as fsmgen itself, for the tests that
// run it as another user.
const asMain = "FSMGEN_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMain) == "1" {
		os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	pgtest.Main(m)
}

// machine is a never-ending two-state machine named name at a version.
func machine(name string, version int) string {
	return fmt.Sprintf(`machine %s {
    version %d

    initial CLOSED
    state   OPEN

    event Open
    event Close

    CLOSED -> OPEN   on Open
    OPEN   -> CLOSED on Close
}
`, name, version)
}

// tree returns every file under root with its content, and every
// directory with a trailing slash and no content.
func tree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			out[rel+"/"] = ""
			return nil
		}
		b, err := os.ReadFile(p)
		out[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func mkdir(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// generateOK runs fsmgen generate and fails the test unless it succeeds.
func generateOK(t *testing.T, files ...string) {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run(append([]string{"generate"}, files...), nil, &out, &errb); code != exitOK {
		t.Fatalf("generate %v: exit %d: %s", files, code, errb.String())
	}
}

// readOnly makes dir read-only until the test ends.
func readOnly(t *testing.T, dir string) {
	t.Helper()
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
}

// generateUnprivileged runs fsmgen generate with files as a user that the
// permissions of the tree apply to: in-process when the test is not run by
// root, which may write anywhere, else as a process of its own as nobody
// (uid and gid 65534), for which every directory under root but the
// read-only ones is made writable.
func generateUnprivileged(t *testing.T, root string, files ...string) (code int, stderr string) {
	t.Helper()
	args := append([]string{"generate"}, files...)
	if os.Geteuid() != 0 {
		var out, errb bytes.Buffer
		code := run(args, nil, &out, &errb)
		return code, errb.String()
	}
	// nobody must reach root and run a copy of this binary.
	for d := root; d != filepath.Dir(d); d = filepath.Dir(d) {
		info, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm()&0o005 != 0o005 {
			if err := os.Chmod(d, info.Mode().Perm()|0o005); err != nil {
				t.Fatal(err)
			}
		}
	}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil || info.Mode().Perm() == 0o555 {
			return err
		}
		return os.Chmod(p, 0o777)
	})
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "fsmgen")
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	for d := filepath.Dir(bin); d != filepath.Dir(d); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil && d == filepath.Dir(bin) {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), asMain+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, errb.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), errb.String()
	}
	t.Fatalf("run fsmgen as nobody: %v: %s", err, errb.String())
	return 0, ""
}

// TestGenerateChangesNothingWhenADirectoryIsReadOnly checks that a run
// whose writes cannot all be made makes none: two inputs in two
// directories, the package directory of the second read-only; the first's
// package is not updated either, no temporary file is left, and the error
// names the path that could not be written. The same holds for a stale
// package that cannot be removed.
func TestGenerateChangesNothingWhenADirectoryIsReadOnly(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	mkdir(t, filepath.Join(root, "one"), filepath.Join(root, "two"))
	a := write(t, filepath.Join(root, "one"), "a.fsm", machine("A", 1))
	b := write(t, filepath.Join(root, "two"), "b.fsm", machine("B", 1))
	generateOK(t, a, b)

	write(t, filepath.Join(root, "one"), "a.fsm", machine("A", 2))
	write(t, filepath.Join(root, "two"), "b.fsm", machine("B", 2))
	readOnly(t, filepath.Join(root, "two", "b"))
	before := tree(t, root)
	code, stderr := generateUnprivileged(t, root, a, b)
	if code != exitInput {
		t.Errorf("exit %d, want 1", code)
	}
	want := "fsmgen: write " + filepath.Join(root, "two", "b", "README.md") + ": permission denied\n"
	if diff := cmp.Diff(want, stderr); diff != "" {
		t.Errorf("stderr (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, tree(t, root)); diff != "" {
		t.Errorf("the tree changed (-before +after):\n%s", diff)
	}

	// A renamed machine whose old package cannot be removed: the new
	// package is not written either.
	write(t, filepath.Join(root, "one"), "a.fsm", machine("Renamed", 1))
	readOnly(t, filepath.Join(root, "one", "a"))
	before = tree(t, root)
	code, stderr = generateUnprivileged(t, root, a)
	if code != exitInput {
		t.Errorf("exit %d, want 1", code)
	}
	want = "fsmgen: remove " + filepath.Join(root, "one", "a", "README.md") + ": permission denied\n"
	if diff := cmp.Diff(want, stderr); diff != "" {
		t.Errorf("stderr (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, tree(t, root)); diff != "" {
		t.Errorf("the tree changed (-before +after):\n%s", diff)
	}
}

// TestGenerateChangesNothingWhenAPathIsBlocked checks the same with a
// package directory that cannot be created because a file has its name,
// which stops root too.
func TestGenerateChangesNothingWhenAPathIsBlocked(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	a := write(t, root, "a.fsm", machine("A", 1))
	b := write(t, root, "b.fsm", machine("B", 1))
	generateOK(t, a)
	write(t, root, "a.fsm", machine("A", 2))
	write(t, root, "b", "not a directory\n")
	before := tree(t, root)

	var out, errb bytes.Buffer
	if code := run([]string{"generate", a, b}, nil, &out, &errb); code != exitInput {
		t.Errorf("exit %d, want 1", code)
	}
	want := "fsmgen: write " + filepath.Join(root, "b", "README.md") + ": not a directory\n"
	if diff := cmp.Diff(want, errb.String()); diff != "" {
		t.Errorf("stderr (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, tree(t, root)); diff != "" {
		t.Errorf("the tree changed (-before +after):\n%s", diff)
	}
}

// TestApplyRollsBackAFailedCommit fails the commit after some files were
// renamed into place and a stale file removed, and checks that the tree is
// put back as it was: old contents, the removed file, no new directory,
// no temporary file.
func TestApplyRollsBackAFailedCommit(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	in := write(t, root, "a.fsm", machine("A", 1))
	generateOK(t, in)
	mkdir(t, filepath.Join(root, "old"))
	write(t, filepath.Join(root, "old"), "fsm.go", "// Code generated by fsmgen from a.fsm. DO NOT EDIT.\n\npackage old\n")
	if err := os.Chmod(filepath.Join(root, "a", "fsm.go"), 0o600); err != nil {
		t.Fatal(err)
	}
	before := tree(t, root)

	outs := []output{
		{path: filepath.Join(root, "a", "README.md"), content: []byte("new page\n")},
		{path: filepath.Join(root, "a", "fsm.go"), content: []byte("package a\n")},
		{path: filepath.Join(root, "b", "c", "fsm.go"), content: []byte("package c\n")},
	}
	plan, err := planWrites([]string{in}, outs)
	if err != nil {
		t.Fatal(err)
	}
	// The outputs a run from a.fsm no longer writes are stale too.
	var steps []string
	for _, o := range outs {
		steps = append(steps, "write "+o.path)
	}
	var wantStale []string
	for _, f := range []string{"a/diagram.dot", "a/diagram.mmd", "a/fsm_test.go", "a/runs.go", "old/fsm.go"} {
		wantStale = append(wantStale, filepath.Join(root, filepath.FromSlash(f)))
		steps = append(steps, "remove "+wantStale[len(wantStale)-1])
	}
	if diff := cmp.Diff(wantStale, plan.removes); diff != "" {
		t.Fatalf("stale files (-want +got):\n%s", diff)
	}
	for fail, step := range steps {
		n := 0
		err := applyWith(plan, func(path string) error {
			if n == fail {
				return errors.New("disk on fire")
			}
			n++
			return nil
		})
		if want := step + ": disk on fire"; err == nil || err.Error() != want {
			t.Errorf("failing step %d: error %v, want %q", fail, err, want)
		}
		if diff := cmp.Diff(before, tree(t, root)); diff != "" {
			t.Errorf("failing step %d: the tree changed (-before +after):\n%s", fail, diff)
		}
	}
	info, err := os.Stat(filepath.Join(root, "a", "fsm.go"))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("fsm.go after the rollbacks: %v, %v; want mode 0600 kept", info, err)
	}
}

// TestGenerateRemovesStaleOutputs renames a machine and checks that its
// old package goes, all but what fsmgen did not generate from this .fsm
// file: a hand-written file, a file generated from another .fsm, files in
// directories deeper down or ignored by the go command; the directory is
// removed once nothing is left in it.
func TestGenerateRemovesStaleOutputs(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	door := write(t, root, "door.fsm", machine("Door", 1))
	other := write(t, root, "other.fsm", machine("Other", 1))
	generateOK(t, door, other)
	generated, err := os.ReadFile(filepath.Join(root, "door", "fsm.go"))
	if err != nil {
		t.Fatal(err)
	}
	mkdir(t, filepath.Join(root, "door", "deeper"), filepath.Join(root, "testdata"), filepath.Join(root, ".cache"))
	kept := map[string]string{
		"door/guards.go":     "package door\n\n// Guards are written by hand.\n",
		"door/notes.md":      "Code generated by fsmgen from door.fsm. DO NOT EDIT.\n", // not a comment
		"door/extra.go":      "// Code generated by fsmgen from other.fsm. DO NOT EDIT.\n\npackage door\n",
		"door/stringer.go":   "// Code generated by stringer from door.fsm. DO NOT EDIT.\n\npackage door\n",
		"door/deeper/fsm.go": string(generated),
		"testdata/fsm.go":    string(generated),
		".cache/fsm.go":      string(generated),
	}
	for p, c := range kept {
		write(t, root, filepath.FromSlash(p), c)
	}
	before := tree(t, root)

	write(t, root, "door.fsm", machine("Gate", 1))
	generateOK(t, door)
	after := tree(t, root)
	var removed, added []string
	for p := range before {
		if _, ok := after[p]; !ok {
			removed = append(removed, p)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			added = append(added, p)
		}
	}
	slices.Sort(removed)
	slices.Sort(added)
	gen := []string{"README.md", "diagram.dot", "diagram.mmd", "fsm.go", "fsm_test.go", "runs.go"}
	var wantRemoved, wantAdded []string
	for _, f := range gen {
		wantRemoved = append(wantRemoved, "door/"+f)
		wantAdded = append(wantAdded, "gate/"+f)
	}
	wantAdded = append([]string{"gate/"}, wantAdded...)
	if diff := cmp.Diff(wantRemoved, removed); diff != "" {
		t.Errorf("removed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantAdded, added); diff != "" {
		t.Errorf("added (-want +got):\n%s", diff)
	}
	for p, c := range kept {
		if after[p] != c {
			t.Errorf("%s was changed or removed", p)
		}
	}
	for _, f := range gen {
		if before["other/"+f] != after["other/"+f] {
			t.Errorf("other/%s changed", f)
		}
	}

	// Renamed again: gate/ held only generated files and goes entirely.
	write(t, root, "door.fsm", machine("Portal", 1))
	generateOK(t, door)
	after = tree(t, root)
	for p := range after {
		if strings.HasPrefix(p, "gate/") {
			t.Errorf("%s left behind", p)
		}
	}
	if _, ok := after["portal/fsm.go"]; !ok {
		t.Error("portal/fsm.go not generated")
	}
}

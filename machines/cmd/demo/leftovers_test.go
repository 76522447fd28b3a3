package main

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// buildDemo builds the demo and returns the binary's path.
func buildDemo(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "demo")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build demo: %v\n%s", err, out)
	}
	return bin
}

// demoCommand is the demo binary without a database, with a temporary
// directory of its own, which it returns.
func demoCommand(t *testing.T, bin string, args ...string) (*exec.Cmd, string) {
	t.Helper()
	// Not under t.TempDir, whose parent only its owner may enter: as root,
	// the cluster's server runs as the postgres user, in the directory.
	tmp, err := os.MkdirTemp("", "demo-tmpdir-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	if err := os.Chmod(tmp, 0o1777); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != envDatabaseURL && k != "TMPDIR" && !strings.HasPrefix(k, "PG") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "TMPDIR="+tmp)
	return cmd, tmp
}

// leftovers lists what is in dir.
func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// demo | head -3: the reader closes the pipe after three lines. The demo
// stops at its next write, and stops and removes its throwaway cluster and
// its runs' directory; it used to die of SIGPIPE and leave both.
func TestDemoPipedIntoAnEarlyExitLeavesNothing(t *testing.T) {
	t.Parallel()
	cmd, tmp := demoCommand(t, buildDemo(t))
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = w, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	sc := bufio.NewScanner(r)
	var head []string
	for len(head) < 3 && sc.Scan() {
		head = append(head, sc.Text())
	}
	r.Close()
	err = cmd.Wait()
	if len(head) != 3 || !strings.HasPrefix(head[1], "The cluster lives in ") {
		t.Errorf("the first lines: %q", head)
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitFailure || !strings.HasPrefix(stderr.String(), "demo: stopped: write the output: ") || !strings.Contains(stderr.String(), "broken pipe") {
		t.Errorf("demo | head -3: %v, stderr %q; want exit status 1 and a message on the closed output", err, stderr.String())
	}
	if left := leftovers(t, tmp); len(left) > 0 {
		t.Errorf("the demo left %q in its temporary directory", left)
	}
}

// A whole run without a database leaves nothing in the temporary
// directory (no cluster, no demo-runs-*), names no fsmctl command that
// reads the removed database or directory, and says how to keep them.
func TestDemoWithoutDatabaseLeavesNothingAndNamesNoDeadCommand(t *testing.T) {
	t.Parallel()
	cmd, tmp := demoCommand(t, buildDemo(t), "-seed", "11")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("demo: %v\nstderr:\n%s\nstdout:\n%s", err, stderr.String(), stdout.String())
	}
	out := stdout.String()
	for _, dead := range []string{"fsmctl chains list", "fsmctl runs list", "--runs-dir", "--from-db"} {
		if strings.Contains(out, dead) {
			t.Errorf("the demo names %q, which cannot work once its cluster is removed", dead)
		}
	}
	for _, want := range []string{
		"The runs' directories are removed at the end with the throwaway cluster: demo -runs-dir DIR keeps them for fsmctl export.\n",
		"\nThe runs, instances and evidence above were in the throwaway cluster, which is removed now:\n" +
			"the fsmctl commands that read them need a database that keeps them. Run the demo on one to follow them up:\n" +
			"  DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable make demo\n" +
			"\nStopped the throwaway cluster and removed its directory.\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the demo's output lacks %q", want)
		}
	}
	if left := leftovers(t, tmp); len(left) > 0 {
		t.Errorf("the demo left %q in its temporary directory", left)
	}
}

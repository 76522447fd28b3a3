package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestWritesRefuseLinksAndDevices points fmt -w, export -o and sql -o at a
// symbolic link and at a FIFO: each is refused and left as it was, and a
// file rewritten keeps its mode.
func TestWritesRefuseLinksAndDevices(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ugly := strings.Replace(good, "    initial", "  initial", 1)
	real := write(t, dir, "real.fsm", ugly)
	link := filepath.Join(dir, "link.fsm")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.json")
	if err := os.Symlink(real, out); err != nil {
		t.Fatal(err)
	}
	// A FIFO stands for a device: a test must never risk replacing a
	// real one, such as /dev/null, of the machine it runs on.
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	type result struct {
		Code   int
		Stderr string
	}
	for _, tc := range []struct {
		args []string
		want result
	}{
		{[]string{"fmt", "-w", link}, result{exitInput, "fsmgen fmt: write " + link + ": not a regular file\n"}},
		{[]string{"export", "-format", "xstate", "-o", out, real}, result{exitInput, "fsmgen export: write " + out + ": not a regular file\n"}},
		{[]string{"export", "-format", "xstate", "-o", fifo, real}, result{exitInput, "fsmgen export: write " + fifo + ": not a regular file\n"}},
		{[]string{"sql", "-table", "doors", "-column", "state", "-o", fifo, real}, result{exitInput, "fsmgen sql: write " + fifo + ": not a regular file\n"}},
	} {
		code, _, stderr := runCmd(t, "", "", tc.args...)
		if diff := cmp.Diff(tc.want, result{code, stderr}); diff != "" {
			t.Errorf("fsmgen %s (-want +got):\n%s", strings.Join(tc.args, " "), diff)
		}
	}
	for _, l := range []string{link, out} {
		if info, err := os.Lstat(l); err != nil || info.Mode()&fs.ModeSymlink == 0 {
			t.Errorf("%s was replaced: %v %v", l, info, err)
		}
	}
	if info, err := os.Lstat(fifo); err != nil || info.Mode()&fs.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced: %v %v", info, err)
	}
	if b, _ := os.ReadFile(real); string(b) != ugly {
		t.Errorf("the link's target was rewritten")
	}
	// A regular file keeps its mode.
	if err := os.Chmod(real, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCmd(t, "", "", "fmt", "-w", real); code != exitOK {
		t.Fatalf("fmt -w: exit %d: %s", code, stderr)
	}
	info, err := os.Stat(real)
	if b, _ := os.ReadFile(real); err != nil || info.Mode().Perm() != 0o600 || string(b) == ugly {
		t.Errorf("after fmt -w: mode %v, formatted %v; want -rw------- and formatted", info.Mode().Perm(), string(b) != ugly)
	}
}

// TestReadsRefuseDevicesAndFIFOs points check at /dev/zero (through a
// link named .fsm) and at a FIFO
// no one writes to: each is refused at once, not read until memory runs
// out or a writer comes.
func TestReadsRefuseDevicesAndFIFOs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo, link := filepath.Join(dir, "door.fsm"), filepath.Join(dir, "link.fsm")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(fifo, link); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{fifo, link} {
		code, _, stderr := runCmd(t, "", "", "check", name)
		if want := "fsmgen: read " + name + ": not a regular file\n"; code != exitInput || stderr != want {
			t.Errorf("check %s: exit %d, stderr %q; want exit 1, %q", name, code, stderr, want)
		}
	}
	code, _, stderr := runCmd(t, "", strings.Repeat(" ", 4<<20+1), "fmt")
	if want := "fsmgen fmt: read <standard input>: file too large: more than 4194304 bytes\n"; code != exitInput || stderr != want {
		t.Errorf("fmt of 4 MiB and a byte on standard input: exit %d, stderr %q; want %q", code, stderr, want)
	}
}

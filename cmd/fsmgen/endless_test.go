package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A machine without final states, with a sink next to it in another
// machine: both are legal, the sink draws a warning.
const endless = `machine Light {
    initial OFF
    state   ON
    event Toggle
    OFF -> ON  on Toggle
    ON  -> OFF on Toggle
}

machine Ticket {
    initial OPEN
    state   ARCHIVED wait
    final   CLOSED succeeded
    event Close
    event Archive
    OPEN -> CLOSED   on Close
    OPEN -> ARCHIVED on Archive
}
`

// TestMachinesThatNeverEnd checks that a machine without final states
// checks and generates, and that a state from which no final state can be
// reached is a warning: printed by check and generate alike, with exit
// code 0, and no obstacle to writing the packages.
func TestMachinesThatNeverEnd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := write(t, dir, "endless.fsm", endless)
	wantStderr := p + ":11:13: warning: no final state can be reached from state ARCHIVED; a run that gets there never ends\n"
	for _, cmd := range []string{"check", "generate"} {
		code, stdout, stderr := runCmd(t, dir, "", cmd, "endless.fsm")
		if code != exitOK || stdout != "" {
			t.Errorf("%s: exit %d, stdout %q; want 0 and nothing", cmd, code, stdout)
		}
		if diff := cmp.Diff(wantStderr, stderr); diff != "" {
			t.Errorf("%s: stderr (-want +got):\n%s", cmd, diff)
		}
	}
	for _, pkg := range []string{"light", "ticket"} {
		if _, err := os.Stat(filepath.Join(dir, pkg, "fsm.go")); err != nil {
			t.Errorf("package %s not generated: %v", pkg, err)
		}
	}
}

// TestDeadEndWithoutFinalStates checks the warning about a state without a
// transition out in a machine without final states, as check prints it
// (docs/language.md shows it).
func TestDeadEndWithoutFinalStates(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := write(t, dir, "light.fsm", `machine Light {
    initial OFF
    state   ON
    state   BROKEN
    event Toggle
    event Fail
    OFF -> ON     on Toggle
    ON  -> OFF    on Toggle
    ON  -> BROKEN on Fail
}
`)
	want := p + ":4:13: warning: state BROKEN has no transition out, and machine Light has no final state: a run that gets there is stuck for good; declare BROKEN final if runs end there\n"
	code, stdout, stderr := runCmd(t, dir, "", "check", "light.fsm")
	if code != exitOK || stdout != "" {
		t.Errorf("exit %d, stdout %q; want 0 and nothing", code, stdout)
	}
	if diff := cmp.Diff(want, stderr); diff != "" {
		t.Errorf("stderr (-want +got):\n%s", diff)
	}
}

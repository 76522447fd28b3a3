package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/internal/version"
)

// fsmgen -version prints the version generated code names in its header,
// which fsmctl version prints too.
func TestVersion(t *testing.T) {
	t.Parallel()
	type out struct {
		Code           int
		Stdout, Stderr string
	}
	want := out{Code: exitOK, Stdout: "fsmgen " + version.Version + "\n"}
	for _, arg := range []string{"-version", "--version", "version"} {
		code, stdout, stderr := runCmd(t, "", "", arg)
		if diff := cmp.Diff(want, out{code, stdout, stderr}); diff != "" {
			t.Errorf("fsmgen %s (-want +got):\n%s", arg, diff)
		}
	}
}

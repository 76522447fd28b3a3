package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/internal/version"
)

// fsmctl version prints the version fsmgen -version prints and generated
// code names.
func TestVersion(t *testing.T) {
	t.Parallel()
	if diff := cmp.Diff(result{Code: exitOK, Stdout: "fsmctl " + version.Version + "\n"}, fsmctl(t, nil, "version")); diff != "" {
		t.Errorf("fsmctl version (-want +got):\n%s", diff)
	}
	got := fsmctl(t, nil, "version", "extra")
	want := result{Code: exitUsage, Stderr: "fsmctl version: unexpected arguments [\"extra\"]\nusage: fsmctl version\nRun 'fsmctl help version' for details.\n"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("fsmctl version extra (-want +got):\n%s", diff)
	}
}

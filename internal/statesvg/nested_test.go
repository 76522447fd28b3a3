package statesvg_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/internal/statesvg"
	"github.com/fsmgen/fsmgen/runtime"
)

// player is the nested Player machine's definition, as package
// defdiagram's tests keep it.
func player(t *testing.T) runtime.Definition {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "defdiagram", "testdata", "player.json"))
	if err != nil {
		t.Fatal(err)
	}
	var def runtime.Definition
	if err := json.Unmarshal(data, &def); err != nil {
		t.Fatal(err)
	}
	return def
}

// TestRenderNested draws a nested machine: a frame per composite around
// its children, history circles, and each row once from the state it was
// written on; the composites holding the current state are active.
func TestRenderNested(t *testing.T) {
	t.Parallel()
	def := player(t)
	got := statesvg.Render(def, statesvg.Marks{Current: "PAUSED"})
	wellFormed(t, got)
	if again := statesvg.Render(def, statesvg.Marks{Current: "PAUSED"}); !bytes.Equal(got, again) {
		t.Fatal("two renderings of the same definition and marks differ")
	}
	path := filepath.Join("testdata", "nested.svg")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("Render (-want +got):\n%s", diff)
	}

	var edges []string
	for _, m := range regexp.MustCompile(`data-from="(\w+)" data-to="(\w+)"`).FindAllStringSubmatch(string(got), -1) {
		edges = append(edges, m[1]+"->"+m[2])
	}
	wantEdges := []string{"STOPPED->ACTIVE", "STOPPED->RESUME", "STOPPED->LAST", "PLAYING->PAUSED", "PLAYING->PLAYING",
		"PLAYING->ENDED", "PLAYING->BROKEN", "ACTIVE->STOPPED", "ACTIVE->OFF", "PAUSED->PLAYING", "PAUSED->STOPPED"}
	if diff := cmp.Diff(wantEdges, edges); diff != "" {
		t.Errorf("edges (-want +got):\n%s", diff)
	}
	if !bytes.Contains(got, []byte(`<g class="composite active" data-state="ACTIVE">`)) {
		t.Error("ACTIVE, which holds the current state, is not drawn active")
	}
	for _, h := range []string{`<g class="history" data-state="RESUME">`, `<g class="history" data-state="LAST">`} {
		if !bytes.Contains(got, []byte(h)) {
			t.Errorf("no %s", h)
		}
	}
}

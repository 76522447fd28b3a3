package specs_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/fsmgen/fsmgen/machines/specs/internal/spectrace"
)

// TestModelTraces replays each machine's traces on the reference model of
// its nested .fsm file: the traces agree with the language's semantics.
func TestModelTraces(t *testing.T) {
	t.Parallel()
	for _, name := range machines {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			m := load(t, filepath.Join(name, name+".fsm"))
			traces, err := spectrace.ParseFile(filepath.Join(name, "trace.txt"))
			if err != nil {
				t.Fatal(err)
			}
			for _, tr := range traces {
				guards := map[string]bool{}
				for _, err := range spectrace.Replay(context.Background(), m, tr, spectrace.NewModel(m).Subject(guards), guards) {
					t.Error(err)
				}
			}
		})
	}
}

package gen

import (
	"errors"
	"strings"
	"testing"

	"github.com/fsmgen/fsmgen/dsl"
)

// TestGenerateInternalError hands Generate a machine the checker could
// never build (a nil row), on which rendering panics: Generate must return
// an error matching ErrInternal that names the machine, and no file.
func TestGenerateInternalError(t *testing.T) {
	t.Parallel()
	a := &dsl.State{Name: "A", GoName: "A", Initial: true}
	m := &dsl.Machine{Name: "Broken", Type: "broken", Version: 1, Package: "broken",
		States: []*dsl.State{a}, Initial: a, Transitions: []*dsl.Transition{nil}}
	files, err := Generate(&dsl.Spec{Filename: "broken.fsm", Machines: []*dsl.Machine{m}})
	if !errors.Is(err, ErrInternal) {
		t.Fatalf("Generate of a nil row: %v, want ErrInternal", err)
	}
	if files != nil {
		t.Errorf("Generate returned %d files with its error", len(files))
	}
	if want := "machine Broken"; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q does not start with %q", err, want)
	}
}

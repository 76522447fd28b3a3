package gen_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/dsl"
	"github.com/fsmgen/fsmgen/gen"
)

// TestGenerateEveryCheckedInput generates every .fsm file under the
// testdata of gen and dsl that the checker accepts: whatever checks must
// generate, without an error and without a panic.
func TestGenerateEveryCheckedInput(t *testing.T) {
	t.Parallel()
	var files []string
	for _, root := range []string{"testdata", filepath.Join("..", "dsl", "testdata")} {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".fsm") {
				files = append(files, p)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	checked := 0
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		spec, diags := dsl.Load(file, src)
		if spec == nil {
			t.Logf("%s does not check, skipped:\n%v", file, diags.Err())
			continue
		}
		checked++
		t.Run(filepath.ToSlash(file), func(t *testing.T) {
			t.Parallel()
			out, err := gen.Generate(spec)
			if errors.Is(err, gen.ErrNotGenerated) {
				t.Skip(err)
			}
			if err != nil {
				t.Fatalf("Generate(%s): %v", file, err)
			}
			if len(out) == 0 {
				t.Fatalf("Generate(%s) returned no file", file)
			}
		})
	}
	// The golden inputs all check: fewer means the walk missed them.
	if want := len(inputs(t)); checked < want {
		t.Fatalf("%d of %d inputs checked, want at least the %d golden ones", checked, len(files), want)
	}
}

// TestGenerateParallel: Generate writes every file of a machine with
// parallel states.
func TestGenerateParallel(t *testing.T) {
	t.Parallel()
	file := filepath.Join("..", "dsl", "testdata", "parallel", "podlifecycle.fsm")
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	spec, diags := dsl.Load(file, src)
	if spec == nil {
		t.Fatal(diags.Err())
	}
	out, err := gen.Generate(spec)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range out {
		paths = append(paths, f.Path)
	}
	if diff := cmp.Diff([]string{"podlifecycle/README.md", "podlifecycle/diagram.dot", "podlifecycle/diagram.mmd", "podlifecycle/fsm.go", "podlifecycle/fsm_test.go", "podlifecycle/runs.go"}, paths); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
}

// TestGenerateRefusesInGuard: an In(S) guard, here of a state inside the
// row's composite source in a machine without parallel states, checks but
// is not generated yet.
func TestGenerateRefusesInGuard(t *testing.T) {
	t.Parallel()
	src := `machine Door {
    initial Open {
        initial Ajar wait
        state   Wide wait
    }
    final Shut succeeded
    event Push
    event Close
    Ajar -> Wide on Push
    Open -> Shut on Close when In(Wide)
    Open -> Open on Close
}
`
	spec, diags := dsl.Load("door.fsm", []byte(src))
	if spec == nil || len(diags) > 0 {
		t.Fatalf("door.fsm: %v", diags)
	}
	out, err := gen.Generate(spec)
	if want := "machine Door: In() guards are not generated yet"; err == nil || err.Error() != want || !errors.Is(err, gen.ErrNotGenerated) {
		t.Errorf("Generate = %v, want %q matching ErrNotGenerated", err, want)
	}
	if out != nil {
		t.Errorf("Generate returned %d files with its error", len(out))
	}
}

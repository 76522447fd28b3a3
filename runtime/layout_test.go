package runtime_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestRuntimeImportsNoMachine holds runtime/ to the layout's rule: the
// runtime, its engines (runtime/engine, runtime/linearchain,
// runtime/stepengine) included, imports no package under machines/, which
// holds the workflows built on them.
func TestRuntimeImportsNoMachine(t *testing.T) {
	t.Parallel()
	const module = "github.com/fsmgen/fsmgen"
	out, err := exec.Command("go", "list", "-deps", "-test=false",
		"-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", module+"/runtime/...").Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go list -deps: %v\n%s", err, stderr)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if !strings.HasPrefix(f[0], module+"/runtime") {
			continue
		}
		for _, dep := range f[1:] {
			if dep == module+"/machines" || strings.HasPrefix(dep, module+"/machines/") {
				t.Errorf("%s imports %s: runtime/ must not depend on machines/ (see DESIGN.md, Layout)", f[0], dep)
			}
		}
	}
}

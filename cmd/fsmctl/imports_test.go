package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// module is the import path of the module fsmctl is in.
const module = "github.com/fsmgen/fsmgen"

// TestImportsNoMachine holds fsmctl to the layout's rule: the operator CLI
// works on any machine's runs through runtime/ and db/, and its binary links
// no package under machines/ (its tests may: they make runs to operate on).
func TestImportsNoMachine(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "-test=false",
		"-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", module+"/cmd/fsmctl").Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go list -deps: %v\n%s", err, stderr)
	}
	imports := map[string][]string{} // package -> what it imports
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		imports[f[0]] = f[1:]
	}
	if _, ok := imports[module+"/runtime/store"]; !ok {
		t.Fatalf("go list -deps does not list %s/runtime/store, which fsmctl reads runs with:\n%s", module, out)
	}
	for pkg, deps := range imports {
		if !strings.HasPrefix(pkg, module+"/") || strings.HasPrefix(pkg, module+"/machines") {
			continue
		}
		for _, dep := range deps {
			if dep == module+"/machines" || strings.HasPrefix(dep, module+"/machines/") {
				t.Errorf("%s imports %s: fsmctl must not depend on machines/ (see DESIGN.md, Layout)", pkg, dep)
			}
		}
	}
	var mine []string
	for pkg := range imports {
		if strings.HasPrefix(pkg, module+"/") {
			mine = append(mine, pkg)
		}
	}
	slices.Sort(mine)
	t.Logf("fsmctl's packages in the module: %s", strings.Join(mine, ", "))
}

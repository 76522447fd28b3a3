package gen_test

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGoldenPackages builds every golden package in a module of its own,
// with testdata/money standing in for example.com/money, vets it and runs
// its generated tests beside the hand-written ones of
// testdata/behaviour/<input>/<package>/, which assert what each feature of
// the language does without reading the generated table.
func TestGoldenPackages(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	money, err := filepath.Abs(filepath.Join("testdata", "money"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gomod := "module fsmgen.test/goldens\n\ngo 1.26\n\n" +
		"require (\n\tgithub.com/fsmgen/fsmgen v0.0.0\n\texample.com/money v0.0.0\n)\n\n" +
		"replace github.com/fsmgen/fsmgen => " + root + "\n\n" +
		"replace example.com/money => " + money + "\n"
	write(t, filepath.Join(dir, "go.mod"), []byte(gomod))
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "go.sum"), sum)

	behaviour := 0
	for _, from := range []string{filepath.Join("testdata", "golden"), filepath.Join("testdata", "behaviour")} {
		err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") {
				return err
			}
			rel, err := filepath.Rel(from, p)
			if err != nil {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if strings.Contains(from, "behaviour") {
				behaviour++
				if _, err := os.Stat(filepath.Join("testdata", "golden", filepath.Dir(rel))); err != nil {
					t.Errorf("%s has no golden package beside it: %v", p, err)
				}
			}
			write(t, filepath.Join(dir, rel), b)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if behaviour == 0 {
		t.Fatal("no hand-written test under testdata/behaviour")
	}
	for _, args := range [][]string{{"vet", "./..."}, {"test", "-count=1", "./..."}} {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("go %s in the golden module: %v\n%s", strings.Join(args, " "), err, out.String())
		}
		t.Logf("go %s:\n%s", strings.Join(args, " "), out.String())
	}
}

func write(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

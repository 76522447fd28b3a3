package consumer_test

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsmgen/fsmgen/runtime/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// proxies returns the GOPROXY of the scratch module's go commands: the
// proxies of the environment, each falling back on any error to the next,
// and last off. The module cache of this repository's own build holds most
// of what the scratch module needs; what it lacks (go.mod files of older
// dependencies) comes from a proxy; and github.com/fsmgen/fsmgen itself,
// which no proxy may know (or one may refuse), resolves through off to its
// replacement, the checkout.
func proxies(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOPROXY").Output()
	if err != nil {
		t.Fatalf("go env GOPROXY: %v", err)
	}
	var list []string
	for _, p := range strings.FieldsFunc(strings.TrimSpace(string(out)), func(r rune) bool { return r == ',' || r == '|' }) {
		if p != "direct" && p != "off" {
			list = append(list, p)
		}
	}
	return strings.Join(append(list, "off"), "|")
}

// goIn returns a function that runs the go command with args in dir with
// the environment env, fails t when it fails, and returns its output.
func goIn(t *testing.T, dir string, env []string) func(args ...string) string {
	return func(args ...string) string {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out.String())
		}
		return out.String()
	}
}

// TestUsedFromAnotherModule adds fsmgen as a tool with go get -tool, as a
// user does once it is published, in a new module outside the repository.
//
// The module's go.sum starts as a copy of the checkout's, its GOPROXY is
// what proxies returns, and -mod=mod adds the requirements the build
// needs: what go mod tidy does, without fetching the test dependencies of
// every dependency.
func TestUsedFromAnotherModule(t *testing.T) {
	t.Parallel()
	checkout, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/doorsvc\n\ngo 1.26\n\nreplace github.com/fsmgen/fsmgen => "+checkout+"\n")
	sum, err := os.ReadFile(filepath.Join(checkout, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	write("go.sum", string(sum))

	env := append(os.Environ(),
		"GOFLAGS=-mod=mod", "GOPROXY="+proxies(t), "GOWORK=off",
		"DOORSVC_DATABASE_URL="+pgtest.NewDatabase(t),
	)
	gocmd := goIn(t, dir, env)

	gocmd("get", "-tool", "github.com/fsmgen/fsmgen/cmd/fsmgen")
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\ntool github.com/fsmgen/fsmgen/cmd/fsmgen\n", "github.com/fsmgen/fsmgen v"} {
		if !strings.Contains(string(mod), want) {
			t.Fatalf("go.mod after go get -tool lacks %q:\n%s", want, mod)
		}
	}

	// The service: a machine that never ends, the line that generates it,
	// and a test that drives it on the store.
	err = filepath.WalkDir(filepath.Join("testdata", "doorsvc"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(filepath.Join("testdata", "doorsvc"), p)
		write(filepath.ToSlash(rel), string(b))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	gocmd("generate", "./...")
	for _, f := range []string{"fsm.go", "fsm_test.go", "diagram.mmd", "diagram.dot", "README.md"} {
		if _, err := os.Stat(filepath.Join(dir, "doors", "door", f)); err != nil {
			t.Errorf("go generate did not write doors/door/%s: %v", f, err)
		}
	}
	gocmd("build", "./...")
	gocmd("vet", "./...")
	out := gocmd("test", "-count=1", "./...")
	for _, want := range []string{"ok  \texample.com/doorsvc/doors\t", "ok  \texample.com/doorsvc/doors/door\t"} {
		if !strings.Contains(out, want) {
			t.Errorf("go test output lacks %q:\n%s", want, out)
		}
	}
}

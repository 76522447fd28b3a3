package gen_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// cli holds the fsmgen binary the CLI benchmark and test exec: built once
// per test binary, from this module's fsmgen (the repository's, through the
// replace in go.mod), into a directory TestMain removes.
var cli struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if cli.dir != "" {
		os.RemoveAll(cli.dir)
	}
	os.Exit(code)
}

func fsmgenBinary(tb testing.TB) string {
	tb.Helper()
	cli.once.Do(func() {
		if cli.dir, cli.err = os.MkdirTemp("", "fsmgen-cli-bench-"); cli.err != nil {
			return
		}
		cli.path = filepath.Join(cli.dir, "fsmgen")
		out, err := exec.Command("go", "build", "-o", cli.path, "github.com/fsmgen/fsmgen/cmd/fsmgen").CombinedOutput()
		if err != nil {
			cli.err = fmt.Errorf("go build fsmgen: %w\n%s", err, out)
		}
	})
	if cli.err != nil {
		tb.Fatal(cli.err)
	}
	return cli.path
}

// generateLarge runs `fsmgen generate large.fsm` in dir, which holds
// largeSource as large.fsm, and fails on a non-zero exit or any output.
func generateLarge(tb testing.TB, bin, dir string) {
	tb.Helper()
	cmd := exec.Command(bin, "generate", "large.fsm")
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		tb.Fatalf("fsmgen generate large.fsm: %v\n%s", err, out.Bytes())
	}
	if out.Len() > 0 {
		tb.Fatalf("fsmgen generate large.fsm printed:\n%s", out.Bytes())
	}
}

// TestCLIGeneratesLarge checks what BenchmarkGenerateLargeCLI times: the
// built fsmgen generates the large machine's package without a word.
func TestCLIGeneratesLarge(t *testing.T) {
	t.Parallel()
	bin := fsmgenBinary(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "large.fsm"), largeSource(), 0o644); err != nil {
		t.Fatal(err)
	}
	generateLarge(t, bin, dir)
	for _, f := range []string{"fsm.go", "README.md"} {
		if fi, err := os.Stat(filepath.Join(dir, "large", f)); err != nil || fi.Size() == 0 {
			t.Errorf("large/%s after fsmgen generate: %v (size %v)", f, err, fi)
		}
	}
}

// BenchmarkGenerateLargeCLI is what a user waits for: the fsmgen binary
// (built before the clock starts) exec'd as `fsmgen generate large.fsm` on
// the 200-state, 2,000-transition machine of largeSource, written to a
// file, into a directory where nothing was generated yet: process start,
// read, parse, check, generate and write every file.
//
//	go test -run '^$' -bench GenerateLargeCLI -count 10 ./gen/
func BenchmarkGenerateLargeCLI(b *testing.B) {
	bin := fsmgenBinary(b)
	src := largeSource()
	root := b.TempDir()
	b.SetBytes(int64(len(src)))
	i := 0
	for b.Loop() {
		b.StopTimer()
		i++
		dir := filepath.Join(root, fmt.Sprint(i))
		if err := os.Mkdir(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "large.fsm"), src, 0o644); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		generateLarge(b, bin, dir)
	}
}

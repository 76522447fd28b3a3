package docs

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsmgen/fsmgen/runtime/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// programPages are the pages whose blocks make a program that a test of
// this package runs, by the test that runs it. A block of such a page
// fenced with a file= word (```go file=main.go) is a file of the program;
// TestGoBlocks leaves it to that test.
var programPages = map[string]string{
	"docs/getting-started.md": "TestGettingStarted",
}

// fileOf returns the file name a block's info string gives it with a
// file= word, and whether it gives one.
func fileOf(info string) (string, bool) {
	words := strings.Fields(info)
	for i := 1; i < len(words); i++ {
		if name, ok := strings.CutPrefix(words[i], "file="); ok {
			return name, true
		}
	}
	return "", false
}

// script returns the shell script that follows a tutorial page and the
// outputs the page shows: every ```sh block's commands, in order, and
// every block with a file= word written to that file where the commands
// have gone by then; the ```text blocks are the outputs. Blocks fenced
// ```sh skip (a server to start, a variable to set) are the reader's
// own, and left out.
func script(bs []block) (string, []string, error) {
	var (
		b    strings.Builder
		outs []string
	)
	for _, bl := range bs {
		if name, ok := fileOf(bl.info); ok {
			if strings.Contains(bl.text, "\nFSMGEN_EOF\n") {
				return "", nil, fmt.Errorf("%s: the block holds the script's end-of-file marker", bl)
			}
			fmt.Fprintf(&b, "cat > %s <<'FSMGEN_EOF'\n%sFSMGEN_EOF\n", name, bl.text)
			continue
		}
		switch bl.info {
		case "sh":
			fmt.Fprintf(&b, "# %s\n%s", bl, bl.text)
		case "text":
			outs = append(outs, bl.text)
		}
	}
	return b.String(), outs, nil
}

// TestGettingStarted follows docs/getting-started.md from an empty
// directory: it runs the page's commands and writes its files, in the
// page's order, with bash, on a new empty database, and expects every
// output the page shows in what the commands print. The page's git clone
// of the repository is this checkout, linked; every other command runs as
// written, with this environment's go (and its GOPROXY: the page's
// recipe must not need the module proxy to know fsmgen).
func TestGettingStarted(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a new module and runs it: not in -short")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash to follow the page with")
	}
	t.Parallel()
	const page = "docs/getting-started.md"
	src, err := os.ReadFile(filepath.Join(root, page))
	if err != nil {
		t.Fatal(err)
	}
	bs, err := parseBlocks(page, src)
	if err != nil {
		t.Fatal(err)
	}
	body, outs, err := script(bs)
	if err != nil {
		t.Fatal(err)
	}
	checkout, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	const clone = "https://github.com/fsmgen/fsmgen"
	if !strings.Contains(body, "git clone "+clone+"\n") {
		t.Fatalf("%s does not clone %s", page, clone)
	}
	prelude := "set -euo pipefail\n" +
		"git() {\n" +
		"  if [ \"$*\" = \"clone " + clone + "\" ]; then ln -s \"$FSMGEN_CHECKOUT\" fsmgen; else command git \"$@\"; fi\n" +
		"}\n"
	dir := t.TempDir()
	cmd := exec.Command(bash, "-c", prelude+body)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"FSMGEN_CHECKOUT="+checkout,
		"DATABASE_URL="+pgtest.NewDatabase(t, pgtest.Empty()),
	)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("following %s: %v\n%s", page, err, out.String())
	}
	for _, want := range outs {
		if !strings.Contains(out.String(), want) {
			t.Errorf("%s shows an output that following it did not print:\n%s\nit printed:\n%s", page, want, out.String())
		}
	}
}

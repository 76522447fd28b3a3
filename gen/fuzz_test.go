package gen

import (
	"bytes"
	"errors"
	"fmt"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsmgen/fsmgen/dsl"
)

// FuzzGenerate runs parse, check and generate on arbitrary input: it must
// never panic, every diagnostic must carry a position, and whatever passes
// the checker must generate Go that parses and that gofmt leaves as it is
// (each Go file is formatted once, whole, by goFile.source: what that
// gives must be a fixed point of gofmt).
func FuzzGenerate(f *testing.F) {
	for _, pattern := range []string{"../machines/*/*.fsm", "testdata/*.fsm", "../dsl/testdata/*/*.fsm"} {
		paths, _ := filepath.Glob(pattern)
		for _, p := range paths {
			src, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(src)
		}
	}
	f.Add([]byte("machine M { initial A\nfinal B succeeded\nevent E\nA -> B on E }"))
	// States whose names grow a letter at a time, so that each kind of
	// view method crosses go/printer's limit for a function on one line,
	// and mutations of them land on either side of it.
	for n := 1; n <= 90; n++ {
		state := "W" + strings.Repeat("a", n-1)
		f.Add(fmt.Appendf(nil, "machine M {\n    initial %s\n    final DONE succeeded\n    event ReachLimit\n    %s -> DONE on ReachLimit\n}\n", state, state))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		spec, diags := dsl.Load("fuzz.fsm", src)
		for _, d := range diags {
			if d.Pos.Filename != "fuzz.fsm" || d.Pos.Line < 1 || d.Pos.Column < 1 {
				t.Fatalf("diagnostic without a position: %q", d.String())
			}
			if d.Message == "" {
				t.Fatalf("diagnostic without a message at %s", d.String())
			}
		}
		if spec == nil {
			if !diags.HasErrors() {
				t.Fatal("no spec and no error")
			}
			return
		}
		files, err := Generate(spec)
		if errors.Is(err, ErrNotGenerated) {
			return
		}
		if err != nil {
			t.Fatalf("checked input does not generate: %v", err)
		}
		for _, file := range files {
			if !strings.HasSuffix(file.Path, ".go") {
				continue
			}
			if _, err := parser.ParseFile(token.NewFileSet(), file.Path, file.Content, parser.AllErrors); err != nil {
				t.Fatalf("generated %s does not parse: %v\n%s", file.Path, err, file.Content)
			}
			formatted, err := format.Source(file.Content)
			if err != nil {
				t.Fatalf("generated %s: %v", file.Path, err)
			}
			if !bytes.Equal(formatted, file.Content) {
				t.Fatalf("generated %s is not gofmt-clean:\n%s", file.Path, file.Content)
			}
		}
	})
}

package gen

import (
	"bytes"
	"fmt"
	"go/format"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/dsl"
)

// lineLimitMachine returns a machine whose initial state's view has a
// method for its one event of exactly size as go/printer's funcBody counts
// it (the header's length plus one, plus the body's statement's), with
// the method's header and body; the state's name is lengthened until the
// size is reached.
func lineLimitMachine(t *testing.T, size int) (src, header, body string) {
	t.Helper()
	const event = "ReachLimit"
	for n := 1; n <= 60; n++ {
		state := "W" + strings.Repeat("a", n-1)
		header = fmt.Sprintf("func (v In%s) %s(ctx context.Context, e %s) error", state, event, event)
		body = fmt.Sprintf("return v.m.%s(ctx, e)", event)
		if len(header)+1+len(body) == size {
			src = fmt.Sprintf("machine M {\n    initial %s\n    final DONE succeeded\n    event %s\n    %s -> DONE on %s\n}\n", state, event, state, event)
			return src, header, body
		}
	}
	t.Fatalf("no state name gives a view method of size %d", size)
	return "", "", ""
}

// TestViewMethodAtTheLineLimit generates view methods of one less than,
// exactly and one more than go/printer's limit for a function on one line
// (funcBody's maxSize, 100): the first two are on one line, the third over
// three, and fsm.go is as gofmt leaves it.
func TestViewMethodAtTheLineLimit(t *testing.T) {
	t.Parallel()
	for _, size := range []int{99, 100, 101} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			t.Parallel()
			src, header, body := lineLimitMachine(t, size)
			spec, diags := dsl.Load("limit.fsm", []byte(src))
			if diags.HasErrors() {
				t.Fatal(diags.Err())
			}
			files, err := Generate(spec)
			if err != nil {
				t.Fatal(err)
			}
			var content []byte
			for _, f := range files {
				if filepath.Base(f.Path) == GoFile {
					content = f.Content
				}
			}
			want := header + " { " + body + " }\n"
			if size > 100 {
				want = header + " {\n\t" + body + "\n}\n"
			}
			if !bytes.Contains(content, []byte(want)) {
				t.Errorf("fsm.go does not have\n%s", want)
			}
			formatted, err := format.Source(content)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(formatted), string(content)); diff != "" {
				t.Errorf("fsm.go is not gofmt-clean (-gofmt +generated):\n%s", diff)
			}
		})
	}
}

// TestFieldTypesImportNames generates a machine whose events name types of
// packages called like those fsm.go imports itself: each gets a name of
// its own, numbered, and fsm.go calls each package by its name.
func TestFieldTypesImportNames(t *testing.T) {
	t.Parallel()
	src := `machine M {
    initial A retry 3 backoff 1s
    final B succeeded
    event E { r "example.com/runtime".T; f "example.com/fmt".T; t "example.com/time".T; d time.Duration }
    guard G
    A -> B on E when G
}
`
	spec, diags := dsl.Load("m.fsm", []byte(src))
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	b, err := machineCode("m.fsm", spec.Machines[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"import (\n\t\"context\"\n\tfmt1 \"fmt\"\n\ttime1 \"time\"\n\n\tfmt \"example.com/fmt\"\n\truntime1 \"example.com/runtime\"\n\ttime \"example.com/time\"\n\t\"github.com/fsmgen/fsmgen/runtime\"\n\t\"github.com/fsmgen/fsmgen/runtime/fsmimpl\"\n)\n",
		"\tR runtime1.T     `json:\"r\"`\n\tF fmt.T          `json:\"f\"`\n\tT time.T         `json:\"t\"`\n\tD time1.Duration `json:\"d\"`\n",
		`return fmt1.Errorf("%s: no guards for the run", Type)`,
		"InitialInterval: time1.Second",
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("fsm.go does not have\n%s\nit is\n%s", want, b)
		}
	}
}

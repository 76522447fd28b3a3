package dsl

import (
	"bytes"
	"errors"
	"flag"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/alecthomas/participle/v2/lexer"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// astOpts compares two parsed files apart from positions and the list of
// comments (doc comments still count, through the Doc fields).
var astOpts = cmp.Options{
	cmpopts.IgnoreTypes(lexer.Position{}),
	cmpopts.IgnoreFields(File{}, "Comments"),
}

func TestFormatGolden(t *testing.T) {
	t.Parallel()
	inputs, err := filepath.Glob(filepath.Join("testdata", "format", "*.fsm"))
	if err != nil {
		t.Fatal(err)
	}
	if len(inputs) == 0 {
		t.Fatal("no testdata/format/*.fsm")
	}
	for _, in := range inputs {
		t.Run(strings.TrimSuffix(filepath.Base(in), ".fsm"), func(t *testing.T) {
			t.Parallel()
			src, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			got, err := FormatSource(in, src)
			if err != nil {
				t.Fatal(err)
			}
			golden := strings.TrimSuffix(in, ".fsm") + ".golden"
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("Format(%s) mismatch (-want +got):\n%s", in, diff)
			}
			checkFormat(t, in, src)
		})
	}
}

// TestFormatFixedPoint formats every .fsm file of the module. Files under a
// testdata directory that do not parse are there to be invalid and are
// skipped; any other file must parse.
func TestFormatFixedPoint(t *testing.T) {
	t.Parallel()
	var files []string
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		// tmp/ at the root is scratch, ignored by git, where other
		// packages' tests (cmd/fsmgen's TestInterop) write and remove
		// .fsm files while this one runs.
		if d.IsDir() && path != ".." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || path == filepath.Join("..", "tmp")) {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".fsm") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range files {
		t.Run(strings.TrimPrefix(filepath.ToSlash(path), "../"), func(t *testing.T) {
			t.Parallel()
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Parse(path, src); err != nil {
				if slices.Contains(strings.Split(filepath.ToSlash(path), "/"), "testdata") {
					t.Skipf("invalid on purpose: %v", err)
				}
				t.Fatalf("does not parse: %v", err)
			}
			checkFormat(t, path, src)
		})
	}
}

// checkFormat checks the properties Format promises for src, which must
// parse: the output parses to the same tree, keeps every comment, is laid
// out cleanly and is a fixed point.
func checkFormat(t testing.TB, filename string, src []byte) {
	t.Helper()
	in, err := Parse(filename, src)
	if err != nil {
		t.Fatalf("input does not parse: %v", err)
	}
	out := Format(in)
	again, err := Parse(filename, out)
	if err != nil {
		t.Fatalf("output does not parse: %v\n%s", err, out)
	}
	if diff := cmp.Diff(in, again, astOpts); diff != "" {
		t.Fatalf("formatting changed the tree (-input +output):\n%s\noutput:\n%s", diff, out)
	}
	if diff := cmp.Diff(commentTexts(in), commentTexts(again)); diff != "" {
		t.Fatalf("formatting changed the comments (-input +output):\n%s\noutput:\n%s", diff, out)
	}
	if diff := cmp.Diff(string(out), string(Format(again))); diff != "" {
		t.Fatalf("formatting is not idempotent (-once +twice):\n%s", diff)
	}
	if err := checkLayout(out); err != nil {
		t.Fatalf("%v\noutput:\n%s", err, out)
	}
}

// commentTexts returns the texts of f's comments, sorted: formatting may
// move a comment but never drops or rewrites one.
func commentTexts(f *File) []string {
	var texts []string
	for _, c := range f.Comments {
		texts = append(texts, c.Text)
	}
	slices.Sort(texts)
	return texts
}

// checkLayout checks the rules that hold for any formatted file.
func checkLayout(out []byte) error {
	if len(out) == 0 {
		return nil
	}
	switch {
	case out[len(out)-1] != '\n':
		return errors.New("output does not end with a newline")
	case bytes.HasSuffix(out, []byte("\n\n")):
		return errors.New("output ends with a blank line")
	case out[0] == '\n':
		return errors.New("output starts with a blank line")
	case bytes.Contains(out, []byte("\n\n\n")):
		return errors.New("output has two blank lines in a row")
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	for i, l := range lines {
		if strings.TrimRight(l, " \t") != l {
			return errors.New("trailing space on line " + l)
		}
		if l == "" && i > 0 && strings.HasSuffix(lines[i-1], "{") {
			return errors.New("blank line after {")
		}
		if l == "" && i+1 < len(lines) && strings.TrimSpace(lines[i+1]) == "}" {
			return errors.New("blank line before }")
		}
	}
	return nil
}

// formatCases are small inputs and their formatted form; FuzzFormat
// starts from them too.
var formatCases = []struct {
	name, src, want string
}{
	{
		name: "empty",
		src:  "",
		want: "",
	},
	{
		name: "only comments",
		src:  "\n\n// a\n\n\n// b\n// c\n\n",
		want: "// a\n\n// b\n// c\n",
	},
	{
		name: "a retry bound the run's policy chooses within",
		src:  "machine M { initial A retry  up   to 6 backoff 1s else F final B succeeded final C failed A -> B on E A -> C on F event E event F }",
		want: "machine M {\n    initial A retry up to 6 backoff 1s else F\n    final   B succeeded\n    final   C failed\n    A -> B on E\n    A -> C on F\n    event E\n    event F\n}\n",
	},
	{
		name: "a parallel state and In guards",
		src:  "machine M { initial P parallel after 1h T { state R { initial A } state S { initial B } } final Z succeeded A -> Z on E when  In( B ) A -> Z on T unless !In(S) }",
		want: "machine M {\n    initial P parallel after 1h T {\n        state R {\n            initial A\n        }\n        state S {\n            initial B\n        }\n    }\n    final Z succeeded\n    A -> Z on E when In(B)\n    A -> Z on T unless !In(S)\n}\n",
	},
	{
		name: "one line machine",
		src:  "machine M { initial A final B succeeded A -> B on E event E }",
		want: "machine M {\n    initial A\n    final   B succeeded\n    A -> B on E\n    event E\n}\n",
	},
	{
		name: "doc of a machine on the line of its first item",
		src:  "// M does it.\nmachine M { state A\n}\n",
		want: "// M does it.\nmachine M {\n    state A\n}\n",
	},
	{
		name: "machines separated by one blank line",
		src:  "machine A {\n}\n\n\n\nmachine B {\n} machine C {}",
		want: "machine A {\n}\n\nmachine B {\n}\n\nmachine C {\n}\n",
	},
	{
		name: "comment after the closing brace",
		src:  "machine A {\n} // end of A\n// about B\nmachine B {\n}\n// the end",
		want: "machine A {\n} // end of A\n\n// about B\nmachine B {\n}\n\n// the end\n",
	},
	{
		name: "free comment before a machine stays free",
		src:  "// license\n\n// A does it.\nmachine A {}",
		want: "// license\n\n// A does it.\nmachine A {\n}\n",
	},
	{
		name: "comments inside a declaration",
		src:  "machine M {\n    state A // one\n        retry 3 // two\n    state B\n}\n",
		want: "machine M {\n    state A retry 3 // one\n    // two\n\n    state B\n}\n",
	},
	{
		name: "comment line inside a declaration",
		src:  "machine M {\n    state A\n    // why\n    retry 3\n    state B\n}\n",
		want: "machine M {\n    state A retry 3 // why\n    state B\n}\n",
	},
	{
		name: "second comment in the header",
		src:  "machine // a\nM { // b\n    state A\n}\n",
		want: "machine M { // a\n    // b\n\n    state A\n}\n",
	},
	{
		name: "blank lines at the edges of a block",
		src:  "machine M {\n\n\n    state A\n\n    // end\n\n}\n",
		want: "machine M {\n    state A\n\n    // end\n}\n",
	},
	{
		name: "free comment above an item keeps its blank line",
		src:  "machine M {\n    // about the states\n\n    state A\n}\n",
		want: "machine M {\n    // about the states\n\n    state A\n}\n",
	},
	{
		name: "crlf and tabs",
		src:  "machine M {\r\n\tstate\tA   // x  \r\n\tstate B\r\n}\r\n",
		want: "machine M {\n    state A // x\n    state B\n}\n",
	},
	{
		name: "empty event braces",
		src:  "machine M { event A {} event B { } event C {\n} event D }",
		want: "machine M {\n    event A {}\n    event B {}\n    event C {}\n    event D\n}\n",
	},
	{
		name: "comment line in empty event braces",
		src:  "machine M {\n    event A {\n        // later\n    }\n}\n",
		want: "machine M {\n    event A {\n        // later\n    }\n}\n",
	},
	{
		name: "event on one line too wide",
		src:  "machine M {\n    event E { aaaaaaaaaaaaaaaaaaaa string; bbbbbbbbbbbbbbbbbbbbbb string; ccccccccccccccccccccc time.Duration }\n}\n",
		want: "machine M {\n    event E {\n        aaaaaaaaaaaaaaaaaaaa   string\n        bbbbbbbbbbbbbbbbbbbbbb string\n        ccccccccccccccccccccc  time.Duration\n    }\n}\n",
	},
	{
		name: "event written on several lines",
		src:  "machine M {\n    event E { a string,\n b []  byte }\n}\n",
		want: "machine M {\n    event E {\n        a string\n        b []byte\n    }\n}\n",
	},
	{
		name: "field types",
		src:  "machine M { event E { a [ ] \"example.com/x\" . T , b time . Time ; c [] string } }",
		want: "machine M {\n    event E { a []\"example.com/x\".T; b time.Time; c []string }\n}\n",
	},
	{
		name: "guard clauses and outcome columns",
		src:  "machine M {\nA->B on E when G\nAA , B->C on EE unless G outcome \"x\"\n* -> D on E when ! G\nA -> B on E outcome \"y\"\n}",
		want: "machine M {\n" +
			"    A     -> B on E  when G\n" +
			"    AA, B -> C on EE unless G outcome \"x\"\n" +
			"    *     -> D on E  when !G\n" +
			"    A     -> B on E           outcome \"y\"\n" +
			"}\n",
	},
	{
		name: "state options as written",
		src:  "machine M { state A after 7d T wait retry 3 backoff 1s factor 4 max 16s jitter 0.2 nonretryable \"X\" , \"Y\" state B retry database final C failed outcome \"no\" }",
		want: "machine M {\n" +
			"    state A after 7d T wait retry 3 backoff 1s factor 4 max 16s jitter 0.2 nonretryable \"X\", \"Y\"\n" +
			"    state B retry database\n" +
			"    final C failed outcome \"no\"\n" +
			"}\n",
	},
	{
		name: "trailing comments align over a run",
		src:  "machine M {\n    type \"m\" // a\n    version 12 // b\n    package m\n    guard G // c\n    guard Long // d\n\n    guard H // e\n}\n",
		want: "machine M {\n    type \"m\"   // a\n    version 12 // b\n    package m\n    guard G    // c\n    guard Long // d\n\n    guard H // e\n}\n",
	}, {
		name: "nested states, laid out loosely",
		src: `// A nested machine, laid out loosely.
machine Player {
  initial STOPPED wait
  state ACTIVE after 30m IdleTimeout entry StartClock exit StopClock { // the composite
      // the first child
      initial PLAYING wait
    state PAUSED wait after 5m Stop
    state SEEKING { initial FORWARD wait
       state BACKWARD wait }


      history RESUME
      deep history LAST
      final ENDED
      final BROKEN failed
      // the end of ACTIVE
  }
  final OFF succeeded
  action StartClock
  action StopClock
  event Play event Pause event Stop event Resume event Tick event Seek event IdleTimeout
  guard Expired
  STOPPED -> ACTIVE on Play
  PAUSED -> PLAYING on Pause,Play
  ACTIVE -> STOPPED on Stop , IdleTimeout
  STOPPED -> RESUME on Resume
  PLAYING -> PLAYING on Tick internal
  ACTIVE -> SEEKING on Seek
  SEEKING -> BACKWARD on Seek internal
  FORWARD -> LAST on Resume
  BACKWARD -> ENDED on Tick
  PAUSED -> BROKEN on Tick
  PLAYING -> PAUSED on Pause
  ACTIVE -> OFF on done
  PAUSED -> STOPPED when Expired
}
`,
		want: `// A nested machine, laid out loosely.
machine Player {
    initial STOPPED wait
    state   ACTIVE  after 30m IdleTimeout entry StartClock exit StopClock { // the composite
        // the first child
        initial PLAYING wait
        state   PAUSED  wait after 5m Stop
        state   SEEKING {
            initial FORWARD  wait
            state   BACKWARD wait
        }

        history      RESUME
        deep history LAST
        final ENDED
        final BROKEN failed
        // the end of ACTIVE
    }
    final OFF succeeded
    action StartClock
    action StopClock
    event Play
    event Pause
    event Stop
    event Resume
    event Tick
    event Seek
    event IdleTimeout
    guard Expired
    STOPPED  -> ACTIVE   on Play
    PAUSED   -> PLAYING  on Pause, Play
    ACTIVE   -> STOPPED  on Stop, IdleTimeout
    STOPPED  -> RESUME   on Resume
    PLAYING  -> PLAYING  on Tick internal
    ACTIVE   -> SEEKING  on Seek
    SEEKING  -> BACKWARD on Seek internal
    FORWARD  -> LAST     on Resume
    BACKWARD -> ENDED    on Tick
    PAUSED   -> BROKEN   on Tick
    PLAYING  -> PAUSED   on Pause
    ACTIVE   -> OFF      on done
    PAUSED   -> STOPPED          when Expired
}
`,
	},
}

func TestFormat(t *testing.T) {
	t.Parallel()
	for _, tt := range formatCases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := FormatSource("test.fsm", []byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("FormatSource(%q) mismatch (-want +got):\n%s", tt.src, diff)
			}
			checkFormat(t, "test.fsm", []byte(tt.src))
		})
	}
}

func TestFormatSourceSyntaxError(t *testing.T) {
	t.Parallel()
	_, err := FormatSource("bad.fsm", []byte("machine M {\n    state\n}\n"))
	var list ErrorList
	if !errors.As(err, &list) || len(list) != 1 {
		t.Fatalf("FormatSource error = %v, want an ErrorList of one diagnostic", err)
	}
	if got := list[0].Pos; got.Filename != "bad.fsm" || got.Line != 2 {
		t.Errorf("error position = %v, want bad.fsm:2", got)
	}
}

// TestFormatBuiltTree formats a tree built in code: no comments, no
// positions, docs taken from the Doc fields.
func TestFormatBuiltTree(t *testing.T) {
	t.Parallel()
	f := &File{Machines: []*MachineDecl{{
		Doc:  []string{"M is built in code.", "", "It has two states."},
		Name: "M",
		Items: []*Item{
			{Doc: []string{"A starts."}, State: &StateDecl{Kind: "initial", Name: &Name{Value: "A"}}},
			{State: &StateDecl{Kind: "final", Name: &Name{Value: "B"}, Status: &StatusLit{Value: "succeeded"}}},
			{Event: &EventDecl{Name: &Name{Value: "Go"}, Block: true, Fields: []*Field{
				{Name: &Name{Value: "at"}, Type: &TypeExpr{Name: "time", Sel: "Time"}},
			}}},
			{Transition: &TransitionDecl{
				From:  []*StateRef{{Name: "A"}},
				To:    &Name{Value: "B"},
				Event: &Name{Value: "Go"},
				Guard: &GuardRef{Not: true, Name: &Name{Value: "Late"}},
			}},
		},
	}}}
	want := "// M is built in code.\n//\n// It has two states.\nmachine M {\n" +
		"    // A starts.\n" +
		"    initial A\n" +
		"    final   B succeeded\n" +
		"    event Go { at time.Time }\n" +
		"    A -> B on Go when !Late\n" +
		"}\n"
	got := Format(f)
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("Format mismatch (-want +got):\n%s", diff)
	}
	again, err := Parse("built.fsm", got)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(f, again, astOpts); diff != "" {
		t.Errorf("parsing the output gives another tree (-built +parsed):\n%s", diff)
	}
}

// TestFormatRelayout lays the tokens of the testdata files out again at
// random, with line breaks, blank lines and comments between any two
// tokens, and checks Format's promises on every variant that parses.
func TestFormatRelayout(t *testing.T) {
	t.Parallel()
	inputs, err := filepath.Glob(filepath.Join("testdata", "format", "*.fsm"))
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range inputs {
		t.Run(strings.TrimSuffix(filepath.Base(in), ".fsm"), func(t *testing.T) {
			t.Parallel()
			src, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			toks, err := codeTokens(in, src)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(1, uint64(len(src))))
			for i := range 300 {
				variant := relayout(rng, toks)
				if _, err := Parse(in, variant); err != nil {
					continue
				}
				t.Run(strconv.Itoa(i), func(t *testing.T) {
					checkFormat(t, in, variant)
				})
			}
		})
	}
}

// codeTokens returns the values of the tokens of src that are neither
// comments nor whitespace.
func codeTokens(filename string, src []byte) ([]string, error) {
	lx, err := fsmLexer.LexString(filename, string(src))
	if err != nil {
		return nil, err
	}
	skip := map[lexer.TokenType]bool{
		fsmLexer.Symbols()["Comment"]:    true,
		fsmLexer.Symbols()["Whitespace"]: true,
	}
	var toks []string
	for {
		tok, err := lx.Next()
		if err != nil {
			return nil, err
		}
		if tok.EOF() {
			return toks, nil
		}
		if !skip[tok.Type] {
			toks = append(toks, tok.Value)
		}
	}
}

// relayout joins toks with random separators.
func relayout(rng *rand.Rand, toks []string) []byte {
	seps := []string{
		" ", " ", " ", " ", "\n", "\n", "\t", "\n\n", "\n\n\n",
		" // trailing\n", "\n// own\n", "\n// own\n\n", "\n\n// free\n\n",
		" //x\n// y\n", "\n//\n",
	}
	var b strings.Builder
	if rng.IntN(4) == 0 {
		b.WriteString("// top\n")
	}
	for i, tok := range toks {
		b.WriteString(tok)
		if i < len(toks)-1 && rng.IntN(3) == 0 {
			b.WriteString(seps[rng.IntN(len(seps))])
		} else {
			b.WriteString(" ")
		}
	}
	if rng.IntN(4) == 0 {
		b.WriteString(" // end")
	}
	return []byte(b.String())
}

package dsl

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// door wraps the lines of a machine body, four spaces in, in a machine
// block that starts on line 1: the body's first line is line 2.
func door(lines ...string) string {
	return "machine Door {\n    " + strings.Join(lines, "\n    ") + "\n}\n"
}

func TestParseSyntaxErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  string
		want []string
	}{
		// Each of these names what the language expected at the token
		// that does not fit.
		{
			name: "final state with an unknown status",
			src:  door("initial OPEN", "final   CLOSED success"),
			want: []string{`t.fsm:3:20: syntax error: unexpected token "success", expected a status (succeeded, failed or cancelled), parallel, wait, entry, exit, retry, after, "{" or the end of the declaration`},
		},
		{
			name: "row without on",
			src:  door("initial OPEN", "final   CLOSED succeeded", "event Close", "OPEN -> CLOSED Close"),
			want: []string{`t.fsm:5:20: syntax error: unexpected token "Close", expected outcome, on, internal, when, unless or the end of the row`},
		},
		{
			name: "retry options out of order",
			src:  door("initial OPEN", "state   WORK retry 3 max 1s factor 2"),
			want: []string{`t.fsm:3:33: syntax error: unexpected token "factor", expected parallel, wait, entry, exit, retry, jitter, nonretryable, else, after, "{" or the end of the declaration`},
		},
		{
			name: "duration without a unit",
			src:  door("initial OPEN wait after 10 Expire"),
			want: []string{`t.fsm:2:29: syntax error: unexpected token "10", expected a name or a duration (a number and a unit: ms, s, m, h or d, as in 30s)`},
		},
		{
			name: "duration with an unknown unit",
			src:  door("initial OPEN wait after 5parsecs Expire"),
			want: []string{`t.fsm:2:29: syntax error: unexpected token "5", expected a name or a duration (a number and a unit: ms, s, m, h or d, as in 30s)`},
		},
		{
			name: "map field type",
			src:  door("initial OPEN", "event Close { counts map[string]int }"),
			want: []string{`t.fsm:3:29: syntax error: unexpected token "[", expected a name, "}", ",", "." or ";"`},
		},
		{
			name: "unclosed field block",
			src:  door("initial OPEN", "event Close { reason string", "event Open", "OPEN -> OPEN on Open"),
			want: []string{`t.fsm:3:32: syntax error: unexpected end of line, expected a name, "}", ",", "." or ";"`},
		},

		{
			name: "cancel without an event",
			src:  door("initial OPEN", "cancel", "event Stop external { why string }"),
			want: []string{`t.fsm:3:11: syntax error: unexpected end of line, expected the event that cancels a run`},
		},
		{
			name: "retry up without to",
			src:  door("initial OPEN retry up 5"),
			want: []string{`t.fsm:2:27: syntax error: unexpected token "5", expected to`},
		},
		{
			name: "retry up to without a number",
			src:  door("initial OPEN retry up to database"),
			want: []string{`t.fsm:2:30: syntax error: unexpected token "database", expected a number`},
		},
		{
			name: "event flag misspelt",
			src:  door("initial OPEN", "event Stop externel { why string }"),
			want: []string{`t.fsm:3:16: syntax error: unexpected token "externel", expected external, "{" or the end of the declaration`},
		},
		{
			name: "missing closing brace",
			src:  "machine M {\n    initial A\n",
			want: []string{`t.fsm:3:1: syntax error: unexpected end of file, expected "}" to close machine M (opened at 1:11)`},
		},
		{
			name: "missing opening brace",
			src:  "machine M\n    initial A\n}\n",
			want: []string{`t.fsm:2:5: syntax error: unexpected token "initial", expected "{"`},
		},
		{
			name: "missing machine name",
			src:  "machine {\n}\n",
			want: []string{`t.fsm:1:9: syntax error: unexpected token "{", expected the machine's name`},
		},
		{
			name: "stray closing brace",
			src:  "machine M {\n    initial A\n}\n}\n",
			want: []string{`t.fsm:4:1: syntax error: unexpected token "}", expected machine or the end of the file`},
		},
		{
			name: "bad character",
			src:  "machine M {\n    initial A @\n}\n",
			want: []string{`t.fsm:2:15: syntax error: invalid character '@'`},
		},
		{
			name: "bad character outside ASCII",
			src:  "machine M {\n    état A\n}\n",
			want: []string{`t.fsm:2:5: syntax error: invalid character 'é'`},
		},
		{
			name: "columns count characters",
			src:  "machine M {\n    // é\n    event É\n}\n",
			want: []string{`t.fsm:3:11: syntax error: invalid character 'É'`},
		},
		{
			name: "invalid UTF-8 in a comment",
			src:  "machine M {\n    // caf\xe9\n    initial A\n}\n",
			want: []string{`t.fsm:2:11: invalid UTF-8 encoding`},
		},
		{
			name: "NUL in a comment",
			src:  "machine M {\n    // a\x00b\n    initial A\n}\n",
			want: []string{`t.fsm:2:9: invalid NUL character`},
		},
		{
			name: "byte order mark in the middle",
			src:  "machine M {\n    // \uFEFF\n    initial A\n}\n",
			want: []string{`t.fsm:2:8: invalid byte order mark in the middle of the file`},
		},
		{
			name: "unterminated string",
			src:  "machine M {\n    type \"retrieve\n}\n",
			want: []string{`t.fsm:2:10: syntax error: string literal not terminated`},
		},
		{
			name: "arrow without a target",
			src:  "machine M {\n    A -> on Go\n}\n",
			want: []string{`t.fsm:2:13: syntax error: unexpected token "Go", expected outcome, on, internal, when, unless or the end of the row`},
		},
		{
			name: "on without an event",
			src:  "machine M {\n    A -> B on\n}\n",
			want: []string{`t.fsm:2:14: syntax error: unexpected end of line, expected an event`},
		},
		{
			name: "empty entry in a FROM list",
			src:  "machine M {\n    A, -> B on Go\n}\n",
			want: []string{`t.fsm:2:8: syntax error: unexpected token "->", expected a name or "*"`},
		},
		{
			name: "negative number",
			src:  "machine M {\n    version -1\n}\n",
			want: []string{`t.fsm:2:13: syntax error: invalid character '-'`},
		},
		{
			name: "not a machine",
			src:  "state A\n",
			want: []string{`t.fsm:1:1: syntax error: unexpected token "state", expected machine or the end of the file`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, err := Parse("t.fsm", []byte(tc.src))
			if f != nil {
				t.Errorf("Parse returned a File for a syntax error")
			}
			list, ok := err.(ErrorList)
			if !ok {
				t.Fatalf("Parse error = %#v, want an ErrorList", err)
			}
			if diff := cmp.Diff(tc.want, diagStrings(Diagnostics(list))); diff != "" {
				t.Errorf("diagnostics (-want +got):\n%s", diff)
			}
			// Load reports the same diagnostics.
			spec, ds := Load("t.fsm", []byte(tc.src))
			if spec != nil {
				t.Errorf("Load returned a Spec for a syntax error")
			}
			if diff := cmp.Diff(tc.want, diagStrings(ds)); diff != "" {
				t.Errorf("Load diagnostics (-want +got):\n%s", diff)
			}
		})
	}
}

// TestParseReportsSeveralSyntaxErrors checks that the parser resumes at
// the next declaration or row, in every machine of the file, and that a bad
// character late in the file hides none of the errors before it.
func TestParseReportsSeveralSyntaxErrors(t *testing.T) {
	t.Parallel()
	src := `machine Door {
    initial OPEN retry 3 backoff 1s
        nonretryable "A",
            "B"
    final   CLOSED success
    event Close {
        reason string
        at time.Time; tags []string
    }
    event Open
    OPEN,
    CLOSED -> OPEN on Open
    OPEN -> CLOSED Close
    OPEN -> CLOSED on Close
}

machine Gate { initial A final B succeeded event E A -> B on E }

machine Window {
    initial SHUT
    state   AJAR after 10 Close
    event Close { size map[string]int
    SHUT -> AJAR on Close @
}
`
	want := []string{
		`t.fsm:5:20: syntax error: unexpected token "success", expected a status (succeeded, failed or cancelled), parallel, wait, entry, exit, retry, after, "{" or the end of the declaration`,
		`t.fsm:13:20: syntax error: unexpected token "Close", expected outcome, on, internal, when, unless or the end of the row`,
		`t.fsm:21:24: syntax error: unexpected token "10", expected a name or a duration (a number and a unit: ms, s, m, h or d, as in 30s)`,
		`t.fsm:22:27: syntax error: unexpected token "[", expected a name, "}", ",", "." or ";"`,
		`t.fsm:23:27: syntax error: invalid character '@'`,
	}
	_, err := Parse("t.fsm", []byte(src))
	var list ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("Parse error = %v, want an ErrorList", err)
	}
	if diff := cmp.Diff(want, diagStrings(Diagnostics(list))); diff != "" {
		t.Errorf("diagnostics (-want +got):\n%s", diff)
	}
}

// TestParseOneErrorInEveryValidFile breaks, in every .fsm file of the
// repository, one line of the first machine, and checks that exactly that
// line is reported: resuming after the error finds nothing wrong in the
// valid declarations and rows around it, whatever their layout.
func TestParseOneErrorInEveryValidFile(t *testing.T) {
	t.Parallel()
	var paths []string
	for _, root := range []string{"testdata", filepath.Join("..", "gen", "testdata"), filepath.Join("..", "machines")} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(path, ".fsm") {
				paths = append(paths, path)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	sources := map[string][]byte{}
	for _, path := range paths {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		sources[path] = src
	}
	// The formatter's cases are laid out every which way.
	for i, tc := range formatCases {
		sources[fmt.Sprintf("format%d.fsm", i)] = []byte(tc.src)
	}
	tried := 0
	for path, src := range sources {
		if _, err := Parse(path, src); err != nil {
			continue // a file that is meant to be wrong
		}
		lines := strings.Split(string(src), "\n")
		open := slices.IndexFunc(lines, machineLine.MatchString)
		if open < 0 {
			continue
		}
		broken := slices.Insert(slices.Clone(lines), open+1, "    final BROKEN success")
		want := []string{fmt.Sprintf(`%s:%d:18: syntax error: unexpected token "success", expected a status (succeeded, failed or cancelled), parallel, wait, entry, exit, retry, after, "{" or the end of the declaration`, path, open+2)}
		_, err := Parse(path, []byte(strings.Join(broken, "\n")))
		var list ErrorList
		if !errors.As(err, &list) {
			t.Errorf("%s: Parse error = %v, want an ErrorList", path, err)
			continue
		}
		if diff := cmp.Diff(want, diagStrings(Diagnostics(list))); diff != "" {
			t.Errorf("%s: diagnostics (-want +got):\n%s\nsource:\n%s", path, diff, strings.Join(broken, "\n"))
		}
		tried++
	}
	if tried < 10 {
		t.Errorf("tried %d files, want at least 10", tried)
	}
}

// machineLine matches a line that opens a machine block and holds nothing else.
var machineLine = regexp.MustCompile(`^machine \w+ \{$`)

// TestLoadNumberLimits checks the numbers and durations too large to hold:
// each is reported as too large, not as malformed.
func TestLoadNumberLimits(t *testing.T) {
	t.Parallel()
	src := door(
		"initial OPEN wait after 2562048h Expire",
		"state   WORK retry 99999999999999999999",
		"state   IDLE retry 3 max 2562047h",
		"version 99999999999999999999",
	)
	want := []string{
		`t.fsm:2:29: duration "2562048h" is too long; the longest is 2562047h (106751d)`,
		`t.fsm:3:24: retry 99999999999999999999: the number is too large; at most 9223372036854775807`,
		`t.fsm:5:5: version 99999999999999999999: the number is too large; at most 9223372036854775807`,
	}
	_, ds := Load("t.fsm", []byte(src))
	var got []string
	for _, d := range ds {
		if d.Severity == Error && (strings.Contains(d.Message, "too") || strings.Contains(d.Message, "duration")) {
			got = append(got, d.String())
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("diagnostics (-want +got):\n%s\nall: %q", diff, diagStrings(ds))
	}
}

// FuzzParse checks that Parse never panics and that, on every input it
// refuses, it returns an ErrorList of diagnostics, each in the file, with
// a line and column that match its offset, sorted by position.
func FuzzParse(f *testing.F) {
	for _, tc := range formatCases {
		f.Add([]byte(tc.src))
	}
	f.Add([]byte(door("initial OPEN", "final   CLOSED success", "event Close { reason string", "OPEN -> CLOSED Close @")))
	f.Add([]byte(door("state A retry 3 max 1s factor 2 after 5parsecs X", "event E { m map[string]int; p *T }", "machine X {")))
	f.Fuzz(func(t *testing.T, src []byte) {
		_, err := Parse("fuzz.fsm", src)
		if err == nil {
			return
		}
		var list ErrorList
		if !errors.As(err, &list) || len(list) == 0 {
			t.Fatalf("Parse error = %#v, want a non-empty ErrorList", err)
		}
		body := bytes.TrimPrefix(src, []byte("\uFEFF"))
		for i, d := range list {
			p := d.Pos
			if p.Filename != "fuzz.fsm" || p.Line < 1 || p.Column < 1 || p.Offset < 0 || p.Offset > len(src) {
				t.Fatalf("diagnostic %q is not positioned in the file", d)
			}
			if bytes.HasPrefix(src, []byte("\uFEFF")) || p.Offset > len(body) || !utf8.Valid(body) {
				continue
			}
			before := string(body[:p.Offset])
			line := strings.Count(before, "\n") + 1
			col := utf8.RuneCountInString(before[strings.LastIndexByte(before, '\n')+1:]) + 1
			if p.Line != line || p.Column != col {
				t.Fatalf("diagnostic %q: offset %d is at %d:%d", d, p.Offset, line, col)
			}
			if i > 0 && (list[i-1].Pos.Line > p.Line || list[i-1].Pos.Line == p.Line && list[i-1].Pos.Column > p.Column) {
				t.Fatalf("diagnostics out of order: %q before %q", list[i-1], d)
			}
		}
	})
}

func TestParseDuration(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    time.Duration
		wantErr string
	}{
		{in: "7d", want: 7 * 24 * time.Hour},
		{in: "1d12h", want: 36 * time.Hour},
		{in: "0.5d", want: 12 * time.Hour},
		{in: "1.5h", want: 90 * time.Minute},
		{in: "500ms", want: 500 * time.Millisecond},
		{in: "1m30s", want: 90 * time.Second},
		{in: "250us", want: 250 * time.Microsecond},
		{in: "250µs", want: 250 * time.Microsecond},
		{in: "0s", want: 0},
		{in: "", wantErr: `invalid duration ""`},
		{in: "5", wantErr: `invalid duration "5"`},
		{in: "d", wantErr: `invalid duration "d"`},
		{in: "-1h", wantErr: `invalid duration "-1h"`},
		{in: "1x", wantErr: `invalid duration "1x"`},
		{in: "1.2.3d", wantErr: `invalid duration "1.2.3d"`},
		{in: "1h ", wantErr: `invalid duration "1h "`},
		{in: "200000d", wantErr: `duration "200000d" is too long; the longest is 2562047h (106751d)`},
		{in: "9999999999h", wantErr: `duration "9999999999h" is too long; the longest is 2562047h (106751d)`},
		{in: "99999d99999d", wantErr: `duration "99999d99999d" is too long; the longest is 2562047h (106751d)`},
		{in: "2562048h", wantErr: `duration "2562048h" is too long; the longest is 2562047h (106751d)`},
		{in: "2562047h", want: 2562047 * time.Hour},
		{in: "106751d", want: 106751 * 24 * time.Hour},
		{in: "106752d", wantErr: `duration "106752d" is too long; the longest is 2562047h (106751d)`},
		{in: "2562047h47m16.854775807s", want: time.Duration(1<<63 - 1)},
		{in: "2562047h47m16.854775808s", wantErr: `duration "2562047h47m16.854775808s" is too long; the longest is 2562047h (106751d)`},
		{in: "99999999999999999999ns", wantErr: `duration "99999999999999999999ns" is too long; the longest is 2562047h (106751d)`},
		{in: "1.5d", want: 36 * time.Hour},
		{in: "1m", want: time.Minute},
		{in: "5parsecs", wantErr: `invalid duration "5parsecs"`},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseDuration(tc.in)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("ParseDuration(%q) = %v, %v; want error %q", tc.in, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseDuration(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestParseDocComments(t *testing.T) {
	t.Parallel()
	src := `// M is documented
// on two lines.
machine M {
    // A is the initial state.
    initial A

    // Not about DONE: a blank line follows.

    final DONE succeeded // trailing, not a doc
    final FAILED failed
    //Go has no space after the slashes.
    event Go
    // Two rows share a comment only if each has its own.
    A -> DONE on Go
    A -> FAILED on Go
}
`
	f, err := Parse("t.fsm", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	m := f.Machines[0]
	got := map[string][]string{"machine": m.Doc}
	for _, it := range m.Items {
		var key string
		switch {
		case it.State != nil:
			key = "state " + it.State.Name.Value
		case it.Event != nil:
			key = "event " + it.Event.Name.Value
		case it.Transition != nil:
			key = "row " + it.Transition.To.Value
		}
		got[key] = it.Doc
	}
	want := map[string][]string{
		"machine":      {"M is documented", "on two lines."},
		"state A":      {"A is the initial state."},
		"state DONE":   nil,
		"state FAILED": nil,
		"event Go":     {"Go has no space after the slashes."},
		"row DONE":     {"Two rows share a comment only if each has its own."},
		"row FAILED":   nil,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("docs (-want +got):\n%s", diff)
	}
	if n := len(f.Comments); n != 7 {
		t.Errorf("File.Comments has %d comments, want 7", n)
	}
}

func TestParseDocOnlyForNodeStartingItsLine(t *testing.T) {
	t.Parallel()
	src := "// About M, not A.\nmachine M { initial A\n}\n"
	f, err := Parse("t.fsm", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	m := f.Machines[0]
	if diff := cmp.Diff([]string{"About M, not A."}, m.Doc); diff != "" {
		t.Errorf("machine doc (-want +got):\n%s", diff)
	}
	if doc := m.Items[0].Doc; doc != nil {
		t.Errorf("state A doc = %q, want none", doc)
	}
}

// TestExpectationWordsInGrammar holds the words of syntax errors to the
// grammar: every fragment they name occurs in the grammar's EBNF, so that
// a change to the grammar cannot leave one behind unnoticed.
func TestExpectationWordsInGrammar(t *testing.T) {
	t.Parallel()
	ebnf := fsmParser.String()
	var keys []string
	for _, g := range groupWords {
		keys = append(keys, g.key)
	}
	for k := range termWords {
		if !strings.HasPrefix(k, "<end of ") {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		if !strings.Contains(ebnf, k) {
			t.Errorf("%s is not in the grammar:\n%s", k, ebnf)
		}
	}
}

// TestDeclKeywordsStartItems holds the words at which the splitter starts
// a new item, and those it keeps in a state's block, to the grammar: they
// are the keywords that an item, and a child of a state, may start with.
func TestDeclKeywordsStartItems(t *testing.T) {
	t.Parallel()
	keywords := func(prefix string) []string {
		toks, _ := lexRecover("t.fsm", []byte(prefix))
		var out []string
		for _, term := range strings.Split(expectedAt(probeItem, toks[:len(toks)-1], "<end of declaration>"), " | ") {
			if word, err := strconv.Unquote(term); err == nil && isIdentStart(word[0]) {
				out = append(out, word)
			}
		}
		slices.Sort(out)
		return out
	}
	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{"", declKeywords},
		{"state S {", childKeywords},
	} {
		want := slices.Clone(tc.want)
		slices.Sort(want)
		if diff := cmp.Diff(want, keywords(tc.prefix)); diff != "" {
			t.Errorf("keywords after %q (-splitter +grammar):\n%s", tc.prefix, diff)
		}
	}
}

// TestParseMachineBraceOnItsLine checks that a machine whose "{" stands on
// the line after its name is read as one, its errors reported in its body.
func TestParseMachineBraceOnItsLine(t *testing.T) {
	t.Parallel()
	_, err := Parse("t.fsm", []byte("machine M\n{\n    initial A\n    final B success\n}\n"))
	want := []string{`t.fsm:4:13: syntax error: unexpected token "success", expected a status (succeeded, failed or cancelled), parallel, wait, entry, exit, retry, after, "{" or the end of the declaration`}
	var list ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("Parse error = %v, want an ErrorList", err)
	}
	if diff := cmp.Diff(want, diagStrings(Diagnostics(list))); diff != "" {
		t.Errorf("diagnostics (-want +got):\n%s", diff)
	}
}

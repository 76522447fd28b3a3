package dsl

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseSyntaxErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  string
		want string
	}{
		{
			name: "missing closing brace",
			src:  "machine M {\n    initial A\n",
			want: `t.fsm:3:1: syntax error: unexpected end of file, expected "}"`,
		},
		{
			name: "missing opening brace",
			src:  "machine M\n    initial A\n}\n",
			want: `t.fsm:2:5: syntax error: unexpected token "initial", expected "{"`,
		},
		{
			name: "missing machine name",
			src:  "machine {\n}\n",
			want: `t.fsm:1:9: syntax error: unexpected token "{", expected a name`,
		},
		{
			name: "stray closing brace",
			src:  "machine M {\n    initial A\n}\n}\n",
			want: `t.fsm:4:1: syntax error: unexpected token "}"`,
		},
		{
			name: "bad character",
			src:  "machine M {\n    initial A @\n}\n",
			want: `t.fsm:2:15: syntax error: invalid character '@'`,
		},
		{
			name: "bad character outside ASCII",
			src:  "machine M {\n    état A\n}\n",
			want: `t.fsm:2:5: syntax error: invalid character 'é'`,
		},
		{
			name: "invalid UTF-8 in a comment",
			src:  "machine M {\n    // caf\xe9\n    initial A\n}\n",
			want: `t.fsm:2:11: invalid UTF-8 encoding`,
		},
		{
			name: "NUL in a comment",
			src:  "machine M {\n    // a\x00b\n    initial A\n}\n",
			want: `t.fsm:2:9: invalid NUL character`,
		},
		{
			name: "byte order mark in the middle",
			src:  "machine M {\n    // \uFEFF\n    initial A\n}\n",
			want: `t.fsm:2:8: invalid byte order mark in the middle of the file`,
		},
		{
			name: "unterminated string",
			src:  "machine M {\n    type \"retrieve\n}\n",
			want: `t.fsm:2:10: syntax error: string literal not terminated`,
		},
		{
			name: "arrow without a target",
			src:  "machine M {\n    A -> on Go\n}\n",
			want: `t.fsm:2:13: syntax error: unexpected token "Go", expected "on"`,
		},
		{
			name: "on without an event",
			src:  "machine M {\n    A -> B on\n}\n",
			want: `t.fsm:3:1: syntax error: unexpected token "}", expected a name`,
		},
		{
			name: "empty entry in a FROM list",
			src:  "machine M {\n    A, -> B on Go\n}\n",
			want: `t.fsm:2:8: syntax error: unexpected token "->", expected a state name or *`,
		},
		{
			name: "negative number",
			src:  "machine M {\n    version -1\n}\n",
			want: `t.fsm:2:13: syntax error: invalid character '-'`,
		},
		{
			name: "not a machine",
			src:  "state A\n",
			want: `t.fsm:1:1: syntax error: unexpected token "state"`,
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
			if diff := cmp.Diff([]string{tc.want}, diagStrings(Diagnostics(list))); diff != "" {
				t.Errorf("diagnostics (-want +got):\n%s", diff)
			}
			// Load reports the same single diagnostic.
			spec, ds := Load("t.fsm", []byte(tc.src))
			if spec != nil {
				t.Errorf("Load returned a Spec for a syntax error")
			}
			if diff := cmp.Diff([]string{tc.want}, diagStrings(ds)); diff != "" {
				t.Errorf("Load diagnostics (-want +got):\n%s", diff)
			}
		})
	}
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
		{in: "200000d", wantErr: `duration "200000d" is too long`},
		{in: "9999999999h", wantErr: `invalid duration "9999999999h"`},
		{in: "99999d99999d", wantErr: `duration "99999d99999d" is too long`},
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

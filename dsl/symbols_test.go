package dsl

import (
	"fmt"
	"testing"

	"github.com/alecthomas/participle/v2/lexer"
	"github.com/google/go-cmp/cmp"
)

const refsSrc = `machine M {
    cancel Stop
    initial A retry 3 else GiveUp
    state   B wait after 1h Tick
    final   DONE succeeded
    final   GONE cancelled
    event Go { n int }
    event GiveUp
    event Tick
    event Stop
    guard Ready
    A    -> B    on Go when Ready
    A    -> DONE on GiveUp
    B    -> DONE on Tick
    A, B -> GONE on Stop
}
`

// refString renders a Ref as kind name line:col-line:col, with "decl" for
// a declaration.
func refString(r Ref) string {
	s := fmt.Sprintf("%s %s %d:%d-%d:%d", r.Kind, r.Name, r.Pos.Line, r.Pos.Column, r.End.Line, r.End.Column)
	if r.Decl {
		s += " decl"
	}
	return s
}

func TestRefs(t *testing.T) {
	t.Parallel()
	f, err := Parse("t.fsm", []byte(refsSrc))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range Refs(f) {
		got = append(got, refString(r))
	}
	want := []string{
		"event Stop 2:12-2:16",
		"state A 3:13-3:14 decl",
		"event GiveUp 3:28-3:34",
		"state B 4:13-4:14 decl",
		"event Tick 4:29-4:33",
		"state DONE 5:13-5:17 decl",
		"state GONE 6:13-6:17 decl",
		"event Go 7:11-7:13 decl",
		"event GiveUp 8:11-8:17 decl",
		"event Tick 9:11-9:15 decl",
		"event Stop 10:11-10:15 decl",
		"guard Ready 11:11-11:16 decl",
		"state A 12:5-12:6",
		"state B 12:13-12:14",
		"event Go 12:21-12:23",
		"guard Ready 12:29-12:34",
		"state A 13:5-13:6",
		"state DONE 13:13-13:17",
		"event GiveUp 13:21-13:27",
		"state B 14:5-14:6",
		"state DONE 14:13-14:17",
		"event Tick 14:21-14:25",
		"state A 15:5-15:6",
		"state B 15:8-15:9",
		"state GONE 15:13-15:17",
		"event Stop 15:21-15:25",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Refs (-want +got):\n%s", diff)
	}

	// RefAt finds a name from its first character to just after its last,
	// and Decl its declaration.
	for _, tc := range []struct {
		line, col int
		want      string
		decl      string
	}{
		{12, 29, "guard Ready 12:29-12:34", "guard Ready 11:11-11:16 decl"},
		{12, 34, "guard Ready 12:29-12:34", "guard Ready 11:11-11:16 decl"},
		{3, 30, "event GiveUp 3:28-3:34", "event GiveUp 8:11-8:17 decl"},
		{15, 8, "state B 15:8-15:9", "state B 4:13-4:14 decl"},
		{12, 10, "", ""},
	} {
		r, ok := RefAt(f, tc.line, tc.col)
		got := ""
		if ok {
			got = refString(r)
		}
		if got != tc.want {
			t.Errorf("RefAt(%d, %d) = %q, want %q", tc.line, tc.col, got, tc.want)
		}
		if !ok {
			continue
		}
		d, ok := Decl(f, r)
		if !ok || refString(d) != tc.decl {
			t.Errorf("Decl(%s) = %q, %v, want %q", refString(r), refString(d), ok, tc.decl)
		}
	}
}

// TestParsePartial shows that a file with a half-typed row still yields
// its machine and every item that parses, with the same diagnostics as
// Parse.
func TestParsePartial(t *testing.T) {
	t.Parallel()
	src := `// M is a machine.
machine M {
    initial A
    // B waits.
    state B wait
    event Go
    A -> B on Go
    B -> DONE o
    final DONE succeeded
`
	f, diags := ParsePartial("t.fsm", []byte(src))
	_, err := Parse("t.fsm", []byte(src))
	if diff := cmp.Diff(err.Error(), ErrorList(diags).Error()); diff != "" {
		t.Errorf("diagnostics differ from Parse's (-Parse +ParsePartial):\n%s", diff)
	}
	want := []string{
		`t.fsm:8:15: syntax error: unexpected token "o", expected outcome, on, internal, when, unless or the end of the row`,
		`t.fsm:10:1: syntax error: unexpected end of file, expected "}" to close machine M (opened at 2:11)`,
	}
	if diff := cmp.Diff(want, diagStrings(diags)); diff != "" {
		t.Errorf("diagnostics (-want +got):\n%s", diff)
	}
	if len(f.Machines) != 1 {
		t.Fatalf("got %d machines, want 1", len(f.Machines))
	}
	m := f.Machines[0]
	if m.Name != "M" || m.EndPos.Line != 10 {
		t.Errorf("machine %s ends at line %d, want M at 10", m.Name, m.EndPos.Line)
	}
	var got []string
	for _, r := range Refs(f) {
		got = append(got, refString(r))
	}
	wantRefs := []string{
		"state A 3:13-3:14 decl",
		"state B 5:11-5:12 decl",
		"event Go 6:11-6:13 decl",
		"state A 7:5-7:6",
		"state B 7:10-7:11",
		"event Go 7:15-7:17",
		"state DONE 9:11-9:15 decl",
	}
	if diff := cmp.Diff(wantRefs, got); diff != "" {
		t.Errorf("Refs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"M is a machine."}, m.Doc); diff != "" {
		t.Errorf("machine doc (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"B waits."}, m.Items[1].Doc); diff != "" {
		t.Errorf("state doc (-want +got):\n%s", diff)
	}

	// A file that parses comes back whole, without diagnostics.
	f, diags = ParsePartial("t.fsm", []byte(refsSrc))
	if diags != nil || len(f.Machines[0].Items) != 14 {
		t.Errorf("ParsePartial of a valid file: %d items, diagnostics %v", len(f.Machines[0].Items), diags)
	}
}

func TestDiagnosticEndAndSuggestion(t *testing.T) {
	t.Parallel()
	src := "\uFEFFmachine M {\n" +
		"    initial A\n" +
		"    final DONE succeeded\n" +
		"    event Go { note \"é/𝄞\".Amount; at time.Tme }\n" +
		"    A -> DNOE on Go\n" +
		"}\n"
	_, diags := Load("t.fsm", []byte(src))
	type span struct {
		Diag       string
		End        string
		Suggestion string
	}
	var got []span
	for _, d := range diags {
		end := d.End([]byte(src))
		got = append(got, span{d.String(), fmt.Sprintf("%d:%d", end.Line, end.Column), d.Suggestion()})
	}
	want := []span{
		// The go command imports ASCII paths only.
		{`t.fsm:4:21: invalid import path "é/𝄞"`, "4:33", ""},
		{"t.fsm:4:38: unknown type time.Tme; did you mean time.Time?", "4:46", "time.Time"},
		{"t.fsm:5:10: unknown state DNOE; did you mean DONE?", "5:14", "DONE"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ends and suggestions (-want +got):\n%s", diff)
	}

	// A character the lexer cannot read spans one character; the end of
	// the file spans nothing.
	bad := []byte("machine M {\n    initial A €\n}")
	_, diags = Load("t.fsm", bad)
	if len(diags) != 1 {
		t.Fatalf("diagnostics %v, want one", diags)
	}
	if end := diags[0].End(bad); diags[0].Pos.Column != 15 || end.Column != 16 || end.Offset != diags[0].Pos.Offset+3 {
		t.Errorf("%v ends at %d (offset %d)", diags[0], end.Column, end.Offset)
	}
	eof := Diagnostic{Pos: lexer.Position{Offset: len(bad), Line: 3, Column: 2}}
	if end := eof.End(bad); end != eof.Pos {
		t.Errorf("end of file ends at %v", end)
	}
}

// TestRefsOfUpgrades shows that an upgrade block's names are refs of the
// version they belong to: a rule's OLD state and its condition's event of
// the older machine, its NEW state and a default's event of the newer one.
func TestRefsOfUpgrades(t *testing.T) {
	t.Parallel()
	src := `machine OrderV1 {
    type "order"
    initial A
    state   B
    final   DONE succeeded
    event Go
    event Fin
    A -> B    on Go
    B -> DONE on Fin
}

machine Order {
    type "order"
    version 2
    upgrade from 1 {
        B -> C when Go
        A -> A
        default Go.n 1
    }
    initial A
    state   C
    final   DONE succeeded
    event Go { n int }
    event Fin
    A -> C    on Go
    C -> DONE on Fin
}
`
	f, err := Parse("t.fsm", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range Refs(f) {
		if r.Pos.Line >= 16 && r.Pos.Line <= 18 {
			got = append(got, fmt.Sprintf("%s %s", r.Machine.Name, refString(r)))
		}
	}
	want := []string{
		"OrderV1 state B 16:9-16:10",
		"Order state C 16:14-16:15",
		"OrderV1 event Go 16:21-16:23",
		"OrderV1 state A 17:9-17:10",
		"Order state A 17:14-17:15",
		"Order event Go 18:17-18:19",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("refs of the upgrade block (-want +got):\n%s", diff)
	}
	r, _ := RefAt(f, 16, 9)
	d, ok := Decl(f, r)
	if !ok || d.Pos.Line != 4 {
		t.Errorf("declaration of B in the upgrade block: %s, %v; want line 4", refString(d), ok)
	}
	if got := Version(f, f.Machines[1], 1); got != f.Machines[0] {
		t.Errorf("Version(Order, 1) = %v, want OrderV1", got)
	}
	if got := Version(f, f.Machines[1], 3); got != nil {
		t.Errorf("Version(Order, 3) = %v, want nil", got.Name)
	}
	// A suggestion in the middle of a message.
	dg := Diagnostic{Message: "unknown event Og of OrderV1; did you mean Go?; a condition names an event of the older version"}
	if got := dg.Suggestion(); got != "Go" {
		t.Errorf("Suggestion() = %q, want Go", got)
	}
}

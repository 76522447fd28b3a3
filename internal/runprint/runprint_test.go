package runprint_test

import (
	"strings"
	"testing"

	"github.com/fsmgen/fsmgen/internal/runprint"
	"github.com/fsmgen/fsmgen/runtime"
)

func TestEscape(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"acme", "acme"},
		{"café ✓ 日本", "café ✓ 日本"},
		{"a\x1b[31mred", `a\x1b[31mred`},
		{"title\x1b]0;owned\x07", `title\x1b]0;owned\x07`},
		{"tab\there\nline\r", `tab\there\nline\r`},
		{"del\x7f c1\u009b", `del\x7f c1\u009b`},
		{"bidi\u202egnp.exe\u2066x\u2069\u200f", `bidi\u202egnp.exe\u2066x\u2069\u200f`},
		{"bad\xffutf8", `bad\xffutf8`},
	} {
		if got := runprint.Escape(tc.in); got != tc.want {
			t.Errorf("Escape(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestTableEscapes writes a raw escape sequence through Table: it reaches
// the output escaped, the table's tabs and newlines kept as layout.
func TestTableEscapes(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	tw := runprint.Table(&b)
	tw.Write([]byte("A\tB\nx\x1b[2J\ty\n"))
	if err := tw.Flush(); err != nil {
		t.Fatal(err)
	}
	if want := "A      B\nx\\x1b[2J  y\n"; b.String() != want {
		t.Errorf("table = %q, want %q", b.String(), want)
	}
}

// TestRunConfiguration: a run in a parallel state shows each region's
// leaf under its state.
func TestRunConfiguration(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	if err := runprint.Run(&b, runtime.Run{ID: "r", Type: "review", Version: 1, State: "Pending|Running", Status: runtime.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	const want = "state       Pending|Running\n  region 1  Pending\n  region 2  Running\nstatus      running\n"
	if !strings.Contains(b.String(), want) {
		t.Errorf("run printed as:\n%s\nwant it to hold:\n%s", b.String(), want)
	}
}

package dsl

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// rows returns a machine of n transition rows.
func rows(n int) string {
	var b strings.Builder
	b.WriteString("machine Big {\n    initial S0\n    event E\n")
	for i := range n {
		fmt.Fprintf(&b, "    S%d -> S%d on E\n", i, i+1)
	}
	fmt.Fprintf(&b, "    final S%d succeeded\n}\n", n)
	return b.String()
}

func TestParseLimits(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("N", MaxNameLength+1)
	tests := []struct {
		name, src string
		want      string
	}{
		{"file size", "machine M {\n" + strings.Repeat(" ", MaxFileSize) + "}\n", "t.fsm:1:1: file of 4194318 bytes exceeds the limit of 4194304 bytes"},
		{"name length", door("initial " + long), "t.fsm:2:13: name of 256 bytes exceeds the limit of 255 bytes"},
		{"string length", door(`type "` + strings.Repeat("x", MaxStringLength) + `"`), "t.fsm:2:10: string of 4098 bytes exceeds the limit of 4096 bytes"},
		{"nesting", "machine M {\n  event E { { { {\n", "t.fsm:2:17: blocks nested deeper than 4"},
		{"ten million braces", strings.Repeat("{", 4<<20), "t.fsm:1:5: blocks nested deeper than 4"},
		{"rows", rows(MaxItems), "t.fsm:50002:12: more than 50000 declarations and rows in the file"},
		{"tokens", door("initial A", "event E", "A, "+strings.Repeat("A, ", MaxTokens/2)+"A -> A on E"), "t.fsm:4:374994: more than 250000 tokens in the file"},
	}
	for _, tc := range tests {
		_, err := Parse("t.fsm", []byte(tc.src))
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: Parse = %v, want %s", tc.name, err, tc.want)
		}
		_, ds := ParsePartial("t.fsm", []byte(tc.src))
		if len(ds) != 1 || ds[0].String() != tc.want {
			t.Errorf("%s: ParsePartial = %v, want %s", tc.name, ds, tc.want)
		}
	}
	// At the limits, a file parses.
	if _, err := Parse("t.fsm", []byte(rows(MaxItems-3))); err != nil {
		t.Errorf("a file of %d rows: %v", MaxItems-3, err)
	}
	if _, err := Parse("t.fsm", []byte(door("initial "+long[1:], "final B succeeded", "event E", "A -> B on E"))); err != nil {
		t.Errorf("a name of %d bytes: %v", MaxNameLength, err)
	}
}

// TestInvalidCharactersCostLinearMemory parses a file of nothing but
// characters the lexer cannot read: the diagnostics stop at MaxErrors, and
// the memory allocated stays within a small multiple of the file.
func TestInvalidCharactersCostLinearMemory(t *testing.T) {
	src := []byte(strings.Repeat("@", 16<<10))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := Parse("at.fsm", src)
	runtime.ReadMemStats(&after)
	list, ok := err.(ErrorList)
	if !ok || len(list) != MaxErrors+1 {
		t.Fatalf("Parse = %d diagnostics (%v), want %d", len(list), err, MaxErrors+1)
	}
	want := []string{
		`at.fsm:1:1: syntax error: invalid character '@'`,
		`at.fsm:1:101: syntax error: too many invalid characters (100); the rest of the file is not read`,
	}
	if diff := cmp.Diff(want, []string{list[0].String(), list[len(list)-1].String()}); diff != "" {
		t.Errorf("first and last diagnostics (-want +got):\n%s", diff)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 100*uint64(len(src)) {
		t.Errorf("parsing %d bytes allocated %d bytes, more than 100 times the input", len(src), alloc)
	}
}

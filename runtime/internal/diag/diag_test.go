package diag_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime/internal/diag"
)

func TestQuoteShortSanitize(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 31) + "é" + "tail" // é straddles byte 32
	type row struct{ In, Quote, Short, Sanitize string }
	want := []row{
		{"key", `"key"`, "key", "key"},
		{"a\tb", `"a\tb"`, `"a\tb"`, "a\tb"},
		{long, `"` + strings.Repeat("a", 31) + `"…`, `"` + strings.Repeat("a", 31) + `"…`, long},
		{"x\x00y\xffz", `"x\x00y\xffz"`, `"x\x00y\xffz"`, "x\uFFFDy\uFFFDz"},
	}
	var got []row
	for _, w := range want {
		got = append(got, row{w.In, diag.Quote(w.In), diag.Short(w.In), diag.Sanitize(w.In)})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

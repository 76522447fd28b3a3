package spectrace

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParseConfigurations reads steps whose run is in a parallel state:
// the leaves of its regions separated by " | ", kept as the persisted
// form, and the composites around all of them.
func TestParseConfigurations(t *testing.T) {
	t.Parallel()
	src := `trace review
start => Pending | Queued in Open
CheckStarted => Pending | Running in Open do Notify
Merge => Merged
`
	got, err := Parse("t.txt", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := []Trace{{Name: "review", Steps: []Step{
		{Line: 2, Start: true, Guards: map[string]bool{}, Leaf: "Pending|Queued", In: []string{"Open"}, Checked: true},
		{Line: 3, Event: "CheckStarted", Guards: map[string]bool{}, Leaf: "Pending|Running", In: []string{"Open"}, Do: []string{"Notify"}, Checked: true},
		{Line: 4, Event: "Merge", Guards: map[string]bool{}, Leaf: "Merged", Checked: true},
	}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Parse (-want +got):\n%s", diff)
	}
}

// TestParseConfigurationErrors rejects a configuration missing a leaf or
// a separator.
func TestParseConfigurationErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ step, want string }{
		{"Push => Pending |", "t.txt:2: no leaf after |"},
		{"Push => Pending | in Open", "t.txt:2: no leaf after |"},
		{"Push => | Running", "t.txt:2: no leaf after =>"},
		{"Push => in Open", "t.txt:2: no leaf after =>"},
		{"Push => Pending Running", `t.txt:2: unexpected "Running" after the leaf`},
		{"Push => Pending|Running", `t.txt:2: leaf "Pending|Running": want the leaves of a configuration separated by " | "`},
	} {
		_, err := Parse("t.txt", []byte("trace t\n"+tc.step+"\n"))
		if err == nil {
			t.Errorf("%s: no error, want %q", tc.step, tc.want)
			continue
		}
		if err.Error() != tc.want {
			t.Errorf("%s: error %q, want %q", tc.step, err, tc.want)
		}
	}
}

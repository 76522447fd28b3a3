package fsmimpl

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/fsmgen/fsmgen/runtime"
)

// NamedState is the constraint on a generated State that knows its name.
type NamedState interface {
	StateType
	String() string
}

// History is a history pseudostate of a generated machine: its name and
// the states it may record (the children of its composite for a shallow
// history, its leaves for a deep one). A generated machine keeps the
// record of each of its histories as a state plus one, 0 for none.
type History[S StateType] struct {
	Name    string
	Records []S
}

// HistoryOf returns the records rec of the histories hs (rec[i] is the
// record of hs[i], as a state plus one, 0 for none): each history's name
// mapped to the recorded state's name, for the histories that have one;
// nil when none has.
func HistoryOf[S NamedState](hs []History[S], rec []S) map[string]string {
	var out map[string]string
	for i, h := range hs {
		if i >= len(rec) || rec[i] == 0 {
			continue
		}
		if out == nil {
			out = make(map[string]string, len(hs))
		}
		out[h.Name] = (rec[i] - 1).String()
	}
	return out
}

// SetHistory sets the records rec of the histories hs from h, each
// history's name mapped to the name of the state it recorded, as
// HistoryOf returns them; the histories h does not name have no record.
// A name that is no history of hs, or a state that the history cannot
// record, is an error matched by errors.Is(err, runtime.ErrUnknownState)
// that names the first such entry in name order; rec is then left
// unchanged. typ is the machine's type name, for the error.
func SetHistory[S NamedState](typ string, hs []History[S], rec []S, h map[string]string) error {
	next := make([]S, len(rec))
	for _, name := range slices.Sorted(maps.Keys(h)) {
		i := slices.IndexFunc(hs, func(x History[S]) bool { return x.Name == name })
		if i < 0 || i >= len(rec) {
			return fmt.Errorf("%s: history %q: %w: no history pseudostate of the machine is named so", typ, truncate(name), runtime.ErrUnknownState)
		}
		j := slices.IndexFunc(hs[i].Records, func(s S) bool { return s.String() == h[name] })
		if j < 0 {
			names := make([]string, len(hs[i].Records))
			for k, s := range hs[i].Records {
				names[k] = s.String()
			}
			return fmt.Errorf("%s: history %s: %w %q: it records one of %s", typ, name, runtime.ErrUnknownState, truncate(h[name]), strings.Join(names, ", "))
		}
		next[i] = hs[i].Records[j] + 1
	}
	copy(rec, next)
	return nil
}

// EventlessLoop returns the error of a machine of def that went through
// the leaves path taking eventless rows and would take one more: the
// path up to the first state that repeats, or its first states when none
// does.
func EventlessLoop[S StateType](def *runtime.Definition, path []S) error {
	names := make([]string, len(path))
	for i, s := range path {
		names[i] = StateName(def, s)
	}
	return eventlessLoop(def, names)
}

// eventlessLoop is the error of EventlessLoop, of the states or
// configurations named path.
func eventlessLoop(def *runtime.Definition, path []string) error {
	const shown = 8
	var names []string
	seen := map[string]bool{}
	for _, s := range path {
		names = append(names, s)
		if seen[s] || len(names) == shown {
			break
		}
		seen[s] = true
	}
	return fmt.Errorf("%s: eventless rows loop: %s ...: more than %d eventless moves in a row", def.Type, strings.Join(names, " -> "), len(path)-1)
}

// RecordStep records, with rec, the move of a nested machine of def from
// leaf from to leaf to along the row of index row of def's Transitions,
// on event e (nil for an eventless or completion row): the transition
// names the states the row exits and enters and the row's outcome, and
// carries actions, the move's exit and entry actions (nil for none),
// which rec runs in its write. The caller applies the move, setting its
// state, only when RecordStep returns nil.
func RecordStep[S StateType](ctx context.Context, def *runtime.Definition, rec runtime.Recorder, from, to S, e runtime.Event, row int, actions func(context.Context) error) error {
	t := runtime.Transition{
		Machine: def.Type,
		Version: def.Version,
		From:    StateName(def, from),
		To:      StateName(def, to),
		Status:  StateSpecOf(def, to).Status,
		Actions: actions,
	}
	if e != nil {
		t.Event, t.Payload = e.EventName(), e
	}
	if row >= 0 && row < len(def.Transitions) {
		r := &def.Transitions[row]
		t.Outcome = r.Outcome
		t.Exited, t.Entered = slices.Clone(r.Exit), slices.Clone(r.Enter)
	}
	return rec.Record(ctx, t)
}

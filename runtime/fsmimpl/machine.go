package fsmimpl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/fsmgen/fsmgen/runtime"
)

// StateType is the constraint on a generated State: a state's number is its
// index in the States of the machine's runtime.Definition.
type StateType interface {
	~uint16
}

// Record records, with rec, the transition of the machine of def from state
// *state to state to on event e, with the row's outcome ("" for none), then
// applies it by setting *state to to. When recording fails it returns the
// recorder's error and leaves *state unchanged. A generated machine calls
// it only when it has a recorder; without one it sets its state itself,
// which the compiler inlines and which allocates nothing.
func Record[S StateType, E runtime.Event](ctx context.Context, def *runtime.Definition, rec runtime.Recorder, state *S, to S, e E, outcome string) error {
	status := runtime.StatusRunning
	if int(to) < len(def.States) {
		status = def.States[to].Status
	}
	err := rec.Record(ctx, runtime.Transition{
		Machine: def.Type,
		Version: def.Version,
		From:    StateName(def, *state),
		To:      StateName(def, to),
		Event:   e.EventName(),
		Payload: e,
		Status:  status,
		Outcome: outcome,
	})
	if err != nil {
		return err
	}
	*state = to
	return nil
}

// Follow fires event e on the machine of ix in state *state along the row
// of the table on e from that state, which must be unguarded: it records
// the transition with rec, when rec is not nil, with the row's target and
// outcome, then applies it. When the table has no such row it returns a
// *runtime.TransitionError matching runtime.ErrIllegalTransition. It is
// the general path of a generated method whose fast path, without a
// recorder, sets the state itself; its cost depends on the rows from
// *state, not on the machine's size.
func Follow[S StateType](ctx context.Context, ix *Index[S], rec runtime.Recorder, state *S, e runtime.Event) error {
	row, ok := ix.row(*state, e.EventName())
	if !ok || ix.def.Transitions[row].Guard != "" {
		return Refuse(ix, *state, e)
	}
	t, to := &ix.def.Transitions[row], ix.targets[row]
	switch {
	case to < 0:
		return fmt.Errorf("%s: row %s -> %s on %s: %w %q", ix.def.Type, t.From, t.To, t.Event, runtime.ErrUnknownState, t.To)
	case rec == nil:
		*state = S(to)
		return nil
	}
	return Record(ctx, ix.def, rec, state, S(to), e, t.Outcome)
}

// Refuse returns the error of event e refused by the machine of ix in
// state: a *runtime.TransitionError matching runtime.ErrGuardRejected that
// names the guards of the rows on e from state, in the order tried, when
// there are such rows, else one matching runtime.ErrIllegalTransition (as
// for a nil e).
func Refuse[S StateType](ix *Index[S], state S, e runtime.Event) error {
	te := &runtime.TransitionError{Machine: ix.def.Type, State: StateName(ix.def, state), Err: runtime.ErrIllegalTransition}
	if e == nil {
		return te
	}
	te.Event = e.EventName()
	for _, i := range ix.from(state) {
		if t := &ix.def.Transitions[i]; t.Event == te.Event && t.Guard != "" {
			te.Guards = append(te.Guards, t.Guard)
		}
	}
	if len(te.Guards) > 0 {
		te.Err = runtime.ErrGuardRejected
	}
	return te
}

// StateName returns the name of state s of def, its persisted form, or
// "State(n)" for a number that is no state. In a nested machine the
// leaves, def's States, are numbered first, then the composite states,
// def's Composites.
func StateName[S StateType](def *runtime.Definition, s S) string {
	if int(s) < len(def.States) {
		return def.States[s].Name
	}
	if i := int(s) - len(def.States); i < len(def.Composites) {
		return def.Composites[i].Name
	}
	return fmt.Sprintf("State(%d)", s)
}

// ParseState returns the state of the machine of ix named name, a leaf:
// the state of a run. An unknown name, and the name of a composite state
// (a run is always in one of its leaves), give an error matched by
// errors.Is(err, runtime.ErrUnknownState).
func ParseState[S StateType](ix *Index[S], name string) (S, error) {
	s, ok := ix.id(name)
	switch {
	case !ok:
		return 0, fmt.Errorf("%s: %w %q", ix.def.Type, runtime.ErrUnknownState, truncate(name))
	case int(s) >= len(ix.def.States):
		return 0, fmt.Errorf("%s: %w %q: a composite state, and a run is always in one of its leaves", ix.def.Type, runtime.ErrUnknownState, name)
	}
	return s, nil
}

// MarshalState returns the name of state s of def as text, or an error
// matched by errors.Is(err, runtime.ErrUnknownState) for a number that is
// no state.
func MarshalState[S StateType](def *runtime.Definition, s S) ([]byte, error) {
	if int(s) >= len(def.States) {
		return nil, fmt.Errorf("%s: %w: %d", def.Type, runtime.ErrUnknownState, int(s))
	}
	return []byte(def.States[s].Name), nil
}

// Decoder rebuilds the events of one machine from their names and JSON
// payloads; E is the machine's runtime.Event interface.
type Decoder[E runtime.Event] struct {
	def   *runtime.Definition
	types map[string]reflect.Type
}

// NewDecoder returns the Decoder of the events of the machine of def, given
// one value of each event type.
func NewDecoder[E runtime.Event](def *runtime.Definition, events ...E) *Decoder[E] {
	d := &Decoder[E]{def: def, types: make(map[string]reflect.Type, len(events))}
	for _, e := range events {
		d.types[e.EventName()] = reflect.TypeOf(e)
	}
	return d
}

// Decode rebuilds the event named name from its JSON payload. No payload
// (nil or empty) gives the zero event, and so does null for an event
// without fields; null for an event with fields is an error, as it is no
// object of them. An unknown name gives an error matched by
// errors.Is(err, runtime.ErrUnknownEvent); fields the event lacks, a key
// that matches a field in another case only, a key given twice, values of
// the wrong type, and anything but white space after the payload's JSON
// value are errors.
func (d *Decoder[E]) Decode(name string, payload []byte) (E, error) {
	var zero E
	t, ok := d.types[name]
	if !ok {
		return zero, UnknownEvent(d.def, name)
	}
	v := reflect.New(t)
	if len(payload) > 0 {
		dec := json.NewDecoder(bytes.NewReader(payload))
		dec.DisallowUnknownFields()
		err := dec.Decode(v.Interface())
		if err == nil {
			// A second value, or anything that is not white space,
			// after the first one.
			if _, terr := dec.Token(); !errors.Is(terr, io.EOF) {
				err = errTrailing
			}
		}
		if err == nil {
			err = exactKeys(t, payload)
		}
		if err != nil {
			return zero, fmt.Errorf("%s: decode event %s: %w", d.def.Type, name, err)
		}
	}
	return v.Elem().Interface().(E), nil
}

// UnknownEvent returns the error of an event name that is no event of the
// machine of def, matched by errors.Is(err, runtime.ErrUnknownEvent).
func UnknownEvent(def *runtime.Definition, name string) error {
	return fmt.Errorf("%s: %w %q", def.Type, runtime.ErrUnknownEvent, truncate(name))
}

// NotDriven returns the error of a handler asked for in state, a final state
// or one that waits, matched by errors.Is(err, runtime.ErrNotDriven).
func NotDriven(def *runtime.Definition, state string) error {
	return fmt.Errorf("%s: state %s: %w", def.Type, state, runtime.ErrNotDriven)
}

// truncate shortens a name quoted in an error message to a readable prefix.
func truncate(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	return s[:max] + "..."
}

var (
	errTrailing    = errors.New("unexpected data after the payload's JSON value")
	errNullPayload = errors.New("the payload is null: want a JSON object of the event's fields")
)

// exactKeys checks the keys of a payload that decoded into a value of type
// t: encoding/json matches a key to a field whatever its case and lets a
// later duplicate key win, so that {"N":1} or {"n":1,"n":2} would decode;
// a payload must name each field once, as it is spelt.
func exactKeys(t reflect.Type, payload []byte) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok == nil {
		// An explicit null stands for no payload only for an event
		// that has none.
		names := map[string]bool{}
		if fieldNames(t, names); len(names) > 0 {
			return errNullPayload
		}
		return nil
	}
	if tok != json.Delim('{') {
		return nil
	}
	names := map[string]bool{}
	fieldNames(t, names)
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		switch {
		case !names[key]:
			return fmt.Errorf("json: unknown field %q (field names are case-sensitive)", truncate(key))
		case seen[key]:
			return fmt.Errorf("json: duplicate field %q", truncate(key))
		}
		seen[key] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return err
		}
	}
	return nil
}

// fieldNames adds the JSON names of the fields of the struct type t to
// names, the fields of embedded structs included.
func fieldNames(t reflect.Type, names map[string]bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
			continue
		case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
			fieldNames(f.Type, names)
			continue
		case !f.IsExported():
			continue
		case name == "":
			name = f.Name
		}
		names[name] = true
	}
}

// StateSpecOf returns the runtime.StateSpec of state s of def, or, for a
// number that is no state, a spec with status runtime.StatusRunning and no
// name.
func StateSpecOf[S StateType](def *runtime.Definition, s S) runtime.StateSpec {
	if int(s) < len(def.States) {
		return def.States[s]
	}
	return runtime.StateSpec{Status: runtime.StatusRunning}
}

// UnmarshalState sets *s to the state of the machine of ix named text, or
// returns the error of ParseState and leaves *s unchanged.
func UnmarshalState[S StateType](ix *Index[S], s *S, text []byte) error {
	v, err := ParseState(ix, string(text))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

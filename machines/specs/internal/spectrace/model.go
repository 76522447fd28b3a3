package spectrace

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/fsmgen/fsmgen/dsl"
	"github.com/fsmgen/fsmgen/runtime"
)

// Model runs a checked machine by the semantics dsl/doc.go gives nested
// machines, from its flattened rows (dsl.Transition's From, Exit, Enter,
// History, Done), with a clock of its own: the reference a replay checks
// a trace against, and the scheduler of the timers of an implementation
// that has none (the generated code).
type Model struct {
	m      *dsl.Machine
	leaf   *dsl.State
	now    time.Duration
	since  map[*dsl.State]time.Duration
	by     map[*dsl.State]json.RawMessage
	fired  map[*dsl.Timer]bool
	hist   map[*dsl.History]*dsl.State
	acts   []string
	guards map[string]bool
}

// NewModel returns the model of m, not started.
func NewModel(m *dsl.Machine) *Model {
	return &Model{
		m:     m,
		since: map[*dsl.State]time.Duration{},
		by:    map[*dsl.State]json.RawMessage{},
		fired: map[*dsl.Timer]bool{},
		hist:  map[*dsl.History]*dsl.State{},
	}
}

// Leaf returns the leaf the run is in.
func (r *Model) Leaf() string { return r.leaf.Name }

// Actions returns the actions run since the last call.
func (r *Model) Actions() []string {
	a := r.acts
	r.acts = nil
	return a
}

// SetGuards sets which guards admit events.
func (r *Model) SetGuards(g map[string]bool) { r.guards = g }

// Start enters the initial leaf and its ancestors, outermost first, then
// takes the eventless rows enabled there.
func (r *Model) Start() error {
	leaf := r.m.Initial
	path := append(reverse(leaf.Ancestors()), leaf)
	r.enter(path, nil)
	r.leaf = leaf
	return r.settle()
}

// Fire sends an event; taken is false when it is refused.
func (r *Model) Fire(event string, payload json.RawMessage) (taken bool, err error) {
	for _, t := range r.m.Transitions {
		if t.From != r.leaf || t.Event == nil || t.Event.Name != event || !r.admits(t) {
			continue
		}
		r.take(t, payload)
		return true, r.settle()
	}
	return false, nil
}

// Advance moves the clock by d, firing each timer that falls due on the
// way, earliest first, through fire (which must send the event to the
// model with Fire, and may send it elsewhere too).
func (r *Model) Advance(d time.Duration, fire func(event string) error) error {
	end := r.now + d
	for {
		tm, due := r.nextTimer()
		if tm == nil || due > end {
			break
		}
		r.now = due
		r.fired[tm] = true
		if err := fire(tm.Event.Name); err != nil {
			return err
		}
	}
	r.now = end
	return nil
}

// nextTimer returns the pending timer of the active states that falls due
// first, and when; of timers due at the same instant, the outermost
// state's, and of one state's, the first written.
func (r *Model) nextTimer() (*dsl.Timer, time.Duration) {
	var (
		best *dsl.Timer
		when time.Duration
	)
	active := reverse(append([]*dsl.State{r.leaf}, r.leaf.Ancestors()...))
	for _, s := range active {
		for _, tm := range s.Timers {
			if r.fired[tm] {
				continue
			}
			due := r.since[s] + r.duration(tm, r.by[s])
			if best == nil || due < when {
				best, when = tm, due
			}
		}
	}
	return best, when
}

// duration is a timer's duration, for a field timer the field of the
// entering event's payload clamped to [Min, Max].
func (r *Model) duration(tm *dsl.Timer, payload json.RawMessage) time.Duration {
	if tm.Field == nil {
		return tm.After
	}
	d := tm.Min
	var fields map[string]any
	if json.Unmarshal(payload, &fields) == nil {
		if s, ok := fields[tm.Field.Name].(string); ok {
			if v, err := time.ParseDuration(s); err == nil {
				d = v
			}
		}
	}
	return min(max(d, tm.Min), tm.Max)
}

func (r *Model) admits(t *dsl.Transition) bool {
	if t.Guard == nil {
		return true
	}
	return r.guards[t.Guard.Name] != t.Negated
}

// settle takes enabled eventless and completion rows, innermost first.
func (r *Model) settle() error {
	var path []string
	for range 64 {
		var next *dsl.Transition
		for _, t := range r.m.Transitions {
			if t.From == r.leaf && t.Event == nil && r.admits(t) && (!t.Done || r.complete(t.Source)) {
				next = t
				break
			}
		}
		if next == nil {
			return nil
		}
		path = append(path, r.leaf.Name)
		r.take(next, nil)
	}
	return fmt.Errorf("eventless rows loop: %s", strings.Join(path, " -> "))
}

// complete reports whether the active child of c is a final child.
func (r *Model) complete(c *dsl.State) bool {
	for s := r.leaf; s != nil; s = s.Parent {
		if s.Parent == c {
			return s.Done
		}
	}
	return false
}

func (r *Model) take(t *dsl.Transition, payload json.RawMessage) {
	for _, x := range t.Exit {
		for _, h := range x.History {
			if h.Deep {
				r.hist[h] = r.leaf
				continue
			}
			for s := r.leaf; s != nil; s = s.Parent {
				if s.Parent == x {
					r.hist[h] = s
				}
			}
		}
		for _, a := range x.Exit {
			r.acts = append(r.acts, a.Name)
		}
		delete(r.since, x)
		delete(r.by, x)
	}
	enter := t.Enter
	to := t.To
	if t.History != nil {
		if rec := r.hist[t.History]; rec != nil {
			c := t.History.Parent
			enter = nil
			for _, s := range t.Enter {
				if c.In(s) {
					enter = append(enter, s)
				}
			}
			var down []*dsl.State
			for s := rec; s != c; s = s.Parent {
				down = append(down, s)
			}
			enter = append(enter, reverse(down)...)
			for s := rec; s.Composite(); {
				s = s.InitialChild
				enter = append(enter, s)
			}
			to = enter[len(enter)-1]
		}
	}
	r.enter(enter, payload)
	r.leaf = to
}

func (r *Model) enter(states []*dsl.State, payload json.RawMessage) {
	for _, s := range states {
		r.since[s] = r.now
		r.by[s] = payload
		for _, tm := range s.Timers {
			r.fired[tm] = false
		}
		for _, a := range s.Entry {
			r.acts = append(r.acts, a.Name)
		}
	}
}

func reverse(s []*dsl.State) []*dsl.State {
	out := make([]*dsl.State, len(s))
	for i, x := range s {
		out[len(s)-1-i] = x
	}
	return out
}

// GoPayload turns a payload as a trace writes it into the JSON the
// generated DecodeEvent reads: a time.Duration field's Go duration
// ("30m") becomes its nanoseconds.
func GoPayload(m *dsl.Machine, event string, payload json.RawMessage) ([]byte, error) {
	if payload == nil {
		return []byte("{}"), nil
	}
	var ev *dsl.Event
	for _, e := range m.Events {
		if e.Name == event {
			ev = e
		}
	}
	if ev == nil {
		return nil, fmt.Errorf("machine %s has no event %s", m.Name, event)
	}
	var fields map[string]any
	if err := json.Unmarshal(payload, &fields); err != nil {
		return nil, fmt.Errorf("payload of %s: %w", event, err)
	}
	for _, f := range ev.Fields {
		if f.Type.Path != "time" || f.Type.Name != "Duration" || f.Type.Slice {
			continue
		}
		s, ok := fields[f.Name].(string)
		if !ok {
			continue
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return nil, fmt.Errorf("payload of %s, field %s: %w", event, f.Name, err)
		}
		fields[f.Name] = int64(d)
	}
	return json.Marshal(fields)
}

// Subject returns the model as a Subject, reading its guards from guards:
// replayed on it, a trace is checked against the .fsm file's semantics
// alone.
func (r *Model) Subject(guards map[string]bool) Subject {
	return &modelSubject{r: r, guards: guards}
}

type modelSubject struct {
	r      *Model
	guards map[string]bool
}

func (s *modelSubject) Start(context.Context) error {
	s.r.SetGuards(s.guards)
	return s.r.Start()
}

func (s *modelSubject) Fire(_ context.Context, event string, payload []byte) error {
	s.r.SetGuards(s.guards)
	taken, err := s.r.Fire(event, goToTrace(s.r.m, event, payload))
	if err == nil && !taken {
		return fmt.Errorf("%s in %s: %w", event, s.r.Leaf(), runtime.ErrIllegalTransition)
	}
	return err
}

func (s *modelSubject) Leaf(context.Context) (string, error) { return s.r.Leaf(), nil }

func (s *modelSubject) Actions() []string { return s.r.Actions() }

// goToTrace turns the generated code's JSON back into a trace's: a
// time.Duration field's nanoseconds become a Go duration.
func goToTrace(m *dsl.Machine, event string, payload []byte) json.RawMessage {
	var fields map[string]any
	if json.Unmarshal(payload, &fields) != nil || len(fields) == 0 {
		return nil
	}
	for _, e := range m.Events {
		if e.Name != event {
			continue
		}
		for _, f := range e.Fields {
			if n, ok := fields[f.Name].(float64); ok && f.Type.Path == "time" && f.Type.Name == "Duration" && !f.Type.Slice {
				fields[f.Name] = time.Duration(n).String()
			}
		}
	}
	out, _ := json.Marshal(fields)
	return out
}

package dsl

import (
	"strings"
	"time"
	"unicode"

	"github.com/alecthomas/participle/v2/lexer"
)

// Spec is a checked .fsm file: its machines, every name resolved and every
// rule of the language verified. The generator works from a Spec only.
type Spec struct {
	// Filename is the file's path as given to Parse.
	Filename string
	Machines []*Machine
}

// Machine is a checked machine.
type Machine struct {
	Pos lexer.Position
	// Name is the machine's name as written, a Go identifier.
	Name string
	Doc  []string
	// Type is the persisted type name and Version the definition version.
	Type    string
	Version int
	// Package is the generated Go package's name.
	Package string

	States      []*State
	Initial     *State
	Events      []*Event
	Guards      []*Guard
	Transitions []*Transition

	// Cancel is the event a run's owner fires to cancel a run, nil when the
	// machine declares none (its runs cannot be cancelled by the runtime).
	Cancel *Event

	// Upgrades say how the runs of older versions of the machine, declared
	// in the same file, move to this one: one per upgrade declaration.
	Upgrades []*Upgrade
}

// State is a checked state.
type State struct {
	Pos  lexer.Position
	Name string
	Doc  []string
	// GoName is the CamelCase form of Name used in generated identifiers.
	GoName  string
	Initial bool
	// Status is "" for a non-terminal state, else succeeded, failed or cancelled.
	Status  string
	Outcome string
	Wait    bool
	Retry   *Retry
	Timers  []*Timer
	// Index is the state's position in Machine.States.
	Index int
}

// RuntimeFired returns the events the runtime fires itself rather than a
// caller: the events of the states' timers and of their retry policies'
// else clauses.
func (m *Machine) RuntimeFired() map[*Event]bool {
	out := map[*Event]bool{}
	for _, s := range m.States {
		for _, tm := range s.Timers {
			out[tm.Event] = true
		}
		if s.Retry != nil && s.Retry.Exhausted != nil {
			out[s.Retry.Exhausted] = true
		}
	}
	return out
}

// Sender says who may send event e to a run in state s (nil for any
// state): "" when callers may (Signal, the typed handle, fsmctl runs
// signal), else who sends it: "the handler of S", "the timer of S" or "the
// retry policy of S". It is the rule of runtime.Definition.CallerRefusal:
// the cancel event and
// events declared external are callers' in every state; timers' and retry
// policies' else events are the runtime's; a driven state's rows' events
// are its handler's; a wait state's rows' events are callers', and an
// event that no wait state has a row on is a handler's in every state.
func (m *Machine) Sender(s *State, e *Event) string {
	if e == m.Cancel || e.External {
		return ""
	}
	for _, st := range m.States {
		for _, tm := range st.Timers {
			if tm.Event == e {
				return "the timer of " + st.Name
			}
		}
		if st.Retry != nil && st.Retry.Exhausted == e {
			return "the retry policy of " + st.Name
		}
	}
	waits := false
	var handler *State
	for _, t := range m.Transitions {
		if t.Event != e {
			continue
		}
		switch {
		case t.From.Wait:
			waits = true
		case t.From == s:
			return "the handler of " + s.Name
		case handler == nil:
			handler = t.From
		}
	}
	if waits || handler == nil {
		return ""
	}
	return "the handler of " + handler.Name
}

// CallerEvent reports whether callers may send e in some state of the
// machine (Sender with no state): the typed handle has a method for it.
func (m *Machine) CallerEvent(e *Event) bool { return m.Sender(nil, e) == "" }

// Terminal reports whether the state is final.
func (s *State) Terminal() bool { return s.Status != "" }

// Driven reports whether the runtime calls a handler in this state.
func (s *State) Driven() bool { return !s.Terminal() && !s.Wait }

// Retry is a state's retry policy: a preset, or the numbers written out.
type Retry struct {
	// Preset names one of the runtime's policies; the other fields are zero.
	Preset      string
	MaxAttempts int
	// FromPolicy makes MaxAttempts a bound (retry up to N): each run's
	// policy snapshot chooses its attempts within it.
	FromPolicy   bool
	Initial      time.Duration
	Factor       float64
	Max          time.Duration
	Jitter       float64
	NonRetryable []string
	// Exhausted is the event fired when the policy gives up, nil when the
	// state declares none.
	Exhausted    *Event
	ExhaustedPos lexer.Position
}

// RetryPresets are the runtime's named retry policies.
var RetryPresets = []string{"validation", "database", "externalService", "payment", "background"}

// Timer fires Event after the run has spent After in the state.
type Timer struct {
	Pos   lexer.Position
	After time.Duration
	// Text is the duration as written.
	Text  string
	Event *Event
}

// Event is a checked event.
type Event struct {
	Pos    lexer.Position
	Name   string
	Doc    []string
	GoName string
	Fields []*PayloadField
	// External marks an event that callers may send in every state,
	// although the runtime fires it (a timer's or a retry's else event) or
	// a driven state's handler returns it (see Machine.Sender).
	External bool
}

// PayloadField is a payload field of an event.
type PayloadField struct {
	Pos lexer.Position
	// Name is the field's name as written, also its JSON name; GoName the
	// exported Go field name.
	Name   string
	GoName string
	Type   Type
}

// Type is a field's Go type.
type Type struct {
	Slice bool
	// Path is the import path of a named type's package ("time" for
	// time.Time), empty for a builtin.
	Path string
	Name string
}

// String returns the type as Go source would name it from outside its
// package, using the last element of the import path: []byte, time.Time,
// money.Amount.
func (t Type) String() string {
	s := t.Name
	if t.Path != "" {
		s = t.Path[strings.LastIndex(t.Path, "/")+1:] + "." + t.Name
	}
	if t.Slice {
		s = "[]" + s
	}
	return s
}

// Guard is a checked guard.
type Guard struct {
	Pos    lexer.Position
	Name   string
	Doc    []string
	GoName string
	// Events are the distinct events the guard is used with, in order of
	// first use. With one event the generated method takes that event's
	// type; with several, the Event interface.
	Events []*Event
}

// Transition is one row of the transition table, after FROM lists and *
// have been expanded: one Transition per source state, in the order the
// machine tries them.
type Transition struct {
	Pos   lexer.Position
	Doc   []string
	From  *State
	To    *State
	Event *Event
	// Guard is nil for an unguarded row; Negated inverts it.
	Guard   *Guard
	Negated bool
	// Outcome is the business outcome of a terminal target: the row's own,
	// else the target state's.
	Outcome string
	// Star reports that the row was written with * as its FROM. The rows
	// that one written row expands to share its Pos.
	Star bool
}

// goName turns a .fsm name into an exported Go identifier: UPPER_SNAKE and
// lower_snake become CamelCase, lowerCamel gets its first letter raised,
// and common initialisms stay upper case (ID, URL, HTML...), also inside a
// lowerCamel name: workerId becomes WorkerID.
func goName(s string) string {
	parts := strings.FieldsFunc(s, func(r rune) bool { return r == '_' })
	var b strings.Builder
	for _, p := range parts {
		if isUpper(p) {
			if initialisms[p] {
				b.WriteString(p)
				continue
			}
			p = strings.ToLower(p)
		}
		for _, w := range camelWords(p) {
			if up := strings.ToUpper(w); initialisms[up] {
				b.WriteString(up)
				continue
			}
			b.WriteString(upperFirst(w))
		}
	}
	out := b.String()
	if out == "" || !unicode.IsLetter(rune(out[0])) {
		out = "X" + out
	}
	return out
}

// camelWords splits a lowerCamel or CamelCase name into its words, so
// that an initialism inside it is recognised: workerId -> worker Id,
// HTMLAvailable -> HTML Available, costUSD -> cost USD.
func camelWords(s string) []string {
	rs := []rune(s)
	var words []string
	start := 0
	for i := 1; i < len(rs); i++ {
		lowerToUpper := !unicode.IsUpper(rs[i-1]) && unicode.IsUpper(rs[i])
		acronymEnd := unicode.IsUpper(rs[i-1]) && unicode.IsUpper(rs[i]) && i+1 < len(rs) && unicode.IsLower(rs[i+1])
		if lowerToUpper || acronymEnd {
			words = append(words, string(rs[start:i]))
			start = i
		}
	}
	return append(words, string(rs[start:]))
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func isUpper(s string) bool {
	hasLetter := false
	for _, r := range s {
		if unicode.IsLower(r) {
			return false
		}
		if unicode.IsLetter(r) {
			hasLetter = true
		}
	}
	return hasLetter
}

var initialisms = map[string]bool{
	"API": true, "HTML": true, "HTTP": true, "ID": true, "JSON": true,
	"SQL": true, "URL": true, "UUID": true, "URI": true, "CSV": true,
}

// snakeCase turns a CamelCase name into snake_case: RetrieveOrGenerate ->
// retrieve_or_generate, FCHA -> fcha, HTTPServer -> http_server.
func snakeCase(s string) string {
	var b strings.Builder
	rs := []rune(s)
	for i, r := range rs {
		if unicode.IsUpper(r) {
			if i > 0 && (unicode.IsLower(rs[i-1]) || (i+1 < len(rs) && unicode.IsLower(rs[i+1]) && unicode.IsUpper(rs[i-1]))) {
				b.WriteByte('_')
			}
			b.WriteRune(unicode.ToLower(r))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

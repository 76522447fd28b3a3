package fsmtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime"
)

// Machine describes a generated machine to the checks.
type Machine struct {
	// Definition is the machine's definition: its table is the truth the
	// machine's code is checked against.
	Definition runtime.Definition
	// Events holds a value of every event of the machine.
	Events []runtime.Event
	// New returns a machine in the state named state whose guards admit an
	// event exactly when admit maps their name to true, recording through
	// rec when rec is not nil.
	New func(state string, admit map[string]bool, rec runtime.Recorder) (Instance, error)
	// Decode rebuilds an event from its name and JSON payload.
	Decode func(name string, payload []byte) (runtime.Event, error)
	// Driver returns the machine's runtime.Driver with guards admitting as
	// admit says. Nil skips the driver's checks.
	Driver func(admit map[string]bool) runtime.Driver
}

// Instance is one machine built by Machine.New.
type Instance interface {
	Fire(ctx context.Context, e runtime.Event) error
	// State returns the name of the current state.
	State() string
}

// Settler is implemented by the Instance of a machine with eventless
// rows: Settle takes those enabled in its state, as the generated Settle
// does. The paths of the checks take an eventless row with it.
type Settler interface {
	Settle(ctx context.Context) error
}

// Run runs every check as a subtest of t and, when the environment
// variable TracesEnv names a directory, writes the machine's Traces there.
func Run(t *testing.T, m Machine) {
	t.Helper()
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			for _, err := range c.run(m) {
				t.Error(err)
			}
		})
	}
	writeTraces(t, m)
}

// Check runs every check and returns what failed.
func Check(m Machine) []error {
	var errs []error
	for _, c := range checks {
		for _, err := range c.run(m) {
			errs = append(errs, fmt.Errorf("%s: %w", c.name, err))
		}
	}
	return errs
}

var checks = []struct {
	name string
	run  func(Machine) []error
}{
	{"Definition", checkDefinition},
	{"EveryStateEventAndGuardOutcome", checkEveryPair},
	{"RecordsBeforeApplying", checkRecordFirst},
	{"FinalStatesRejectEveryEvent", checkFinal},
	{"ShortestPathToEveryState", checkShortest},
	{"PathsCoverEveryTransition", checkCover},
	{"DecodeEvent", checkDecode},
	{"Driver", checkDriver},
}

// log is a recorder that keeps what it is given.
type log struct{ got []runtime.Transition }

// Record calls the transition's actions, as every Recorder does, and
// keeps the transition (without its Actions function, so that it compares)
// when they succeed.
func (l *log) Record(ctx context.Context, t runtime.Transition) error {
	if t.Actions != nil {
		if err := t.Actions(ctx); err != nil {
			return err
		}
		t.Actions = nil
	}
	l.got = append(l.got, t)
	return nil
}

// anyFields compares payloads whatever the visibility of their fields.
var anyFields = cmp.Exporter(func(reflect.Type) bool { return true })

// expectRow computes from the table alone what firing event in state does
// when the guards in admit admit it: the index of the row that fires, or
// the refusal.
func expectRow(d runtime.Definition, state, event string, admit map[string]bool) (int, error) {
	matched := false
	for i, r := range d.Transitions {
		if r.From != state || r.Event != event {
			continue
		}
		matched = true
		if r.Guard == "" || admit[r.Guard] != r.Negated {
			return i, nil
		}
	}
	if matched {
		return -1, runtime.ErrGuardRejected
	}
	return -1, runtime.ErrIllegalTransition
}

// guardsOf returns the distinct guards of the rows from state on event.
func guardsOf(d runtime.Definition, state, event string) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range d.Transitions {
		if r.From == state && r.Event == event && r.Guard != "" && !seen[r.Guard] {
			seen[r.Guard] = true
			out = append(out, r.Guard)
		}
	}
	return out
}

// admitRow returns guard outcomes under which row i is the row that fires:
// every earlier guarded row of its (state, event) refuses, row i admits.
func admitRow(d runtime.Definition, i int) map[string]bool {
	r := d.Transitions[i]
	admit := map[string]bool{}
	for _, p := range d.Transitions[:i] {
		if p.From == r.From && p.Event == r.Event && p.Guard != "" {
			admit[p.Guard] = p.Negated
		}
	}
	if r.Guard != "" {
		admit[r.Guard] = !r.Negated
	}
	return admit
}

func event(m Machine, name string) (runtime.Event, error) {
	for _, e := range m.Events {
		if e.EventName() == name {
			return e, nil
		}
	}
	return nil, fmt.Errorf("no value of event %s in Machine.Events", name)
}

func status(d runtime.Definition, state string) runtime.Status {
	s, _ := d.State(state)
	return s.Status
}

func checkDefinition(m Machine) []error {
	d := m.Definition
	if err := d.Validate(); err != nil {
		return []error{err}
	}
	var errs []error
	names := map[string]bool{}
	for _, e := range m.Events {
		names[e.EventName()] = true
	}
	for _, e := range d.Events {
		if !names[e.Name] {
			errs = append(errs, fmt.Errorf("event %s of the definition has no value in Machine.Events", e.Name))
		}
	}
	if len(m.Events) != len(d.Events) {
		errs = append(errs, fmt.Errorf("%d event values for %d events", len(m.Events), len(d.Events)))
	}
	return errs
}

func checkEveryPair(m Machine) []error {
	var errs []error
	d := m.Definition
	ctx := context.Background()
	for _, s := range d.States {
		for _, e := range m.Events {
			guards := guardsOf(d, s.Name, e.EventName())
			for mask := 0; mask < 1<<len(guards); mask++ {
				admit := map[string]bool{}
				for i, g := range guards {
					admit[g] = mask&(1<<i) != 0
				}
				name := fmt.Sprintf("%s on %s with guards %v", s.Name, e.EventName(), admit)
				i, wantErr := expectRow(d, s.Name, e.EventName(), admit)
				var moves []moved
				if wantErr == nil {
					var loop bool
					if moves, loop = follow(d, i, e.EventName(), admit, map[string]string{}); loop {
						continue
					}
				}
				l := &log{}
				inst, err := m.New(s.Name, admit, l)
				if err != nil {
					return append(errs, fmt.Errorf("%s: New: %w", name, err))
				}
				err = inst.Fire(ctx, e)
				wantState := ""
				if len(moves) > 0 {
					wantState = d.Transitions[moves[len(moves)-1].row].To
				}
				if wantErr != nil {
					wantState = s.Name
				}
				if got := inst.State(); got != wantState {
					errs = append(errs, fmt.Errorf("%s: state %s, want %s", name, got, wantState))
				}
				if wantErr != nil {
					var te *runtime.TransitionError
					switch {
					case !errors.Is(err, wantErr) || !errors.As(err, &te):
						errs = append(errs, fmt.Errorf("%s: error %v, want a *runtime.TransitionError matching %v", name, err, wantErr))
					case te.State != s.Name || te.Event != e.EventName() || te.Machine != d.Type:
						errs = append(errs, fmt.Errorf("%s: the error names %s/%s/%s", name, te.Machine, te.State, te.Event))
					}
					if len(l.got) != 0 {
						errs = append(errs, fmt.Errorf("%s: a refused event was recorded: %v", name, l.got))
					}
					continue
				}
				if err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", name, err))
					continue
				}
				want := transitions(d, moves, e)
				if diff := cmp.Diff(want, l.got, anyFields); diff != "" {
					errs = append(errs, fmt.Errorf("%s: recorded (-want +got):\n%s", name, diff))
				}
			}
		}
	}
	return errs
}

func checkRecordFirst(m Machine) []error {
	var errs []error
	boom := errors.New("storage unavailable")
	failing := runtime.RecorderFunc(func(context.Context, runtime.Transition) error { return boom })
	for i, r := range m.Definition.Transitions {
		if r.Event == "" || alternate(m.Definition, i) {
			// Taken after another row, or with a history record.
			continue
		}
		e, err := event(m, r.Event)
		if err != nil {
			return append(errs, err)
		}
		inst, err := m.New(r.From, admitRow(m.Definition, i), failing)
		if err != nil {
			return append(errs, err)
		}
		if err := inst.Fire(context.Background(), e); !errors.Is(err, boom) {
			errs = append(errs, fmt.Errorf("row %d (%s on %s): error %v, want the recorder's", i, r.From, r.Event, err))
		}
		if got := inst.State(); got != r.From {
			errs = append(errs, fmt.Errorf("row %d: state moved to %s although recording failed", i, got))
		}
	}
	return errs
}

// checkFinal checks that every final state refuses every event. A machine
// without final states, whose runs never end, passes it with nothing to
// check.
func checkFinal(m Machine) []error {
	var errs []error
	for _, s := range m.Definition.States {
		if !s.Terminal() {
			continue
		}
		for _, e := range m.Events {
			inst, err := m.New(s.Name, map[string]bool{}, nil)
			if err != nil {
				return append(errs, err)
			}
			if err := inst.Fire(context.Background(), e); !errors.Is(err, runtime.ErrIllegalTransition) {
				errs = append(errs, fmt.Errorf("%s on %s: error %v, want ErrIllegalTransition", s.Name, e.EventName(), err))
			}
			if got := inst.State(); got != s.Name {
				errs = append(errs, fmt.Errorf("%s on %s: left the final state for %s", s.Name, e.EventName(), got))
			}
		}
	}
	return errs
}

// shortestPaths returns, for every state reachable from the initial one,
// the rows of a shortest path to it (breadth first, rows in table order).
// In a nested machine, the state a row reaches is the one its eventless
// rows settle in, an eventless row is a step taken with the instance's
// Settle (see Settler), and a row taken only with a history record is no
// step of a path.
func shortestPaths(d runtime.Definition) map[string][]int {
	paths := map[string][]int{d.Initial: nil}
	hists := map[string]map[string]string{d.Initial: {}}
	queue := []string{d.Initial}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		for i, r := range d.Transitions {
			if r.From != s || alternate(d, i) {
				continue
			}
			hist := maps.Clone(hists[s])
			moves, loop := follow(d, i, r.Event, admitRow(d, i), hist)
			if loop {
				continue
			}
			to := d.Transitions[moves[len(moves)-1].row].To
			if _, seen := paths[to]; seen {
				continue
			}
			paths[to] = append(append([]int(nil), paths[s]...), i)
			hists[to] = hist
			queue = append(queue, to)
		}
	}
	return paths
}

// replay fires the rows of a path from the initial state, each under guard
// outcomes that make it the row that fires, and returns the state reached.
func replay(m Machine, rows []int) (string, error) {
	d := m.Definition
	admit := map[string]bool{}
	inst, err := m.New(d.Initial, admit, nil)
	if err != nil {
		return "", err
	}
	hist := map[string]string{}
	for _, i := range rows {
		r := d.Transitions[i]
		clear(admit)
		for g, v := range admitRow(d, i) {
			admit[g] = v
		}
		if got := inst.State(); got != r.From {
			return got, fmt.Errorf("row %d starts in %s but the machine is in %s", i, r.From, got)
		}
		if err := take(m, inst, r); err != nil {
			return inst.State(), fmt.Errorf("row %d: %w", i, err)
		}
		moves, _ := follow(d, i, r.Event, admit, hist)
		if got, want := inst.State(), d.Transitions[moves[len(moves)-1].row].To; got != want {
			return got, fmt.Errorf("row %d: state %s, want %s", i, got, want)
		}
	}
	return inst.State(), nil
}

func checkShortest(m Machine) []error {
	var errs []error
	paths := shortestPaths(m.Definition)
	for _, s := range m.Definition.States {
		rows, ok := paths[s.Name]
		if !ok && transient(m.Definition, s.Name) {
			// An unguarded eventless row leaves it as soon as it is
			// entered: no run rests there.
			continue
		}
		if !ok {
			errs = append(errs, fmt.Errorf("state %s is unreachable from %s", s.Name, m.Definition.Initial))
			continue
		}
		got, err := replay(m, rows)
		if err != nil {
			errs = append(errs, fmt.Errorf("path to %s: %w", s.Name, err))
		} else if got != s.Name {
			errs = append(errs, fmt.Errorf("path to %s ends in %s", s.Name, got))
		}
	}
	return errs
}

func checkCover(m Machine) []error {
	var errs []error
	d := m.Definition
	paths := shortestPaths(d)
	taken := make([]bool, len(d.Transitions))
	for i, r := range d.Transitions {
		if taken[i] || alternate(d, i) {
			// A history's other rows are taken only with a record.
			continue
		}
		prefix, ok := paths[r.From]
		if !ok && transient(d, r.From) {
			continue
		}
		if !ok {
			errs = append(errs, fmt.Errorf("row %d leaves %s, which is unreachable", i, r.From))
			continue
		}
		path := append(append([]int(nil), prefix...), i)
		if _, err := replay(m, path); err != nil {
			errs = append(errs, fmt.Errorf("path through row %d: %w", i, err))
		}
		for _, j := range path {
			taken[j] = true
		}
	}
	return errs
}

func checkDecode(m Machine) []error {
	var errs []error
	for _, e := range m.Events {
		payload, err := json.Marshal(e)
		if err != nil {
			return append(errs, err)
		}
		got, err := m.Decode(e.EventName(), payload)
		if err != nil {
			errs = append(errs, fmt.Errorf("decode %s: %w", e.EventName(), err))
			continue
		}
		if reflect.TypeOf(got) != reflect.TypeOf(e) {
			errs = append(errs, fmt.Errorf("decode %s gave a %T", e.EventName(), got))
			continue
		}
		again, err := json.Marshal(got)
		if err != nil {
			return append(errs, err)
		}
		if diff := cmp.Diff(string(payload), string(again)); diff != "" {
			errs = append(errs, fmt.Errorf("decode %s does not give back the payload (-want +got):\n%s", e.EventName(), diff))
		}
		if _, err := m.Decode(e.EventName(), []byte(`{"fsmgenNoSuchField":1}`)); err == nil {
			errs = append(errs, fmt.Errorf("decode %s accepted an unknown field", e.EventName()))
		}
	}
	if _, err := m.Decode("NoSuchEvent", nil); !errors.Is(err, runtime.ErrUnknownEvent) {
		errs = append(errs, fmt.Errorf("decode of an unknown name: %v, want ErrUnknownEvent", err))
	}
	return errs
}

func checkDriver(m Machine) []error {
	if m.Driver == nil {
		return nil
	}
	var errs []error
	ctx := context.Background()
	d := m.Definition
	for i, r := range d.Transitions {
		if r.Event == "" || alternate(d, i) {
			continue
		}
		drv := m.Driver(admitRow(d, i))
		e, err := drv.Decode(r.Event, nil)
		if err != nil {
			return append(errs, err)
		}
		l := &log{}
		if err := drv.Fire(ctx, &runtime.Run{}, r.From, e, l); err != nil {
			errs = append(errs, fmt.Errorf("row %d through the driver: %w", i, err))
			continue
		}
		moves, _ := follow(d, i, r.Event, admitRow(d, i), map[string]string{})
		if len(l.got) != len(moves) || l.got[0].To != r.To {
			errs = append(errs, fmt.Errorf("row %d through the driver recorded %+v, want a move to %s", i, l.got, r.To))
		}
	}
	drv := m.Driver(map[string]bool{})
	if drv.Definition().Type != d.Type {
		errs = append(errs, fmt.Errorf("the driver's definition is of type %q", drv.Definition().Type))
	}
	if _, err := drv.Handle(ctx, &runtime.Run{}, "NO_SUCH_STATE"); !errors.Is(err, runtime.ErrUnknownState) {
		errs = append(errs, fmt.Errorf("the driver's Handle in an unknown state: %v, want ErrUnknownState", err))
	}
	for _, s := range d.States {
		_, err := drv.Handle(ctx, &runtime.Run{}, s.Name)
		if driven := !s.Terminal() && !s.Wait; driven == errors.Is(err, runtime.ErrNotDriven) {
			errs = append(errs, fmt.Errorf("the driver's Handle in %s: error %v, but the state is driven: %v", s.Name, err, driven))
		}
	}
	return errs
}

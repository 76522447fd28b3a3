package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/internal/enginestore"
	"github.com/fsmgen/fsmgen/runtime/internal/pgstore"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// The errors of Signal and Cancel beyond the store's and the engine's
// (runtime.ErrRunFinished, runtime.ErrNoCancelEvent,
// runtime.ErrNotCancellable, runtime.ErrNotCallerEvent, runtime.ErrConflict,
// runtime.ErrRunNotFound), all matched by errors.Is.
var (
	// ErrNoTransition: the run's state has no row on the event, or none to
	// the state asked for.
	ErrNoTransition = errors.New("no such transition")
	// ErrGuarded: the rows of the run's state on the event have guards,
	// which are Go code only the machine's process can evaluate; the target
	// state must be named to fire one of them without its guard.
	ErrGuarded = errors.New("guarded transition")
)

// Admin operates runs of any registered machine from their registered
// definitions, without the machines' Go code. It is safe for concurrent
// use.
type Admin struct {
	pool *pgxpool.Pool
	st   *store.Store
	// es reads runs about to be sent an event as the engine does.
	es *enginestore.Store
}

// New returns an Admin on st and the pool st uses.
func New(st *store.Store) *Admin {
	return &Admin{pool: st.Pool(), st: st, es: enginestore.New(st)}
}

// SignalOptions tune Signal and Cancel.
type SignalOptions struct {
	// To names the state to move to when the state's rows on the event are
	// guarded, or lead to several states: the row to that state is fired
	// without evaluating its guard. In a configuration, To may name the
	// configuration the run ends in or one of its leaves. Empty to let the table decide, which it
	// does when it has one unguarded row (for Cancel: one target state).
	To string
	// Reason is written to the log with the operator's step, and for
	// Cancel into the result's error detail.
	Reason string
}

// Signal fires event with payload (its JSON, empty for none) on run runID
// as an operator, through the transition statement every writer shares
// (the store's Record and Finish, the engine), so that the database's
// checks apply as to any transition. The payload is checked against the event's fields in
// the registered definition (CheckPayload). The row fired is the one of the
// run's state on the event: the only unguarded row, or the one to
// opts.To, whose guard is not evaluated. In a configuration of a parallel
// state, the rows are chosen so for each region, and the step is the one
// runtime.Definition.Step makes of them, recorded as one transition. An operator is a caller: an
// event callers may not send to the run in its state (the event a driven
// state's handler returns, a timer's or an exhausted state's event not
// declared external, a child run's completion event; see
// runtime.Definition.CallerRefusal) is refused with an error matching
// runtime.ErrNotCallerEvent, a finished run with runtime.ErrRunFinished.
//
// An operator step row (operator_signal, with the event, the state entered,
// the guards not evaluated and opts.Reason) is logged in the transaction of
// the transition. A run moved into a state the engine drives is announced
// on store.NotifyChannel at its commit. Signal takes two round trips, the
// read and the write (the step, the transition and the announcement sent
// together), and one commit; the run it returns is the one the write left.
func (a *Admin) Signal(ctx context.Context, runID, event string, payload json.RawMessage, opts SignalOptions) (runtime.Run, error) {
	return a.fire(ctx, "signal "+event, runID, event, func(run runtime.Run, def runtime.Definition, child bool) (string, json.RawMessage, *runtime.Result, error) {
		if _, ok := eventSpec(def, event); !ok {
			return "", nil, nil, fmt.Errorf("%w: %s v%d has no event %q (%s)", runtime.ErrUnknownEvent, def.Type, def.Version, event, eventList(def))
		}
		if why := def.CallerRefusal(run.State, event); why != "" {
			return "", nil, nil, runtime.RefuseCaller(def.Type, def.Version, run.State, event, why)
		}
		if child {
			return "", nil, nil, runtime.RefuseCaller(def.Type, def.Version, run.State, event, "fired by the engine when a child run finishes")
		}
		return event, payload, nil, nil
	}, opts, false)
}

// Cancel cancels run runID as an operator: it fires the machine's cancel
// event (runtime.Definition.Cancel) through the store's transition path,
// with an empty payload, from the run's state to the state its row leads
// to. The operator acts for the system, not for a user, so the cancel
// row's guard (the owner's check of the engine's Cancel) is not evaluated;
// when the state's rows on the cancel event lead to several states, opts.To
// names one. A transition to a terminal state stores the result error
// CANCELLED, "cancelled by an operator" (and opts.Reason). A machine
// without a cancel event fails with runtime.ErrNoCancelEvent, a state
// without a row on it with runtime.ErrNotCancellable, a finished run with
// runtime.ErrRunFinished.
func (a *Admin) Cancel(ctx context.Context, runID string, opts SignalOptions) (runtime.Run, error) {
	return a.fire(ctx, "cancel", runID, "", func(run runtime.Run, def runtime.Definition, _ bool) (string, json.RawMessage, *runtime.Result, error) {
		if def.Cancel == "" {
			return "", nil, nil, fmt.Errorf("%w: %s v%d declares none", runtime.ErrNoCancelEvent, def.Type, def.Version)
		}
		if !def.Accepts(run.State, def.Cancel) {
			return "", nil, nil, fmt.Errorf("%w: state %s of %s v%d has no transition on the cancel event %s", runtime.ErrNotCancellable, run.State, def.Type, def.Version, def.Cancel)
		}
		detail := "cancelled by an operator"
		if opts.Reason != "" {
			detail += ": " + opts.Reason
		}
		return def.Cancel, nil, &runtime.Result{ErrorCode: "CANCELLED", ErrorDetail: detail}, nil
	}, opts, true)
}

// maxRounds bounds the read-fire loop of Signal and Cancel; each round
// ends only because the run moved in between.
const maxRounds = 8

// fire fires the event build chooses on run runID, read with whether one of
// its children names childEvent as its completion event (build's child;
// not asked when childEvent is empty), in the statement the engine reads a
// signalled run with (enginestore.ReadForEvent).
func (a *Admin) fire(ctx context.Context, op, runID, childEvent string,
	build func(run runtime.Run, def runtime.Definition, child bool) (string, json.RawMessage, *runtime.Result, error),
	opts SignalOptions, cancel bool) (runtime.Run, error) {
	fail := func(err error) (runtime.Run, error) { return runtime.Run{}, runErr(op, runID, err) }
	for range maxRounds {
		read, err := a.es.ReadForEvent(ctx, runID, childEvent, nil)
		if err != nil {
			return runtime.Run{}, err
		}
		run := read.Run
		if run.Terminal() {
			return run, runErr(op, runID, fmt.Errorf("%w: it is %s in %s", runtime.ErrRunFinished, run.Status, run.State))
		}
		def, err := a.st.Definition(ctx, run.Type, run.Version)
		if err != nil {
			return fail(err)
		}
		event, payload, res, err := build(run, def, read.ChildEvent)
		if err != nil {
			return fail(err)
		}
		spec, _ := eventSpec(def, event)
		if err := CheckPayload(spec, payload); err != nil {
			return fail(err)
		}
		t, unchecked, err := step(def, run.State, event, opts.To, cancel)
		if err != nil {
			return fail(err)
		}
		to, _ := def.StateOf(t.To)
		t.Payload = json.RawMessage("{}") // as a generated event without fields encodes
		if p := strings.TrimSpace(string(payload)); p != "" && p != "null" {
			t.Payload = payload
		}
		logged := map[string]any{"event": event, "to": t.To, "unchecked_guards": unchecked}
		if opts.Reason != "" {
			logged["reason"] = opts.Reason
		}
		name := "operator_signal"
		if cancel {
			name = "operator_cancel"
		}
		if !to.Terminal() {
			res = nil
		}
		// One round trip, one commit: the step, the transition, and the
		// run's announcement when it is due at once.
		adv, err := a.es.Advance(ctx, run.ID, enginestore.AdvanceParams{
			RowVersion: run.RowVersion, Transition: t, Result: res, Notify: true,
			Effects: &enginestore.Effects{Steps: []enginestore.StepEffect{{Name: name, Payload: logged}}},
		})
		if errors.Is(err, runtime.ErrConflict) {
			continue // the run moved: decide again
		}
		if err != nil {
			var re *runtime.RunError
			if errors.As(err, &re) {
				return runtime.Run{}, runErr(op, runID, re.Err)
			}
			return fail(err)
		}
		return adv.Run, nil
	}
	return fail(fmt.Errorf("%w: the run moved under %d consecutive tries", runtime.ErrConflict, maxRounds))
}

// step returns the transition that an operator's event takes in state
// (runtime.Definition.Step, in a configuration the rows of its regions
// or of its parallel state), and the guards it leaves unevaluated ("[G]"
// or "[!G]"). Of the rows of each state offered the event, it takes the
// one to the state to (in a configuration, the whole configuration the
// run ends in, a state outside it or one of its leaves), else the only
// row, when it has no guard; for cancel, the first when all lead to one
// state. A region whose rows lead nowhere to takes its only unguarded
// row, if it has one, else none.
func step(def runtime.Definition, state, event, to string, cancel bool) (runtime.Transition, []string, error) {
	unchecked := []string{}
	region := func(from string) bool { return from != state && slices.Contains(def.Configuration(state), from) }
	choose := func(from string, rows []runtime.TransitionSpec) (runtime.TransitionSpec, bool, error) {
		if region(from) && to != "" && !slices.ContainsFunc(rows, func(r runtime.TransitionSpec) bool { return matches(def, r, to) }) {
			// The state asked for is another region's or the
			// parallel state's: this region does what it would.
			ok := len(rows) == 1 && rows[0].Guard == ""
			return rows[0], ok, nil
		}
		row, err := chooseRow(def, from, event, rows, to, cancel)
		if err != nil {
			return runtime.TransitionSpec{}, false, err
		}
		unchecked = append(unchecked, guardsOf([]runtime.TransitionSpec{row})...)
		return row, true, nil
	}
	t, ok, err := def.Step(state, event, choose)
	switch {
	case err != nil:
		return runtime.Transition{}, nil, err
	case !ok && to != "":
		return runtime.Transition{}, nil, fmt.Errorf("%w: state %s of %s v%d has no transition to %s on %s (%s)", ErrNoTransition, state, def.Type, def.Version, to, event, acceptedIn(def, state))
	case !ok:
		return runtime.Transition{}, nil, fmt.Errorf("%w: state %s of %s v%d has no transition on %s (%s)", ErrNoTransition, state, def.Type, def.Version, event, acceptedIn(def, state))
	case to != "" && t.To != to && !slices.Contains(def.Configuration(t.To), to):
		return runtime.Transition{}, nil, fmt.Errorf("%w: state %s of %s v%d has no transition to %s on %s (it moves to %s)", ErrNoTransition, state, def.Type, def.Version, to, event, t.To)
	}
	return t, unchecked, nil
}

// matches reports whether row leads to the state to, or in a
// configuration to one of its leaves.
func matches(def runtime.Definition, row runtime.TransitionSpec, to string) bool {
	return to != "" && (row.To == to || slices.Contains(def.Configuration(to), row.To))
}

// chooseRow picks, of the rows of state from on event, the one that an
// operator fires.
func chooseRow(def runtime.Definition, from, event string, rows []runtime.TransitionSpec, to string, cancel bool) (runtime.TransitionSpec, error) {
	if to != "" {
		i := slices.IndexFunc(rows, func(r runtime.TransitionSpec) bool { return matches(def, r, to) })
		if i < 0 {
			return runtime.TransitionSpec{}, fmt.Errorf("%w: state %s of %s v%d has no transition to %s on %s (%s)", ErrNoTransition, from, def.Type, def.Version, to, event, describeRows(rows))
		}
		return rows[i], nil
	}
	if cancel {
		targets := map[string]bool{}
		for _, r := range rows {
			targets[r.To] = true
		}
		if len(targets) == 1 {
			return rows[0], nil
		}
		return runtime.TransitionSpec{}, fmt.Errorf("%w: state %s of %s v%d has rows on %s to several states (%s): name the target state", ErrGuarded, from, def.Type, def.Version, event, describeRows(rows))
	}
	if len(rows) == 1 && rows[0].Guard == "" {
		return rows[0], nil
	}
	return runtime.TransitionSpec{}, fmt.Errorf("%w: state %s of %s v%d decides %s by guards, which only the machine's Go code evaluates (%s): name the target state to fire its row without its guard", ErrGuarded, from, def.Type, def.Version, event, describeRows(rows))
}

// guardText is [G], [!G], or "" for an unguarded row.
func guardText(t runtime.TransitionSpec) string {
	switch {
	case t.Guard == "":
		return ""
	case t.Negated:
		return "[!" + t.Guard + "]"
	}
	return "[" + t.Guard + "]"
}

func guardsOf(rows []runtime.TransitionSpec) []string {
	out := []string{}
	for _, r := range rows {
		if g := guardText(r); g != "" {
			out = append(out, g)
		}
	}
	return out
}

// describeRows lists rows as "-> TO [G]", in table order.
func describeRows(rows []runtime.TransitionSpec) string {
	parts := make([]string, len(rows))
	for i, r := range rows {
		parts[i] = strings.TrimSpace("-> " + r.To + " " + guardText(r))
	}
	return strings.Join(parts, ", ")
}

// acceptedIn says which events state has rows on.
func acceptedIn(def runtime.Definition, state string) string {
	var events []string
	for _, t := range def.Transitions {
		if slices.Contains(def.Sources(state), t.From) && !slices.Contains(events, t.Event) {
			events = append(events, t.Event)
		}
	}
	if len(events) == 0 {
		return "it accepts no event"
	}
	return "it accepts " + strings.Join(events, ", ")
}

func eventSpec(def runtime.Definition, name string) (runtime.EventSpec, bool) {
	for _, e := range def.Events {
		if e.Name == name {
			return e, true
		}
	}
	return runtime.EventSpec{}, false
}

func eventList(def runtime.Definition) string {
	names := make([]string, len(def.Events))
	for i, e := range def.Events {
		names[i] = e.Name
	}
	return "its events: " + strings.Join(names, ", ")
}

// Resume makes a parked run due again with a fresh attempt counter, as
// store.Store.Resume does, and announces it to idle workers.
func (a *Admin) Resume(ctx context.Context, runID string) (runtime.Run, error) {
	if err := a.st.Resume(ctx, runID); err != nil {
		return runtime.Run{}, err
	}
	run, err := a.st.Get(ctx, runID)
	if err != nil {
		return run, err
	}
	_ = a.st.Notify(ctx, run.Type) // workers poll anyway
	return run, nil
}

// Retry restarts a failed run (store.Store.Retry): same row, attempt_no
// + 1, the state reset to the initial one.
func (a *Admin) Retry(ctx context.Context, runID string) (runtime.Run, error) {
	return a.st.Retry(ctx, runID)
}

// Registered is one registered definition, as Definitions lists them.
type Registered struct {
	Type    string
	Version int
	// Machine is the machine's Go name, Initial its initial state.
	Machine, Initial string
	// States, Events and Transitions count the definition's states,
	// events and table rows.
	States, Events, Transitions int
	// Digest is the digest of the definition's canonical form.
	Digest       string
	RegisteredAt time.Time
}

// Definitions lists the registered definitions by type, then version.
func (a *Admin) Definitions(ctx context.Context) ([]Registered, error) {
	rows, err := a.db().Queries(nil).ListDefinitions(ctx)
	if err != nil {
		return nil, runErr("list definitions", "", pgstore.Translate(err))
	}
	out := make([]Registered, 0, len(rows))
	for _, row := range rows {
		r := Registered{Type: row.WorkflowType, Version: int(row.Version), Initial: row.InitialState, Digest: row.Digest, RegisteredAt: row.CreatedAt.Time}
		var def runtime.Definition
		if err := json.Unmarshal(row.Definition, &def); err != nil {
			return nil, runErr("list definitions", "", fmt.Errorf("%w: stored definition of %s v%d does not decode: %w", runtime.ErrUnknownDefinition, r.Type, r.Version, err))
		}
		r.Machine = def.Machine
		r.States, r.Events, r.Transitions = len(def.States), len(def.Events), len(def.Transitions)
		out = append(out, r)
	}
	return out, nil
}

// Definition returns the registered definition of typ at version, or at
// its latest registered version when version is 0.
func (a *Admin) Definition(ctx context.Context, typ string, version int) (runtime.Definition, error) {
	if version == 0 {
		latest, err := a.db().Queries(nil).LatestVersion(ctx, typ)
		if err != nil {
			return runtime.Definition{}, runErr("read definition", "", pgstore.Translate(err))
		}
		version = int(latest)
		if version == 0 {
			return runtime.Definition{}, runErr("read definition", "", fmt.Errorf("%w: no version of %s is registered", runtime.ErrUnknownDefinition, typ))
		}
	}
	return a.st.Definition(ctx, typ, version)
}

// db is the persistence layer of the Admin's store, which owns the SQL the
// Admin sends.
func (a *Admin) db() *pgstore.DB { return (*pgstore.DB)(a.st) }

// runErr is the error of an Admin method: a *runtime.RunError of component
// admin.
func runErr(op, runID string, err error) error {
	return &runtime.RunError{Component: "admin", Op: op, RunID: runID, Err: err}
}

// Pool returns the pool the Admin works on.
func (a *Admin) Pool() *pgxpool.Pool { return a.pool }

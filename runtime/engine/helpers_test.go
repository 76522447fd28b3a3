package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/db"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// ev is the event of the test machines: a name and a JSON object.
type ev struct {
	name string
	data map[string]any
}

func (e ev) EventName() string { return e.name }

func event(name string, kv ...any) ev {
	e := ev{name: name}
	if len(kv) > 0 {
		e.data = map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			e.data[kv[i].(string)] = kv[i+1]
		}
	}
	return e
}

type handler func(ctx context.Context, run *runtime.Run) (runtime.Event, error)

// driver is a hand-written runtime.Driver over a definition: handlers per
// state, guards by name over the event's data.
type driver struct {
	def      runtime.Definition
	handlers map[string]handler
	guards   map[string]func(e ev) bool
	// actions, when set, are the entry and exit actions of every
	// transition, given the transition.
	actions func(ctx context.Context, t runtime.Transition) error
}

func (d *driver) Definition() runtime.Definition { return d.def }

func (d *driver) Handle(ctx context.Context, run *runtime.Run, state string) (runtime.Event, error) {
	h, ok := d.handlers[state]
	if !ok {
		return nil, fmt.Errorf("%s: %w", state, runtime.ErrNotDriven)
	}
	return h(ctx, run)
}

func (d *driver) Decode(name string, payload []byte) (runtime.Event, error) {
	for _, e := range d.def.Events {
		if e.Name == name {
			out := ev{name: name}
			if len(payload) > 0 && string(payload) != "null" {
				if err := json.Unmarshal(payload, &out.data); err != nil {
					return nil, err
				}
			}
			return out, nil
		}
	}
	return nil, fmt.Errorf("%s: %w", name, runtime.ErrUnknownEvent)
}

func (d *driver) Fire(ctx context.Context, _ *runtime.Run, state string, e runtime.Event, rec runtime.Recorder) error {
	x, ok := e.(ev)
	if !ok {
		return fmt.Errorf("%T: %w", e, runtime.ErrUnknownEvent)
	}
	var tried []string
	for _, t := range d.def.Transitions {
		if t.From != state || t.Event != x.name {
			continue
		}
		if t.Guard != "" {
			g := d.guards[t.Guard]
			if g == nil || g(x) == t.Negated {
				tried = append(tried, t.Guard)
				continue
			}
		}
		to, _ := d.def.State(t.To)
		status := to.Status
		if status == "" {
			status = runtime.StatusRunning
		}
		var payload any
		if x.data != nil {
			payload = x.data
		}
		tr := runtime.Transition{Machine: d.def.Type, Version: d.def.Version, From: state, To: t.To,
			Event: x.name, Payload: payload, Status: status, Outcome: t.Outcome}
		if d.actions != nil {
			tr.Actions = func(ctx context.Context) error { return d.actions(ctx, tr) }
		}
		return rec.Record(ctx, tr)
	}
	sentinel := runtime.ErrIllegalTransition
	if len(tried) > 0 {
		sentinel = runtime.ErrGuardRejected
	}
	return &runtime.TransitionError{Machine: d.def.Type, State: state, Event: x.name, Guards: tried, Err: sentinel}
}

// def builds a definition: states as specs, transitions as
// "FROM EVENT TO [GUARD]" rows.
func def(typ string, states []runtime.StateSpec, rows ...[]string) runtime.Definition {
	d := runtime.Definition{Machine: typ, Type: typ, Version: 1, Initial: states[0].Name, States: states}
	d.States[0].Initial = true
	events := map[string]bool{}
	for _, r := range rows {
		t := runtime.TransitionSpec{From: r[0], Event: r[1], To: r[2]}
		if len(r) > 3 {
			t.Guard = r[3]
		}
		d.Transitions = append(d.Transitions, t)
		if !events[r[1]] {
			events[r[1]] = true
			es := runtime.EventSpec{Name: r[1]}
			if r[1] == "Cancel" {
				es.Fields = []runtime.FieldSpec{{Name: "userID", Type: "string"}}
			}
			d.Events = append(d.Events, es)
			if t.Guard != "" {
				d.Guards = append(d.Guards, t.Guard)
			}
		}
	}
	return d
}

func running(name string) runtime.StateSpec {
	return runtime.StateSpec{Name: name, Status: runtime.StatusRunning}
}

func final(name string, s runtime.Status) runtime.StateSpec {
	return runtime.StateSpec{Name: name, Status: s}
}

// jobDef: QUEUED -> WORKING -> DONE, with a retry policy on WORKING and
// cancellation from every non-terminal state.
func jobDef(typ string, retry *runtime.RetryPolicy, onExhausted string) runtime.Definition {
	working := running("WORKING")
	working.Retry, working.OnExhausted = retry, onExhausted
	d := def(typ,
		[]runtime.StateSpec{running("QUEUED"), working, final("DONE", runtime.StatusSucceeded),
			final("FAILED", runtime.StatusFailed), final("CANCELLED", runtime.StatusCancelled)},
		[]string{"QUEUED", "Begin", "WORKING"},
		[]string{"WORKING", "Finish", "DONE"},
		[]string{"WORKING", "GiveUp", "FAILED"},
		[]string{"QUEUED", "Cancel", "CANCELLED", "UserOwnsRun"},
		[]string{"WORKING", "Cancel", "CANCELLED", "UserOwnsRun"},
	)
	d.Cancel = "Cancel"
	return d
}

func ownerGuard() map[string]func(ev) bool {
	return map[string]func(ev) bool{"UserOwnsRun": func(e ev) bool { return e.data["userID"] != "blocked" }}
}

func constant(e runtime.Event) handler {
	return func(context.Context, *runtime.Run) (runtime.Event, error) { return e, nil }
}

const (
	alice = "00000000-0000-4000-8000-00000000a11c"
	bob   = "00000000-0000-4000-8000-000000000b0b"
)

type env struct {
	pool *pgxpool.Pool
	st   *store.Store
	// owner is a pool of the schema's owner, for a test's own set-up, and
	// role the name of pool's role.
	owner *pgxpool.Pool
	role  string
	// dsn is the database's, as the schema's owner.
	dsn string
}

// newEnv gives the test a database of its own and the engine's pool on it,
// connected as a runtime role of the role model (db.RoleRuntime): the
// engine's tests run with the privileges a deployment gives the engine.
func newEnv(t *testing.T, opts ...store.Option) env {
	t.Helper()
	dsn := pgtest.NewDatabase(t)
	owner, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(owner.Close)
	cfg, err := pgxpool.ParseConfig(pgtest.RoleDSN(t, dsn, db.RoleRuntime))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 24
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return env{pool: pool, st: store.New(pool, opts...), owner: owner, role: cfg.ConnConfig.User, dsn: dsn}
}

// asOwner runs sql, the test's own set-up, as the schema's owner.
func (v env) asOwner(t *testing.T, sql string) {
	t.Helper()
	if _, err := v.owner.Exec(context.Background(), sql); err != nil {
		t.Fatal(err)
	}
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// engine returns an engine on the env with the drivers registered.
func (v env) engine(t *testing.T, cfg engine.Config, drivers ...runtime.Driver) *engine.Engine {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quiet
	}
	e, err := engine.New(v.st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range drivers {
		if err := e.Register(context.Background(), d); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

func (v env) start(t *testing.T, e *engine.Engine, typ, key string) runtime.Run {
	t.Helper()
	res, err := e.Start(context.Background(), runtime.StartRequest{Type: typ, IdempotencyKey: key, Owner: runtime.Owner{TenantID: "t1", UserID: alice}})
	if err != nil {
		t.Fatal(err)
	}
	return res.Run
}

func (v env) get(t *testing.T, id string) runtime.Run {
	t.Helper()
	run, err := v.st.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// moves summarises a run's log: "kind name from->to" per row.
func (v env) moves(t *testing.T, id string) []string {
	t.Helper()
	h, err := v.st.History(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range h {
		out = append(out, fmt.Sprintf("%s %s %s->%s", s.Kind, s.Name, s.From, s.To))
	}
	return out
}

// steps returns the payloads of the run's log rows of kind step named name.
func (v env) steps(t *testing.T, id, name string) []map[string]any {
	t.Helper()
	h, err := v.st.History(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, s := range h {
		if s.Kind == store.KindStep && s.Name == name {
			var m map[string]any
			if err := json.Unmarshal(s.Payload, &m); err != nil {
				t.Fatal(err)
			}
			out = append(out, m)
		}
	}
	return out
}

// work runs e.Work until the test ends.
func work(t *testing.T, e *engine.Engine) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Work(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Work: %v", err)
		}
	})
}

func wait(t *testing.T, e *engine.Engine, id string, limit time.Duration) runtime.Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	run, err := e.Wait(ctx, id)
	if err != nil {
		t.Fatalf("run %s in %s: %v", id, run.State, err)
	}
	return run
}

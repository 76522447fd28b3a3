package engine_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
	"github.com/fsmgen/fsmgen/runtime/evidence"
	"github.com/fsmgen/fsmgen/runtime/fsmtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// nestedDriver is a hand-written runtime.Driver (and runtime.Settler) of a
// nested machine over its flattened table, as a generated one behaves: a
// row to a history goes to the recorded state (run.History), else to the
// composite's initial leaf; each move names the states it exits and enters
// and carries the driver's actions; eventless rows are taken after the
// event's move, and by Settle.
type nestedDriver struct {
	driver
	// afterFirst, when set, is called after the first move a Fire
	// records and before the eventless moves: a place to die. run is the
	// run as Fire was given it.
	afterFirst func(run *runtime.Run)
}

func (d *nestedDriver) Fire(ctx context.Context, run *runtime.Run, state string, e runtime.Event, rec runtime.Recorder) error {
	x, ok := e.(ev)
	if !ok {
		return fmt.Errorf("%T: %w", e, runtime.ErrUnknownEvent)
	}
	hist := map[string]string{}
	for k, v := range run.History {
		hist[k] = v
	}
	row, ok := d.pick(state, x, hist)
	if !ok {
		return &runtime.TransitionError{Machine: d.def.Type, State: state, Event: x.name, Err: runtime.ErrIllegalTransition}
	}
	var payload any
	if x.data != nil {
		payload = x.data
	}
	if err := d.move(ctx, rec, row, x.name, payload, hist); err != nil {
		return err
	}
	if d.afterFirst != nil {
		d.afterFirst(run)
	}
	return d.eventless(ctx, rec, row.To, hist)
}

// Settle implements runtime.Settler.
func (d *nestedDriver) Settle(ctx context.Context, run *runtime.Run, state string, rec runtime.Recorder) error {
	hist := map[string]string{}
	for k, v := range run.History {
		hist[k] = v
	}
	return d.eventless(ctx, rec, state, hist)
}

func (d *nestedDriver) eventless(ctx context.Context, rec runtime.Recorder, state string, hist map[string]string) error {
	for range 64 {
		row, ok := d.pick(state, ev{}, hist)
		if !ok {
			return nil
		}
		if err := d.move(ctx, rec, row, "", nil, hist); err != nil {
			return err
		}
		state = row.To
	}
	return fmt.Errorf("eventless rows loop from %s", state)
}

// pick returns the row the event takes in state ("" for the eventless
// rows).
func (d *nestedDriver) pick(state string, x ev, hist map[string]string) (runtime.TransitionSpec, bool) {
	for _, t := range d.def.Transitions {
		if t.From != state || t.Event != x.name {
			continue
		}
		if t.Guard != "" {
			if g := d.guards[t.Guard]; g == nil || g(x) == t.Negated {
				continue
			}
		}
		if t.History != "" && t.To != d.historyTarget(t.History, hist) {
			continue
		}
		return t, true
	}
	return runtime.TransitionSpec{}, false
}

// historyTarget is the leaf a transition to history h enters.
func (d *nestedDriver) historyTarget(h string, hist map[string]string) string {
	var c runtime.CompositeSpec
	for _, cs := range d.def.Composites {
		for _, hs := range cs.History {
			if hs.Name == h {
				c = cs
			}
		}
	}
	target := c.Initial
	if rec, ok := hist[h]; ok {
		target = rec
	}
	for {
		sub, ok := d.def.Composite(target)
		if !ok {
			return target
		}
		target = sub.Initial
	}
}

func (d *nestedDriver) move(ctx context.Context, rec runtime.Recorder, row runtime.TransitionSpec, event string, payload any, hist map[string]string) error {
	to, _ := d.def.State(row.To)
	status := to.Status
	if status == "" {
		status = runtime.StatusRunning
	}
	tr := runtime.Transition{Machine: d.def.Type, Version: d.def.Version, From: row.From, To: row.To, Event: event, Payload: payload,
		Status: status, Outcome: row.Outcome, Exited: row.Exit, Entered: row.Enter}
	if d.actions != nil {
		tr.Actions = func(ctx context.Context) error { return d.actions(ctx, tr) }
	}
	if err := rec.Record(ctx, tr); err != nil {
		return err
	}
	for _, c := range d.def.Composites {
		if !slices.Contains(row.Exit, c.Name) {
			continue
		}
		for _, h := range c.History {
			child := row.From
			for p := child; p != ""; p = d.parent(p) {
				if d.parent(p) == c.Name {
					child = p
				}
			}
			if h.Deep {
				child = row.From
			}
			hist[h.Name] = child
		}
	}
	return nil
}

func (d *nestedDriver) parent(name string) string {
	if s, ok := d.def.State(name); ok {
		return s.Parent
	}
	c, _ := d.def.Composite(name)
	return c.Parent
}

// playerDef is a nested machine:
//
//	initial STOPPED wait
//	state ACTIVE after 30s IdleTimeout entry StartClock exit StopClock {
//	    initial PLAYING wait
//	    state PAUSED wait after Pause.hold min 1s max 1m Stop
//	    state EJECTING wait          // EJECTING -> OFF, eventless
//	    history RESUME
//	}
//	final OFF succeeded
//	final IDLE failed
//	external Stop                    // a timer's event callers send too
//
//	STOPPED -> ACTIVE   on Play
//	PLAYING -> PAUSED   on Pause
//	PAUSED  -> PLAYING  on Play
//	PLAYING -> PLAYING  on Tick internal
//	PAUSED  -> PAUSED   on Tick                 // external: restarts PAUSED's timer
//	ACTIVE  -> ACTIVE   on Rewind               // external: restarts ACTIVE's timer
//	ACTIVE  -> STOPPED  on Stop
//	ACTIVE  -> IDLE     on IdleTimeout
//	STOPPED -> RESUME   on Resume
//	PLAYING -> EJECTING on Eject
//	EJECTING -> OFF
func playerDef() runtime.Definition {
	waits := func(name, parent string) runtime.StateSpec {
		return runtime.StateSpec{Name: name, Status: runtime.StatusRunning, Wait: true, Parent: parent}
	}
	paused := waits("PAUSED", "ACTIVE")
	paused.Timers = []runtime.Timer{{After: time.Second, Event: "Stop", Field: "Pause.hold", Min: time.Second, Max: time.Minute}}
	d := runtime.Definition{
		Machine: "Player", Type: "player", Version: 1, Initial: "STOPPED",
		States: []runtime.StateSpec{
			{Name: "STOPPED", Initial: true, Status: runtime.StatusRunning, Wait: true},
			waits("PLAYING", "ACTIVE"), paused, waits("EJECTING", "ACTIVE"),
			final("OFF", runtime.StatusSucceeded), final("IDLE", runtime.StatusFailed),
		},
		Composites: []runtime.CompositeSpec{{Name: "ACTIVE", Initial: "PLAYING",
			Timers:  []runtime.Timer{{After: 30 * time.Second, Event: "IdleTimeout"}},
			History: []runtime.HistorySpec{{Name: "RESUME"}},
			Entry:   []string{"StartClock"}, Exit: []string{"StopClock"}}},
		Actions: []string{"StartClock", "StopClock"},
		Events: []runtime.EventSpec{{Name: "Play"}, {Name: "Pause", Fields: []runtime.FieldSpec{{Name: "hold", Type: "time.Duration"}}},
			{Name: "Tick"}, {Name: "Rewind"}, {Name: "Stop", External: true}, {Name: "IdleTimeout"}, {Name: "Resume"}, {Name: "Eject"}},
	}
	row := func(from, event, to string, exit, enter []string) runtime.TransitionSpec {
		return runtime.TransitionSpec{From: from, Event: event, To: to, Exit: exit, Enter: enter}
	}
	d.Transitions = []runtime.TransitionSpec{
		row("STOPPED", "Play", "PLAYING", []string{"STOPPED"}, []string{"ACTIVE", "PLAYING"}),
		row("PLAYING", "Pause", "PAUSED", []string{"PLAYING"}, []string{"PAUSED"}),
		row("PAUSED", "Play", "PLAYING", []string{"PAUSED"}, []string{"PLAYING"}),
		{From: "PLAYING", Event: "Tick", To: "PLAYING", Internal: true},
		row("PAUSED", "Tick", "PAUSED", []string{"PAUSED"}, []string{"PAUSED"}),
		row("PLAYING", "Eject", "EJECTING", []string{"PLAYING"}, []string{"EJECTING"}),
		row("EJECTING", "", "OFF", []string{"EJECTING", "ACTIVE"}, []string{"OFF"}),
		{From: "STOPPED", Event: "Resume", To: "PLAYING", History: "RESUME", Exit: []string{"STOPPED"}, Enter: []string{"ACTIVE", "PLAYING"}},
		{From: "STOPPED", Event: "Resume", To: "PAUSED", History: "RESUME", Exit: []string{"STOPPED"}, Enter: []string{"ACTIVE", "PAUSED"}},
	}
	for _, leaf := range []string{"PLAYING", "PAUSED"} {
		d.Transitions = append(d.Transitions,
			row(leaf, "Rewind", "PLAYING", []string{leaf, "ACTIVE"}, []string{"ACTIVE", "PLAYING"}),
			row(leaf, "Stop", "STOPPED", []string{leaf, "ACTIVE"}, []string{"STOPPED"}),
			row(leaf, "IdleTimeout", "IDLE", []string{leaf, "ACTIVE"}, []string{"IDLE"}),
		)
	}
	return d
}

func playerDriver() *nestedDriver { return &nestedDriver{driver: driver{def: playerDef()}} }

// nestedEnv is an engine with the player machine on a stopped clock.
type nestedEnv struct {
	env
	clk *fsmtest.Clock
	e   *engine.Engine
	t0  time.Time
}

func newNestedEnv(t *testing.T, d *nestedDriver) nestedEnv {
	t.Helper()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clk := fsmtest.NewClock(t0)
	v := newEnv(t, store.WithClock(clk.Now))
	return nestedEnv{env: v, clk: clk, e: v.engine(t, engine.Config{}, d), t0: t0}
}

// signal sends the event at t0 + at and returns the run.
func (n nestedEnv) signal(t *testing.T, id string, at time.Duration, e runtime.Event) runtime.Run {
	t.Helper()
	n.clk.Advance(n.t0.Add(at).Sub(n.clk.Now()))
	run, err := n.e.Signal(context.Background(), id, e)
	if err != nil {
		t.Fatalf("signal %s at %v: %v", e.EventName(), at, err)
	}
	return run
}

// due checks that the run is in state, due at t0 + at (never when at < 0).
func (n nestedEnv) due(t *testing.T, id, state string, at time.Duration) {
	t.Helper()
	got := n.get(t, id)
	want := time.Time{}
	if at >= 0 {
		want = n.t0.Add(at)
	}
	if got.State != state || !got.NextRunAt.Equal(want) {
		t.Errorf("run in %s due %v, want %s due %v", got.State, got.NextRunAt, state, want)
	}
}

// runAt runs what is due at t0 + at.
func (n nestedEnv) runAt(t *testing.T, at time.Duration, want int) {
	t.Helper()
	n.clk.Advance(n.t0.Add(at).Sub(n.clk.Now()))
	runDue(t, n.e, want)
}

// transitions summarises a run's transitions with the states they exited
// and entered.
func (n nestedEnv) transitions(t *testing.T, id string) []string {
	t.Helper()
	h, err := n.st.History(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range h {
		if s.Kind == store.KindTransition {
			out = append(out, fmt.Sprintf("%s %s->%s exited %v entered %v", s.Event, s.From, s.To, s.Exited, s.Entered))
		}
	}
	return out
}

// TestCompositeTimerRunsAcrossChildMoves: ACTIVE's timer counts from when
// the run entered ACTIVE, whatever moves it makes below it, and fires its
// event to the leaf; the log names what each move exited and entered.
func TestCompositeTimerRunsAcrossChildMoves(t *testing.T) {
	t.Parallel()
	n := newNestedEnv(t, playerDriver())
	ctx := context.Background()
	if err := evidence.Enable(ctx, n.pool, "player"); err != nil {
		t.Fatal(err)
	}
	run := n.start(t, n.e, "player", "k")
	n.due(t, run.ID, "STOPPED", -1)
	n.signal(t, run.ID, 5*time.Second, event("Play"))
	n.due(t, run.ID, "PLAYING", 35*time.Second)
	// PAUSED's own timer (50s) falls due after ACTIVE's.
	n.signal(t, run.ID, 20*time.Second, event("Pause", "hold", int64(50*time.Second)))
	n.due(t, run.ID, "PAUSED", 35*time.Second)
	n.signal(t, run.ID, 25*time.Second, event("Play"))
	n.due(t, run.ID, "PLAYING", 35*time.Second)
	n.runAt(t, 34*time.Second, 0)
	n.runAt(t, 35*time.Second, 1)
	if got := n.get(t, run.ID); got.State != "IDLE" {
		t.Fatalf("after ACTIVE's timer the run is in %s, want IDLE", got.State)
	}
	want := []string{
		"Play STOPPED->PLAYING exited [STOPPED] entered [ACTIVE PLAYING]",
		"Pause PLAYING->PAUSED exited [PLAYING] entered [PAUSED]",
		"Play PAUSED->PLAYING exited [PAUSED] entered [PLAYING]",
		"IdleTimeout PLAYING->IDLE exited [PLAYING ACTIVE] entered [IDLE]",
	}
	if diff := cmp.Diff(want, n.transitions(t, run.ID)); diff != "" {
		t.Errorf("transitions (-want +got):\n%s", diff)
	}
	// The evidence chain covers the exited and entered states, and verifies.
	if _, err := evidence.Verify(ctx, n.pool, run.ID); err != nil {
		t.Fatal(err)
	}
	recs, err := evidence.Records(ctx, n.pool, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	var covered []string
	for _, r := range recs {
		c, err := r.Decode()
		if err != nil {
			t.Fatal(err)
		}
		covered = append(covered, fmt.Sprintf("%s exited %v entered %v", c.Kind, c.Exited, c.Entered))
	}
	wantCovered := []string{"created exited [] entered []", "transition exited [STOPPED] entered [ACTIVE PLAYING]",
		"transition exited [PLAYING] entered [PAUSED]", "transition exited [PAUSED] entered [PLAYING]",
		"transition exited [PLAYING ACTIVE] entered [IDLE]"}
	if diff := cmp.Diff(wantCovered, covered); diff != "" {
		t.Errorf("evidence (-want +got):\n%s", diff)
	}
}

// TestNestedActionErrorRollsBack: an entry action that fails rolls its
// transition back whole: the run stays where it was, with its timer
// anchors and history, and the caller gets the action's error.
func TestNestedActionErrorRollsBack(t *testing.T) {
	t.Parallel()
	d := playerDriver()
	boom := errors.New("the clock does not start")
	var calls []string
	d.actions = func(ctx context.Context, tr runtime.Transition) error {
		if _, ok := engine.Tx(ctx); !ok {
			return errors.New("no transaction")
		}
		calls = append(calls, tr.From+"->"+tr.To)
		if tr.Event == "Resume" {
			return boom
		}
		return nil
	}
	n := newNestedEnv(t, d)
	run := n.start(t, n.e, "player", "k")
	n.signal(t, run.ID, 0, event("Play"))
	n.signal(t, run.ID, time.Second, event("Pause", "hold", int64(time.Minute)))
	before := n.signal(t, run.ID, 2*time.Second, event("Stop"))
	if _, err := n.e.Signal(context.Background(), run.ID, event("Resume")); !errors.Is(err, boom) {
		t.Fatalf("Resume with a failing entry action: %v, want %v", err, boom)
	}
	after := n.get(t, run.ID)
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("the run changed (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"RESUME": "PAUSED"}, after.History); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"STOPPED->PLAYING", "PLAYING->PAUSED", "PAUSED->STOPPED", "STOPPED->PAUSED"}, calls); diff != "" {
		t.Errorf("actions called (-want +got):\n%s", diff)
	}
}

// TestSelfRowsAndTimers: an internal self-row keeps the timers of its
// state running; an external one re-enters its state and restarts them.
func TestSelfRowsAndTimers(t *testing.T) {
	t.Parallel()
	n := newNestedEnv(t, playerDriver())
	run := n.start(t, n.e, "player", "k")
	n.signal(t, run.ID, 0, event("Play"))
	n.signal(t, run.ID, 10*time.Second, event("Tick")) // internal
	n.due(t, run.ID, "PLAYING", 30*time.Second)
	n.signal(t, run.ID, 20*time.Second, event("Rewind")) // external, on ACTIVE
	n.due(t, run.ID, "PLAYING", 50*time.Second)
	n.signal(t, run.ID, 21*time.Second, event("Pause", "hold", int64(5*time.Second)))
	n.due(t, run.ID, "PAUSED", 26*time.Second)
	n.signal(t, run.ID, 24*time.Second, event("Tick")) // external, on PAUSED: its event had no hold
	n.due(t, run.ID, "PAUSED", 25*time.Second)
	n.runAt(t, 25*time.Second, 1) // PAUSED's timer: Stop
	if got := n.get(t, run.ID); got.State != "STOPPED" || !got.NextRunAt.IsZero() {
		t.Errorf("after PAUSED's timer: %s due %v, want STOPPED never due", got.State, got.NextRunAt)
	}
	want := []string{
		"Play STOPPED->PLAYING exited [STOPPED] entered [ACTIVE PLAYING]",
		"Tick PLAYING->PLAYING exited [] entered []",
		"Rewind PLAYING->PLAYING exited [PLAYING ACTIVE] entered [ACTIVE PLAYING]",
		"Pause PLAYING->PAUSED exited [PLAYING] entered [PAUSED]",
		"Tick PAUSED->PAUSED exited [PAUSED] entered [PAUSED]",
		"Stop PAUSED->STOPPED exited [PAUSED ACTIVE] entered [STOPPED]",
	}
	if diff := cmp.Diff(want, n.transitions(t, run.ID)); diff != "" {
		t.Errorf("transitions (-want +got):\n%s", diff)
	}
}

// TestTimerFromEventField: a timer whose duration is an event's field
// takes the value of the event that entered the state, clamped to its
// bounds.
func TestTimerFromEventField(t *testing.T) {
	t.Parallel()
	n := newNestedEnv(t, playerDriver())
	for i, tt := range []struct {
		hold any
		due  time.Duration // from the Pause, at 1s
	}{
		{int64(5 * time.Second), 5 * time.Second},
		{int64(time.Hour), 29 * time.Second}, // clamped to 1m; ACTIVE's 30s comes first
		{int64(time.Millisecond), time.Second},
		{nil, time.Second}, // no value: the minimum
	} {
		run := n.start(t, n.e, "player", fmt.Sprint("k", i))
		n.clk.Advance(n.t0.Sub(n.clk.Now()))
		n.signal(t, run.ID, 0, event("Play"))
		pause := event("Pause", "hold", tt.hold)
		if tt.hold == nil {
			pause = event("Pause")
		}
		n.signal(t, run.ID, time.Second, pause)
		n.due(t, run.ID, "PAUSED", time.Second+tt.due)
	}
}

// deckDef is a nested machine whose states have handlers:
//
//	initial QUEUED                      // handler: Play
//	state ACTIVE {
//	    initial PLAYING                 // handler: Pause, or Eject
//	    state PAUSED                    // handler: Stop, or Finish once resumed
//	    state EJECTING wait             // EJECTING -> DONE, eventless
//	    history RESUME
//	}
//	state STOPPED                       // handler: Resume
//	final DONE succeeded
func deckDef() runtime.Definition {
	d := def("deck", []runtime.StateSpec{running("QUEUED"), running("PLAYING"), running("PAUSED"), running("EJECTING"),
		running("STOPPED"), final("DONE", runtime.StatusSucceeded)})
	for i := range d.States {
		if n := d.States[i].Name; n == "PLAYING" || n == "PAUSED" || n == "EJECTING" {
			d.States[i].Parent = "ACTIVE"
		}
	}
	d.States[3].Wait = true
	d.Composites = []runtime.CompositeSpec{{Name: "ACTIVE", Initial: "PLAYING", History: []runtime.HistorySpec{{Name: "RESUME"}}}}
	for _, e := range []string{"Play", "Pause", "Eject", "Stop", "Resume", "Finish"} {
		d.Events = append(d.Events, runtime.EventSpec{Name: e})
	}
	d.Transitions = []runtime.TransitionSpec{
		{From: "QUEUED", Event: "Play", To: "PLAYING", Exit: []string{"QUEUED"}, Enter: []string{"ACTIVE", "PLAYING"}},
		{From: "PLAYING", Event: "Pause", To: "PAUSED", Exit: []string{"PLAYING"}, Enter: []string{"PAUSED"}},
		{From: "PLAYING", Event: "Eject", To: "EJECTING", Exit: []string{"PLAYING"}, Enter: []string{"EJECTING"}},
		{From: "EJECTING", Event: "", To: "DONE", Exit: []string{"EJECTING", "ACTIVE"}, Enter: []string{"DONE"}},
		{From: "PAUSED", Event: "Stop", To: "STOPPED", Exit: []string{"PAUSED", "ACTIVE"}, Enter: []string{"STOPPED"}},
		{From: "PAUSED", Event: "Finish", To: "DONE", Exit: []string{"PAUSED", "ACTIVE"}, Enter: []string{"DONE"}},
		{From: "STOPPED", Event: "Resume", To: "PLAYING", History: "RESUME", Exit: []string{"STOPPED"}, Enter: []string{"ACTIVE", "PLAYING"}},
		{From: "STOPPED", Event: "Resume", To: "PAUSED", History: "RESUME", Exit: []string{"STOPPED"}, Enter: []string{"ACTIVE", "PAUSED"}},
	}
	return d
}

// nestedCrashEnv holds, for the test binary re-executed as a worker
// process, the database's connection string.
const nestedCrashEnv = "FSMGEN_ENGINE_NESTED_CRASH_WORKER_DSN"

// nestedCrashWorker works deck runs and dies, announcing it on stdout
// ("READY <run id>") and blocking until it is killed: in STOPPED's handler,
// after the run left ACTIVE from PAUSED; or, for a run with key "eject",
// between the Eject transition and the eventless move after it.
func nestedCrashWorker(dsn string) int {
	block := func(run *runtime.Run) {
		fmt.Printf("READY %s\n", run.ID)
		select {}
	}
	d := &nestedDriver{driver: driver{def: deckDef(), handlers: map[string]handler{
		"QUEUED": constant(event("Play")),
		"PLAYING": func(_ context.Context, run *runtime.Run) (runtime.Event, error) {
			if run.IdempotencyKey == "eject" {
				return event("Eject"), nil
			}
			return event("Pause"), nil
		},
		"PAUSED": constant(event("Stop")),
		"STOPPED": func(_ context.Context, run *runtime.Run) (runtime.Event, error) {
			block(run)
			return nil, nil
		},
	}}}
	d.afterFirst = func(run *runtime.Run) {
		if run.IdempotencyKey == "eject" && run.State == "PLAYING" {
			block(run)
		}
	}
	return workerProcess(dsn, engine.Config{WorkerID: engine.DefaultWorkerID("crashworker"),
		Lease: time.Minute, Heartbeat: 200 * time.Millisecond, PollInterval: 20 * time.Millisecond}, d, nil)
}

// crashNested starts a worker process, starts a deck run with key, waits
// until the worker says it is about to die with the run, kills it and
// ends its lease now.
func crashNested(t *testing.T, v env, e *engine.Engine, key string) runtime.Run {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), nestedCrashEnv+"="+v.pool.Config().ConnString())
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill() //nolint:errcheck // killed below; this is for early failures
	lines := bufio.NewScanner(out)
	run := v.start(t, e, "deck", key)
	if !lines.Scan() {
		t.Fatalf("the worker process said nothing: %v", lines.Err())
	}
	if got := lines.Text(); got != "READY "+run.ID {
		t.Fatalf("worker process: %q", got)
	}
	held := v.get(t, run.ID)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if _, err := v.pool.Exec(context.Background(), `UPDATE workflow_runs SET lease_expires_at = now()
		WHERE id = $1 AND lease_owner = $2 AND lease_epoch = $3`, run.ID, held.Lease.Owner, held.Lease.Epoch); err != nil {
		t.Fatal(err)
	}
	return held
}

// TestHistoryAfterCrash: the history a run recorded in a worker process
// that was killed is restored by the worker that takes the run on: the
// transition to the history goes to the state the run left ACTIVE from.
func TestHistoryAfterCrash(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	var finished atomic.Int32
	d := &nestedDriver{driver: driver{def: deckDef(), handlers: map[string]handler{
		"STOPPED": constant(event("Resume")),
		"PAUSED": func(context.Context, *runtime.Run) (runtime.Event, error) {
			finished.Add(1)
			return event("Finish"), nil
		},
	}}}
	e := v.engine(t, engine.Config{Lease: time.Minute, PollInterval: 20 * time.Millisecond}, d)
	held := crashNested(t, v, e, "k")
	if diff := cmp.Diff(map[string]string{"RESUME": "PAUSED"}, held.History); held.State != "STOPPED" || diff != "" {
		t.Fatalf("run held by the dying worker in %s, history (-want +got):\n%s", held.State, diff)
	}
	work(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if _, err := e.Wait(ctx, held.ID); err != nil {
		got := v.get(t, held.ID)
		t.Fatalf("run in %s (parked %v, error %q, lease %+v): %v; log %q", got.State, got.ParkedAt, got.LastError, got.Lease, err, v.moves(t, held.ID))
	}
	if got := v.get(t, held.ID); got.State != "DONE" || finished.Load() != 1 {
		t.Errorf("run in %s after %d calls of PAUSED's handler", got.State, finished.Load())
	}
	want := []string{
		"Play QUEUED->PLAYING exited [QUEUED] entered [ACTIVE PLAYING]",
		"Pause PLAYING->PAUSED exited [PLAYING] entered [PAUSED]",
		"Stop PAUSED->STOPPED exited [PAUSED ACTIVE] entered [STOPPED]",
		"Resume STOPPED->PAUSED exited [STOPPED] entered [ACTIVE PAUSED]",
		"Finish PAUSED->DONE exited [PAUSED ACTIVE] entered [DONE]",
	}
	if diff := cmp.Diff(want, nestedEnv{env: v}.transitions(t, held.ID)); diff != "" {
		t.Errorf("transitions (-want +got):\n%s", diff)
	}
}

// TestEventlessAfterCrash: a worker killed between a transition and the
// eventless move after it leaves the run in a state that waits, due at
// once; the next worker takes the eventless row (the driver's Settle)
// before anything else.
func TestEventlessAfterCrash(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	e := v.engine(t, engine.Config{Lease: time.Minute, PollInterval: 20 * time.Millisecond}, &nestedDriver{driver: driver{def: deckDef()}})
	held := crashNested(t, v, e, "eject")
	if held.State != "EJECTING" || held.NextRunAt.IsZero() {
		t.Fatalf("run held by the dying worker in %s due %v, want EJECTING due", held.State, held.NextRunAt)
	}
	work(t, e)
	if got := wait(t, e, held.ID, 15*time.Second); got.State != "DONE" {
		t.Errorf("run in %s, want DONE", got.State)
	}
	want := []string{
		"Play QUEUED->PLAYING exited [QUEUED] entered [ACTIVE PLAYING]",
		"Eject PLAYING->EJECTING exited [PLAYING] entered [EJECTING]",
		" EJECTING->DONE exited [EJECTING ACTIVE] entered [DONE]",
	}
	if diff := cmp.Diff(want, nestedEnv{env: v}.transitions(t, held.ID)); diff != "" {
		t.Errorf("transitions (-want +got):\n%s", diff)
	}
}

// TestUpgradeSplitsStateIntoComposite: a run of a flat version waiting in
// WAITING, with a timer, moves to the nested version where WAITING became
// a composite with that timer and two children; its timer keeps counting
// from when the run entered WAITING, across a move between the children.
func TestUpgradeSplitsStateIntoComposite(t *testing.T) {
	t.Parallel()
	waiting := func(name, parent string) runtime.StateSpec {
		return runtime.StateSpec{Name: name, Status: runtime.StatusRunning, Wait: true, Parent: parent}
	}
	timeout := []runtime.Timer{{After: time.Minute, Event: "Timeout"}}
	v1 := def("poll", []runtime.StateSpec{waiting("QUEUED", ""), waiting("WAITING", ""), final("DONE", runtime.StatusSucceeded),
		final("EXPIRED", runtime.StatusFailed)},
		[]string{"QUEUED", "Go", "WAITING"}, []string{"WAITING", "Done", "DONE"}, []string{"WAITING", "Timeout", "EXPIRED"})
	v1.States[1].Timers = timeout
	v2 := def("poll", []runtime.StateSpec{waiting("QUEUED", ""), waiting("POLLING", "WAITING"), waiting("BACKOFF", "WAITING"),
		final("DONE", runtime.StatusSucceeded), final("EXPIRED", runtime.StatusFailed)})
	v2.Version = 2
	v2.Composites = []runtime.CompositeSpec{{Name: "WAITING", Initial: "POLLING", Timers: timeout}}
	v2.Events = []runtime.EventSpec{{Name: "Go"}, {Name: "Done"}, {Name: "Timeout"}, {Name: "Slow"}}
	v2.Transitions = []runtime.TransitionSpec{
		{From: "QUEUED", Event: "Go", To: "POLLING", Exit: []string{"QUEUED"}, Enter: []string{"WAITING", "POLLING"}},
		{From: "POLLING", Event: "Slow", To: "BACKOFF", Exit: []string{"POLLING"}, Enter: []string{"BACKOFF"}},
	}
	for _, leaf := range []string{"POLLING", "BACKOFF"} {
		v2.Transitions = append(v2.Transitions,
			runtime.TransitionSpec{From: leaf, Event: "Done", To: "DONE", Exit: []string{leaf, "WAITING"}, Enter: []string{"DONE"}},
			runtime.TransitionSpec{From: leaf, Event: "Timeout", To: "EXPIRED", Exit: []string{leaf, "WAITING"}, Enter: []string{"EXPIRED"}})
	}
	v2.Upgrades = []runtime.Upgrade{{Type: "poll", From: 1, To: 2, Rules: []runtime.UpgradeRule{
		{From: "QUEUED", To: "QUEUED"}, {From: "WAITING", To: "POLLING", Timers: runtime.TimersKeep}}}}

	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clk := fsmtest.NewClock(t0)
	v := newEnv(t, store.WithClock(clk.Now))
	old := v.engine(t, engine.Config{}, &nestedDriver{driver: driver{def: v1}})
	n := nestedEnv{env: v, clk: clk, e: old, t0: t0}
	run := n.start(t, old, "poll", "k")
	n.signal(t, run.ID, 10*time.Second, event("Go"))
	n.due(t, run.ID, "WAITING", 70*time.Second)

	n.e = v.engine(t, engine.Config{}, &nestedDriver{driver: driver{def: v1}}, &nestedDriver{driver: driver{def: v2}})
	clk.Advance(10 * time.Second)
	rep, err := v.st.Upgrade(context.Background(), "poll", 1, 2, store.UpgradeOptions{})
	if err != nil || rep.Moved != 1 {
		t.Fatalf("upgrade: %+v, %v", rep, err)
	}
	n.due(t, run.ID, "POLLING", 70*time.Second)
	n.signal(t, run.ID, 30*time.Second, event("Slow"))
	n.due(t, run.ID, "BACKOFF", 70*time.Second)
	n.runAt(t, 70*time.Second, 1)
	if got := n.get(t, run.ID); got.State != "EXPIRED" {
		t.Errorf("after WAITING's timer the run is in %s, want EXPIRED", got.State)
	}
}

// TestEventlessActionErrorParks: the event's transition stands when an
// action of the eventless move after it fails: Signal returns the run in
// the state the event entered, due at once; the worker that claims it
// settles it, and the failing action is a failed try of that state, whose
// retries (none) give up: the run is parked with the action's error.
func TestEventlessActionErrorParks(t *testing.T) {
	t.Parallel()
	d := playerDriver()
	boom := errors.New("the tray is stuck")
	d.actions = func(_ context.Context, tr runtime.Transition) error {
		if tr.From == "EJECTING" {
			return boom
		}
		return nil
	}
	n := newNestedEnv(t, d)
	run := n.start(t, n.e, "player", "k")
	n.signal(t, run.ID, 0, event("Play"))
	got := n.signal(t, run.ID, time.Second, event("Eject"))
	if got.State != "EJECTING" || !got.NextRunAt.Equal(n.t0.Add(time.Second)) {
		t.Fatalf("Eject left the run in %s due %v, want EJECTING due now", got.State, got.NextRunAt)
	}
	runDue(t, n.e, 1)
	got = n.get(t, run.ID)
	if got.State != "EJECTING" || got.ParkedAt.IsZero() || got.LastError != "store: advance run "+run.ID+": the tray is stuck" {
		t.Errorf("after the failing eventless move: %s parked %v error %q", got.State, got.ParkedAt, got.LastError)
	}
}

package engine_test

import (
	"context"
	"errors"
	"fmt"
	mathrand "math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
	"github.com/fsmgen/fsmgen/runtime/fsmtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// parallelDriver is a hand-written runtime.Driver (and runtime.Settler)
// of a machine with one parallel state, over its flattened table, as a
// generated one behaves: an event is offered to each region in region
// order, each takes at most one row, and the rows taken make one
// transition; a row that leaves the parallel state is taken alone, by the
// first region that has one (later ones are not offered the event), and
// when no earlier region moved; rows on the parallel state apply when no
// region took the event; once every region is in a final leaf, the
// parallel state's completion row is taken.
type parallelDriver struct {
	driver
	// finals are the final leaves of the regions.
	finals map[string]bool
	// afterFirst, when set, is called after the event's transition is
	// recorded and before a completion move: a place to die.
	afterFirst func(run *runtime.Run, to string)
}

func (d *parallelDriver) Fire(ctx context.Context, run *runtime.Run, state string, e runtime.Event, rec runtime.Recorder) error {
	x, ok := e.(ev)
	if !ok {
		return fmt.Errorf("%T: %w", e, runtime.ErrUnknownEvent)
	}
	tr, ok := d.step(state, x.name)
	if !ok {
		return &runtime.TransitionError{Machine: d.def.Type, State: state, Event: x.name, Err: runtime.ErrIllegalTransition}
	}
	if x.data != nil {
		tr.Payload = x.data
	}
	if err := rec.Record(ctx, tr); err != nil {
		return err
	}
	if d.afterFirst != nil {
		d.afterFirst(run, tr.To)
	}
	return d.complete(ctx, rec, tr.To)
}

// Settle implements runtime.Settler.
func (d *parallelDriver) Settle(ctx context.Context, _ *runtime.Run, state string, rec runtime.Recorder) error {
	return d.complete(ctx, rec, state)
}

// complete takes the parallel state's completion row when every region of
// state is in a final leaf.
func (d *parallelDriver) complete(ctx context.Context, rec runtime.Recorder, state string) error {
	leaves := d.def.Configuration(state)
	if len(leaves) < 2 || slices.ContainsFunc(leaves, func(l string) bool { return !d.finals[l] }) {
		return nil
	}
	p := d.parallelOf(leaves[0])
	for _, t := range d.def.Transitions {
		if t.From == p && t.Done {
			return rec.Record(ctx, d.transition(state, t.To, "", d.exitAll(leaves, p), t.Enter))
		}
	}
	return nil
}

// step returns the transition event takes in the persisted state state.
func (d *parallelDriver) step(state, event string) (runtime.Transition, bool) {
	leaves := d.def.Configuration(state)
	if len(leaves) == 1 {
		row, ok := d.row(state, event)
		return d.transition(state, row.To, event, row.Exit, row.Enter), ok
	}
	p := d.parallelOf(leaves[0])
	regions := d.def.Regions(p)
	next := slices.Clone(leaves)
	var exited, entered []string
	taken := false
	for i, l := range leaves {
		row, ok := d.row(l, event)
		switch {
		case !ok:
		case len(d.def.Configuration(row.To)) == 1 && slices.Contains(d.def.Ancestors(row.To), regions[i]):
			next[i] = row.To
			exited, entered = append(exited, row.Exit...), append(entered, row.Enter...)
			taken = true
		case !taken:
			return d.transition(state, row.To, event, d.exitAll(leaves, p), row.Enter), true
		}
	}
	if taken {
		return d.transition(state, d.def.JoinConfiguration(next), event, exited, entered), true
	}
	row, ok := d.row(p, event)
	return d.transition(state, row.To, event, d.exitAll(leaves, p), row.Enter), ok
}

// row returns the first row from from on event.
func (d *parallelDriver) row(from, event string) (runtime.TransitionSpec, bool) {
	for _, t := range d.def.Transitions {
		if t.From == from && t.Event == event && !t.Done {
			return t, true
		}
	}
	return runtime.TransitionSpec{}, false
}

// parallelOf returns the parallel state above leaf.
func (d *parallelDriver) parallelOf(leaf string) string {
	for _, a := range d.def.Ancestors(leaf) {
		if c, _ := d.def.Composite(a); c.Parallel {
			return a
		}
	}
	return ""
}

// exitAll lists what leaving parallel state p from leaves exits: each
// region's leaf and the composites above it, region by region, then p.
func (d *parallelDriver) exitAll(leaves []string, p string) []string {
	var out []string
	for _, l := range leaves {
		out = append(out, l)
		for _, a := range d.def.Ancestors(l) {
			if a == p {
				break
			}
			out = append(out, a)
		}
	}
	return append(out, p)
}

func (d *parallelDriver) transition(from, to, event string, exited, entered []string) runtime.Transition {
	st, _ := d.def.StateOf(to)
	return runtime.Transition{Machine: d.def.Type, Version: d.def.Version, From: from, To: to, Event: event, Status: st.Status,
		Exited: exited, Entered: entered}
}

// buildDef is a machine whose parallel state's regions have handlers:
//
//	initial QUEUED                        // handler: Start
//	state Work parallel {
//	    state Build { initial Compile;    // handler: Compiled
//	                  state Package;      // handler: Packaged
//	                  final Built wait }
//	    state Checks { initial Lint;      // handler: Linted
//	                   state Review wait after 30s Remind
//	                   final Checked wait }
//	}
//	final Shipped succeeded
//	final Aborted failed
//
//	QUEUED -> Work on Start
//	Compile -> Package on Compiled
//	Package -> Built on Packaged
//	Lint -> Review on Linted
//	Review -> Review on Remind
//	Review -> Checked on Approve
//	Work -> Aborted on Abort
//	Work -> Shipped on done
func buildDef() runtime.Definition {
	leaf := func(name, parent string, wait bool) runtime.StateSpec {
		return runtime.StateSpec{Name: name, Status: runtime.StatusRunning, Wait: wait, Parent: parent}
	}
	review := leaf("Review", "Checks", true)
	review.Timers = []runtime.Timer{{After: 30 * time.Second, Event: "Remind"}}
	d := runtime.Definition{
		Machine: "Build", Type: "build", Version: 1, Initial: "QUEUED",
		States: []runtime.StateSpec{{Name: "QUEUED", Initial: true, Status: runtime.StatusRunning},
			leaf("Compile", "Build", false), leaf("Package", "Build", false), leaf("Built", "Build", true),
			leaf("Lint", "Checks", false), review, leaf("Checked", "Checks", true),
			final("Shipped", runtime.StatusSucceeded), final("Aborted", runtime.StatusFailed)},
		Composites: []runtime.CompositeSpec{{Name: "Work", Parallel: true},
			{Name: "Build", Parent: "Work", Initial: "Compile"}, {Name: "Checks", Parent: "Work", Initial: "Lint"}},
		Events: []runtime.EventSpec{{Name: "Start"}, {Name: "Compiled"}, {Name: "Packaged"}, {Name: "Linted"}, {Name: "Remind"},
			{Name: "Approve"}, {Name: "Abort"}},
	}
	move := func(from, event, to string) runtime.TransitionSpec {
		return runtime.TransitionSpec{From: from, Event: event, To: to, Exit: []string{from}, Enter: []string{to}}
	}
	d.Transitions = []runtime.TransitionSpec{
		{From: "QUEUED", Event: "Start", To: "Compile|Lint", Exit: []string{"QUEUED"}, Enter: []string{"Work", "Build", "Compile", "Checks", "Lint"}},
		move("Compile", "Compiled", "Package"), move("Package", "Packaged", "Built"), move("Lint", "Linted", "Review"),
		move("Review", "Remind", "Review"), move("Review", "Approve", "Checked"),
		{From: "Work", Event: "Abort", To: "Aborted", Enter: []string{"Aborted"}},
		{From: "Work", To: "Shipped", Done: true, Enter: []string{"Shipped"}},
	}
	return d
}

func buildDriver(handlers map[string]handler) *parallelDriver {
	return &parallelDriver{driver: driver{def: buildDef(), handlers: handlers}, finals: map[string]bool{"Built": true, "Checked": true}}
}

// TestParallelHandlersInRegionOrder: the engine calls the handlers of a
// configuration's leaves in region order, each event its own transition;
// a failing handler is retried, with the run's tries, before the next
// region's handler runs; a region's timer fires in a configuration; once
// both regions are final the parallel state completes.
func TestParallelHandlersInRegionOrder(t *testing.T) {
	t.Parallel()
	var (
		mu    sync.Mutex
		calls []string
	)
	call := func(state string, e runtime.Event, fail bool) handler {
		return func(_ context.Context, run *runtime.Run) (runtime.Event, error) {
			mu.Lock()
			defer mu.Unlock()
			calls = append(calls, fmt.Sprintf("%s in %s try %d", state, run.State, run.StepAttempt))
			if fail && run.StepAttempt == 1 {
				return nil, errors.New("the compiler is busy")
			}
			return e, nil
		}
	}
	d := buildDriver(map[string]handler{
		"QUEUED":  call("QUEUED", event("Start"), false),
		"Compile": call("Compile", event("Compiled"), true),
		"Package": call("Package", event("Packaged"), false),
		"Lint":    call("Lint", event("Linted"), false),
	})
	for i := range d.def.States {
		if d.def.States[i].Name == "Compile" {
			d.def.States[i].Retry = &runtime.RetryPolicy{MaxAttempts: 2, InitialInterval: time.Second, Coefficient: 1, MaxInterval: time.Second}
		}
	}
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clk := fsmtest.NewClock(t0)
	v := newEnv(t, store.WithClock(clk.Now))
	n := nestedEnv{env: v, clk: clk, e: v.engine(t, engine.Config{}, d), t0: t0}
	run := n.start(t, n.e, "build", "k")
	n.runAt(t, 0, 1) // QUEUED, then Compile fails: retried in 1s
	n.due(t, run.ID, "Compile|Lint", time.Second)
	n.runAt(t, time.Second, 1) // Compile, Package, Lint: both regions wait
	n.due(t, run.ID, "Built|Review", 31*time.Second)
	n.runAt(t, 31*time.Second, 1) // Review's timer: Remind re-enters Review
	n.due(t, run.ID, "Built|Review", 61*time.Second)
	if got := n.signal(t, run.ID, 40*time.Second, event("Approve")); got.State != "Shipped" || got.Status != runtime.StatusSucceeded {
		t.Fatalf("after Approve: %s %s, want Shipped succeeded", got.State, got.Status)
	}
	wantCalls := []string{"QUEUED in QUEUED try 1", "Compile in Compile|Lint try 1", "Compile in Compile|Lint try 2",
		"Package in Package|Lint try 1", "Lint in Built|Lint try 1"}
	if diff := cmp.Diff(wantCalls, calls); diff != "" {
		t.Errorf("handler calls (-want +got):\n%s", diff)
	}
	want := []string{
		"Start QUEUED->Compile|Lint exited [QUEUED] entered [Work Build Compile Checks Lint]",
		"Compiled Compile|Lint->Package|Lint exited [Compile] entered [Package]",
		"Packaged Package|Lint->Built|Lint exited [Package] entered [Built]",
		"Linted Built|Lint->Built|Review exited [Lint] entered [Review]",
		"Remind Built|Review->Built|Review exited [Review] entered [Review]",
		"Approve Built|Review->Built|Checked exited [Review] entered [Checked]",
		" Built|Checked->Shipped exited [Built Build Checked Checks Work] entered [Shipped]",
	}
	if diff := cmp.Diff(want, n.transitions(t, run.ID)); diff != "" {
		t.Errorf("transitions (-want +got):\n%s", diff)
	}
}

// TestParallelCallerEvents: a caller sends a wait leaf's event and the
// parallel state's, not a driven leaf's; an event on the parallel state
// leaves it from any configuration.
func TestParallelCallerEvents(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	e := v.engine(t, engine.Config{}, buildDriver(map[string]handler{"QUEUED": constant(event("Start"))}))
	run := v.start(t, e, "build", "k")
	runDue(t, e, 1) // Start; Compile has no handler here: parked
	if _, err := e.Signal(context.Background(), run.ID, event("Compiled")); !errors.Is(err, runtime.ErrNotCallerEvent) ||
		err.Error() != "engine: signal Compiled run "+run.ID+": callers may not send the event: build v1 in state Compile|Lint: Compiled is returned by the handler of Compile; declare it external to let callers send it" {
		t.Errorf("Signal(Compiled): %v", err)
	}
	got, err := e.Signal(context.Background(), run.ID, event("Abort"))
	if err != nil || got.State != "Aborted" || got.Status != runtime.StatusFailed {
		t.Fatalf("Signal(Abort): %s %s, %v", got.State, got.Status, err)
	}
	want := []string{
		"Start QUEUED->Compile|Lint exited [QUEUED] entered [Work Build Compile Checks Lint]",
		"Abort Compile|Lint->Aborted exited [Compile Build Lint Checks Work] entered [Aborted]",
	}
	if diff := cmp.Diff(want, nestedEnv{env: v}.transitions(t, run.ID)); diff != "" {
		t.Errorf("transitions (-want +got):\n%s", diff)
	}
}

// pollDef is a machine whose parallel state's regions wait with timers:
//
//	initial IDLE wait
//	state Poll parallel {
//	    state A { initial A1 wait after 60s Expire; final A2 wait }
//	    state B { initial B1 wait after 20s Nudge; state B2 wait }
//	}
//	final OFF succeeded
//
//	IDLE -> Poll on Go
//	A1 -> A2 on Expire
//	B1 -> B2 on Flip, Nudge
//	B2 -> B1 on Flip
//	Poll -> OFF on Stop
func pollDef() runtime.Definition {
	leaf := func(name, parent string) runtime.StateSpec {
		return runtime.StateSpec{Name: name, Status: runtime.StatusRunning, Wait: true, Parent: parent}
	}
	a1, b1 := leaf("A1", "A"), leaf("B1", "B")
	a1.Timers = []runtime.Timer{{After: time.Minute, Event: "Expire"}}
	b1.Timers = []runtime.Timer{{After: 20 * time.Second, Event: "Nudge"}}
	d := runtime.Definition{
		Machine: "Poll", Type: "poll", Version: 1, Initial: "IDLE",
		States: []runtime.StateSpec{{Name: "IDLE", Initial: true, Status: runtime.StatusRunning, Wait: true},
			a1, leaf("A2", "A"), b1, leaf("B2", "B"), final("OFF", runtime.StatusSucceeded)},
		Composites: []runtime.CompositeSpec{{Name: "Poll", Parallel: true},
			{Name: "A", Parent: "Poll", Initial: "A1"}, {Name: "B", Parent: "Poll", Initial: "B1"}},
		Events: []runtime.EventSpec{{Name: "Go"}, {Name: "Expire"}, {Name: "Flip"}, {Name: "Nudge"}, {Name: "Stop"}},
	}
	move := func(from, event, to string) runtime.TransitionSpec {
		return runtime.TransitionSpec{From: from, Event: event, To: to, Exit: []string{from}, Enter: []string{to}}
	}
	d.Transitions = []runtime.TransitionSpec{
		{From: "IDLE", Event: "Go", To: "A1|B1", Exit: []string{"IDLE"}, Enter: []string{"Poll", "A", "A1", "B", "B1"}},
		move("A1", "Expire", "A2"), move("B1", "Flip", "B2"), move("B1", "Nudge", "B2"), move("B2", "Flip", "B1"),
		{From: "Poll", Event: "Stop", To: "OFF", Enter: []string{"OFF"}},
	}
	return d
}

// TestParallelTimers: each region's timers count from when its leaf was
// entered: region A's fires while region B moved twice, and B's restarts
// only when B's leaf is entered again; the run is due at the first of
// them.
func TestParallelTimers(t *testing.T) {
	t.Parallel()
	d := &parallelDriver{driver: driver{def: pollDef()}, finals: map[string]bool{"A2": true}}
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clk := fsmtest.NewClock(t0)
	v := newEnv(t, store.WithClock(clk.Now))
	n := nestedEnv{env: v, clk: clk, e: v.engine(t, engine.Config{}, d), t0: t0}
	run := n.start(t, n.e, "poll", "k")
	n.signal(t, run.ID, 0, event("Go"))
	n.due(t, run.ID, "A1|B1", 20*time.Second)
	n.signal(t, run.ID, 10*time.Second, event("Flip"))
	n.due(t, run.ID, "A1|B2", time.Minute)
	n.signal(t, run.ID, 25*time.Second, event("Flip"))
	n.due(t, run.ID, "A1|B1", 45*time.Second)
	n.runAt(t, 44*time.Second, 0)
	n.runAt(t, 45*time.Second, 1) // B1's Nudge, 20s after B1 was entered again
	n.due(t, run.ID, "A1|B2", time.Minute)
	n.runAt(t, time.Minute, 1) // A1's Expire, a minute after Go
	n.due(t, run.ID, "A2|B2", -1)
	n.signal(t, run.ID, 70*time.Second, event("Stop"))
	want := []string{
		"Go IDLE->A1|B1 exited [IDLE] entered [Poll A A1 B B1]",
		"Flip A1|B1->A1|B2 exited [B1] entered [B2]",
		"Flip A1|B2->A1|B1 exited [B2] entered [B1]",
		"Nudge A1|B1->A1|B2 exited [B1] entered [B2]",
		"Expire A1|B2->A2|B2 exited [A1] entered [A2]",
		"Stop A2|B2->OFF exited [A2 A B2 B Poll] entered [OFF]",
	}
	if diff := cmp.Diff(want, n.transitions(t, run.ID)); diff != "" {
		t.Errorf("transitions (-want +got):\n%s", diff)
	}
	if got := n.get(t, run.ID); got.State != "OFF" || got.Status != runtime.StatusSucceeded {
		t.Errorf("run in %s %s, want OFF succeeded", got.State, got.Status)
	}
}

// relayDef is a machine whose parallel state's two regions each run two
// handlers in a row:
//
//	initial QUEUED                      // handler: Start
//	state Relay parallel {
//	    state A { initial A1; state A2; final A3 wait }   // handlers: A1done, A2done
//	    state B { initial B1; state B2; final B3 wait }   // handlers: B1done, B2done
//	}
//	final DONE succeeded
//
//	QUEUED -> Relay on Start
//	A1 -> A2 on A1done; A2 -> A3 on A2done
//	B1 -> B2 on B1done; B2 -> B3 on B2done
//	Relay -> DONE on done
func relayDef() runtime.Definition {
	leaf := func(name, parent string, wait bool) runtime.StateSpec {
		return runtime.StateSpec{Name: name, Status: runtime.StatusRunning, Wait: wait, Parent: parent}
	}
	d := runtime.Definition{
		Machine: "Relay", Type: "relay", Version: 1, Initial: "QUEUED",
		States: []runtime.StateSpec{{Name: "QUEUED", Initial: true, Status: runtime.StatusRunning},
			leaf("A1", "A", false), leaf("A2", "A", false), leaf("A3", "A", true),
			leaf("B1", "B", false), leaf("B2", "B", false), leaf("B3", "B", true), final("DONE", runtime.StatusSucceeded)},
		Composites: []runtime.CompositeSpec{{Name: "Relay", Parallel: true},
			{Name: "A", Parent: "Relay", Initial: "A1"}, {Name: "B", Parent: "Relay", Initial: "B1"}},
		Events: []runtime.EventSpec{{Name: "Start"}, {Name: "A1done"}, {Name: "A2done"}, {Name: "B1done"}, {Name: "B2done"}},
	}
	move := func(from, event, to string) runtime.TransitionSpec {
		return runtime.TransitionSpec{From: from, Event: event, To: to, Exit: []string{from}, Enter: []string{to}}
	}
	d.Transitions = []runtime.TransitionSpec{
		{From: "QUEUED", Event: "Start", To: "A1|B1", Exit: []string{"QUEUED"}, Enter: []string{"Relay", "A", "A1", "B", "B1"}},
		move("A1", "A1done", "A2"), move("A2", "A2done", "A3"), move("B1", "B1done", "B2"), move("B2", "B2done", "B3"),
		{From: "Relay", To: "DONE", Done: true, Enter: []string{"DONE"}},
	}
	return d
}

// relayDriver is relayDef's driver; each handler returns its event after
// a pause of up to pause.
func relayDriver(pause time.Duration) *parallelDriver {
	h := func(e string) handler {
		return func(ctx context.Context, _ *runtime.Run) (runtime.Event, error) {
			if pause > 0 {
				time.Sleep(time.Duration(mathrand.Int64N(int64(pause))))
			}
			return event(e), nil
		}
	}
	return &parallelDriver{driver: driver{def: relayDef(), handlers: map[string]handler{"QUEUED": h("Start"),
		"A1": h("A1done"), "A2": h("A2done"), "B1": h("B1done"), "B2": h("B2done")}},
		finals: map[string]bool{"A3": true, "B3": true}}
}

// parallelCrashEnv holds, for the test binary re-executed as a worker
// process, the database's connection string.
const parallelCrashEnv = "FSMGEN_ENGINE_PARALLEL_CRASH_WORKER_DSN"

// parallelCrashWorker works relay runs and kills itself (SIGKILL) now and
// then: in a handler, before its event is fired, and between a transition
// and the completion move after it.
func parallelCrashWorker(dsn string) int {
	die := func(percent int) {
		if mathrand.IntN(100) < percent {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
	}
	d := relayDriver(3 * time.Millisecond)
	for name, h := range d.handlers {
		d.handlers[name] = func(ctx context.Context, run *runtime.Run) (runtime.Event, error) {
			die(2)
			return h(ctx, run)
		}
	}
	d.afterFirst = func(*runtime.Run, string) { die(2) }
	// The deaths are the test's: a run's tries interrupted by them are
	// not counted against it (RecoveryLimit).
	return workerProcess(dsn, engine.Config{WorkerID: engine.DefaultWorkerID("parallelworker"), Concurrency: 4,
		Lease: time.Second, Heartbeat: 200 * time.Millisecond, PollInterval: 20 * time.Millisecond, RecoveryLimit: 1000}, d, nil)
}

// TestParallelCrashManyWorkers drives 200 relay runs with 4 worker
// processes that die by SIGKILL, by their own hand at random points (in a
// handler, between a region's move and the completion) and by the test's,
// each replaced by a new one: every run ends in DONE, its log holding each
// region's move once, in the order the engine takes them (region A's
// handlers, then region B's), and nothing else.
func TestParallelCrashManyWorkers(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	e := v.engine(t, engine.Config{}, relayDriver(0))
	var ids []string
	for i := range 200 {
		ids = append(ids, v.start(t, e, "relay", fmt.Sprint(i)).ID)
	}
	exited := make(chan *exec.Cmd, 16)
	spawn := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), parallelCrashEnv+"="+v.pool.Config().ConnString())
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { _ = cmd.Wait(); exited <- cmd }()
		return cmd
	}
	workers := map[*exec.Cmd]bool{}
	for range 4 {
		workers[spawn()] = true
	}
	defer func() {
		for cmd := range workers {
			_ = cmd.Process.Kill()
		}
	}()
	ctx := context.Background()
	deadline := time.After(3 * time.Minute)
	kill := time.NewTicker(time.Second)
	defer kill.Stop()
	deaths := 0
	for {
		var live int
		if err := v.pool.QueryRow(ctx, `SELECT count(*) FROM workflow_runs WHERE workflow_type = 'relay' AND status = 'running'`).Scan(&live); err != nil {
			t.Fatal(err)
		}
		if live == 0 {
			break
		}
		select {
		case cmd := <-exited:
			delete(workers, cmd)
			deaths++
			workers[spawn()] = true
		case <-kill.C:
			for cmd := range workers {
				_ = cmd.Process.Signal(syscall.SIGKILL)
				break
			}
		case <-deadline:
			for _, id := range ids {
				if got := v.get(t, id); !got.Terminal() {
					t.Errorf("run %s in %s: parked %v, error %q, lease %+v, due %v", id, got.State, got.ParkedAt, got.LastError, got.Lease, got.NextRunAt)
				}
			}
			t.Fatalf("%d runs still running after 3 minutes and %d deaths", live, deaths)
		}
	}
	want := []string{
		"Start QUEUED->A1|B1 exited [QUEUED] entered [Relay A A1 B B1]",
		"A1done A1|B1->A2|B1 exited [A1] entered [A2]",
		"A2done A2|B1->A3|B1 exited [A2] entered [A3]",
		"B1done A3|B1->A3|B2 exited [B1] entered [B2]",
		"B2done A3|B2->A3|B3 exited [B2] entered [B3]",
		" A3|B3->DONE exited [A3 A B3 B Relay] entered [DONE]",
	}
	for _, id := range ids {
		if got := v.get(t, id); got.State != "DONE" {
			t.Errorf("run %s in %s", id, got.State)
		}
		if diff := cmp.Diff(want, nestedEnv{env: v}.transitions(t, id)); diff != "" {
			t.Errorf("run %s: transitions (-want +got):\n%s", id, diff)
		}
	}
	t.Logf("%d worker processes died", deaths)
}

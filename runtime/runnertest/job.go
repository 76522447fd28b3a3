package runnertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/runnertest/internal/fixture/job"
	"github.com/fsmgen/fsmgen/runtime/runnertest/internal/fixture/note"
)

// jobInput is the input of a Job run: its work function fails the first
// Fail tries with the error code Code (all of them when Fail is negative).
type jobInput struct {
	Fail int    `json:"fail"`
	Code string `json:"code,omitempty"`
}

// worker is the handler of Job's WORKING state: it fails as the run's
// input says and counts its calls per run.
type worker struct {
	mu    sync.Mutex
	calls map[string]int
}

func (w *worker) Working(_ context.Context, run *runtime.Run) (job.WorkingEvent, error) {
	var in jobInput
	if err := json.Unmarshal(run.Input, &in); err != nil {
		return nil, runtime.WithCode("INVALID_INPUT", fmt.Errorf("job run %s: input: %w", run.ID, err))
	}
	w.mu.Lock()
	w.calls[run.ID]++
	n := w.calls[run.ID]
	w.mu.Unlock()
	if in.Fail < 0 || n <= in.Fail {
		return nil, runtime.WithCode(in.Code, fmt.Errorf("try %d failed", n))
	}
	return job.Worked{}, nil
}

// callsOf returns the number of calls of the handler for run id.
func (w *worker) callsOf(id string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.calls[id]
}

type jobGuards struct{}

func (jobGuards) Allowed(_ context.Context, e job.Work) bool { return e.Ok }

// jobDriver returns Job's driver with h's handler.
func jobDriver(h job.Handlers) runtime.Driver {
	return job.NewDriver(h, func(*runtime.Run) job.Guards { return jobGuards{} })
}

// jobEnv is a deployment of Job (and of more machines, when asked).
type jobEnv struct {
	*Scenario
	d    Deployment
	runs job.Handle[jobInput]
	w    *worker
}

func deployJob(t *testing.T, b Backend, more ...runtime.Driver) *jobEnv {
	t.Helper()
	v := &jobEnv{Scenario: NewScenario(t), w: &worker{calls: map[string]int{}}}
	v.d = b.Deploy(t, append([]runtime.Driver{jobDriver(v.w)}, more...)...)
	v.runs = job.Runs[jobInput](v.d.Runner())
	return v
}

// start starts a Job run with the key name and input in, on behalf of
// owner, and checks the start's outcome.
func (v *jobEnv) startAs(owner runtime.Owner, name string, in jobInput, want runtime.StartOutcome) job.Started {
	v.T.Helper()
	s, err := v.runs.Start(v.Ctx, v.Key(name), in, owner)
	if err != nil {
		v.T.Fatalf("start %s: %v", name, err)
	}
	if s.Outcome != want {
		v.T.Fatalf("start %s: outcome %s (run %s in %s, attempt %d), want %s", name, s.Outcome, s.ID, s.State, s.Attempt, want)
	}
	return s
}

func (v *jobEnv) start(name string, in jobInput) job.Started {
	v.T.Helper()
	return v.startAs(v.Owner, name, in, runtime.StartCreated)
}

// signal fires e on run id and fails the test when it is refused.
func (v *jobEnv) signal(id string, e job.Event) job.Snapshot {
	v.T.Helper()
	s, err := v.runs.Signal(v.Ctx, id, e)
	if err != nil {
		v.T.Fatalf("signal %s to run %s: %v", e.EventName(), id, err)
	}
	return s
}

// state reads run id's state.
func (v *jobEnv) state(id string) string {
	v.T.Helper()
	s, err := v.runs.Get(v.Ctx, id)
	if err != nil {
		v.T.Fatalf("get run %s: %v", id, err)
	}
	return s.State.String()
}

// wait waits for run id's end and checks its state and result.
func (v *jobEnv) wait(id string, state job.State, outcome, code string) job.Snapshot {
	v.T.Helper()
	got, err := v.runs.Wait(v.Ctx, id)
	if err != nil {
		v.T.Fatalf("wait for run %s: %v", id, err)
	}
	def := job.Definition()
	spec, _ := def.State(state.String())
	type end struct {
		State         string
		Status        runtime.Status
		Outcome, Code string
	}
	g := end{State: got.State.String(), Status: got.Status}
	if got.Result != nil {
		g.Outcome, g.Code = got.Result.Outcome, got.Result.ErrorCode
	}
	if diff := cmp.Diff(end{State: state.String(), Status: spec.Status, Outcome: outcome, Code: code}, g); diff != "" {
		v.T.Errorf("run %s ended (-want +got):\n%s", id, diff)
	}
	return got
}

// The transitions of Job's paths.
const (
	toWorking = "WAITING -Work-> WORKING"
	worked    = "WORKING -Worked-> DONE"
)

func runJob(t *testing.T, b Backend) {
	t.Run("retries-then-success", func(t *testing.T) {
		t.Parallel()
		v := deployJob(t, b)
		s := v.start("flaky", jobInput{Fail: 2, Code: "FLAKY"})
		v.signal(s.ID, job.Work{Ok: true})
		v.wait(s.ID, job.StateDone, "done", "")
		if got := v.w.callsOf(s.ID); got != 3 {
			t.Errorf("the handler was called %d times, want 3", got)
		}
		v.CheckHistory(v.d, s.ID, []string{toWorking, worked})
	})
	t.Run("retries-exhausted", func(t *testing.T) {
		t.Parallel()
		v := deployJob(t, b)
		s := v.start("broken", jobInput{Fail: -1, Code: "BROKEN"})
		v.signal(s.ID, job.Work{Ok: true})
		v.wait(s.ID, job.StateFailed, "", "BROKEN")
		if got := v.w.callsOf(s.ID); got != 3 {
			t.Errorf("the handler was called %d times, want 3 (the state's retry policy)", got)
		}
		v.CheckHistory(v.d, s.ID, []string{toWorking, "WORKING -GaveUp-> FAILED"})
	})
	t.Run("timer", func(t *testing.T) {
		t.Parallel()
		v := deployJob(t, b)
		s := v.start("sleeper", jobInput{})
		began := time.Now()
		if got := v.signal(s.ID, job.Sleep{}); got.State != job.StateSleeping {
			t.Fatalf("after Sleep: %s, want %s", got.State, job.StateSleeping)
		}
		v.wait(s.ID, job.StateDone, "done", "")
		if slept := time.Since(began); slept < time.Second {
			t.Errorf("the run woke up after %v, before its timer of 1s", slept)
		}
		v.CheckHistory(v.d, s.ID, []string{"WAITING -Sleep-> SLEEPING", "SLEEPING -Wake-> DONE"})
	})
	t.Run("cancel", func(t *testing.T) {
		t.Parallel()
		v := deployJob(t, b)
		s := v.start("cancelled", jobInput{})
		other := newUUID()
		if _, err := v.runs.Cancel(v.Ctx, s.ID, other); !errors.Is(err, runtime.ErrNotOwner) {
			t.Errorf("cancel by another user: %v, want an error matching %q", err, runtime.ErrNotOwner)
		}
		if got := v.state(s.ID); got != job.StateWaiting.String() {
			t.Errorf("after the refused cancellation: %s, want %s", got, job.StateWaiting)
		}
		if _, err := v.runs.Cancel(v.Ctx, s.ID, v.Owner.UserID); err != nil {
			t.Fatalf("cancel by the owner: %v", err)
		}
		v.wait(s.ID, job.StateCancelled, "", "CANCELLED")
		if _, err := v.runs.Cancel(v.Ctx, s.ID, v.Owner.UserID); !errors.Is(err, runtime.ErrRunFinished) {
			t.Errorf("cancel of a cancelled run: %v, want an error matching %q", err, runtime.ErrRunFinished)
		}
		v.CheckHistory(v.d, s.ID, []string{"WAITING -Cancel-> CANCELLED"})
	})
	t.Run("signals-refused", func(t *testing.T) { t.Parallel(); signalsRefused(t, b) })
	t.Run("idempotent-start", func(t *testing.T) { t.Parallel(); idempotentStart(t, b) })
	t.Run("list", func(t *testing.T) { t.Parallel(); list(t, b) })
}

// signalsRefused: each refusal of a signal, and the run unchanged by it.
func signalsRefused(t *testing.T, b Backend) {
	v := deployJob(t, b)
	waiting := v.start("waiting", jobInput{})
	held := v.start("held", jobInput{})
	v.signal(held.ID, job.Hold{})
	finished := v.start("finished", jobInput{})
	if _, err := v.runs.Cancel(v.Ctx, finished.ID, v.Owner.UserID); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	v.wait(finished.ID, job.StateCancelled, "", "CANCELLED")
	tests := []struct {
		name  string
		id    string
		e     job.Event
		cause error
		state job.State
	}{
		{"illegal", held.ID, job.Sleep{}, runtime.ErrIllegalTransition, job.StateHeld},
		{"guard-rejected", waiting.ID, job.Work{Ok: false}, runtime.ErrGuardRejected, job.StateWaiting},
		{"not-a-callers-event", waiting.ID, job.Worked{}, runtime.ErrNotCallerEvent, job.StateWaiting},
		{"run-finished", finished.ID, job.Sleep{}, runtime.ErrRunFinished, job.StateCancelled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := v.runs.Signal(v.Ctx, tt.id, tt.e)
			Refused(t, "signal "+tt.e.EventName(), err, tt.cause)
			if got := v.state(tt.id); got != tt.state.String() {
				t.Errorf("after the refused signal: %s, want %s", got, tt.state)
			}
		})
	}
	t.Run("unknown-run", func(t *testing.T) {
		if _, err := v.runs.Signal(v.Ctx, newUUID(), job.Sleep{}); !errors.Is(err, runtime.ErrRunNotFound) {
			t.Errorf("signal to an unknown run: %v, want an error matching %q", err, runtime.ErrRunNotFound)
		}
	})
}

// idempotentStart: every branch of a start by (type, key).
func idempotentStart(t *testing.T, b Backend) {
	v := deployJob(t, b)
	first := v.start("k", jobInput{})
	if first.Attempt != 1 || first.State != job.StateWaiting {
		t.Errorf("created: attempt %d in %s, want attempt 1 in %s", first.Attempt, first.State, job.StateWaiting)
	}
	same := func(s job.Started, outcome runtime.StartOutcome, state job.State, attempt int) {
		t.Helper()
		type got struct {
			ID      string
			State   string
			Attempt int
		}
		if diff := cmp.Diff(got{first.ID, state.String(), attempt}, got{s.ID, s.State.String(), s.Attempt}); diff != "" {
			t.Errorf("%s (-want +got):\n%s", outcome, diff)
		}
	}
	t.Run("running", func(t *testing.T) {
		s := v.startAs(v.Owner, "k", jobInput{}, runtime.StartRunning)
		same(s, runtime.StartRunning, job.StateWaiting, 1)
	})
	t.Run("cached", func(t *testing.T) {
		v.signal(first.ID, job.Work{Ok: true})
		v.wait(first.ID, job.StateDone, "done", "")
		s := v.startAs(v.Owner, "k", jobInput{}, runtime.StartCached)
		same(s, runtime.StartCached, job.StateDone, 1)
		if s.Result == nil || s.Result.Outcome != "done" {
			t.Errorf("cached: result %+v, want the outcome done", s.Result)
		}
		if got := v.w.callsOf(first.ID); got != 1 {
			t.Errorf("the handler was called %d times, want 1", got)
		}
	})
	t.Run("restarted", func(t *testing.T) {
		s := v.startAs(v.Owner, "failing", jobInput{Fail: -1, Code: "BROKEN"}, runtime.StartCreated)
		v.signal(s.ID, job.Work{Ok: true})
		v.wait(s.ID, job.StateFailed, "", "BROKEN")
		again := v.startAs(v.Owner, "failing", jobInput{Fail: -1, Code: "BROKEN"}, runtime.StartRestarted)
		if again.ID != s.ID || again.Attempt != 2 || again.State != job.StateWaiting || again.Status != runtime.StatusRunning {
			t.Errorf("restarted: run %s attempt %d in %s (%s), want run %s attempt 2 in %s (running)",
				again.ID, again.Attempt, again.State, again.Status, s.ID, job.StateWaiting)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		s := v.startAs(v.Owner, "cancel", jobInput{}, runtime.StartCreated)
		if _, err := v.runs.Cancel(v.Ctx, s.ID, v.Owner.UserID); err != nil {
			t.Fatalf("cancel: %v", err)
		}
		v.wait(s.ID, job.StateCancelled, "", "CANCELLED")
		again := v.startAs(v.Owner, "cancel", jobInput{}, runtime.StartCancelled)
		if again.ID != s.ID || again.State != job.StateCancelled {
			t.Errorf("cancelled: run %s in %s, want run %s in %s", again.ID, again.State, s.ID, job.StateCancelled)
		}
	})
}

// list: Runner.List by type, states, status, tenant and key.
func list(t *testing.T, b Backend) {
	v := deployJob(t, b, note.NewDriver())
	waiting := v.start("waiting", jobInput{})
	held := v.start("held", jobInput{})
	v.signal(held.ID, job.Hold{})
	done := v.start("done", jobInput{})
	v.signal(done.ID, job.Work{Ok: true})
	v.wait(done.ID, job.StateDone, "done", "")
	otherTenant := runtime.Owner{TenantID: v.Owner.TenantID + "-other", UserID: v.Owner.UserID}
	elsewhere := v.startAs(otherTenant, "elsewhere", jobInput{}, runtime.StartCreated)
	// A run of another machine in the tenant.
	other, err := note.Runs[jobInput](v.d.Runner()).Start(v.Ctx, v.Key("note"), jobInput{}, v.Owner)
	if err != nil {
		t.Fatalf("start a Note run: %v", err)
	}

	// row is what the test compares of a listed run.
	type row struct{ ID, Type, State, Tenant string }
	rowOf := func(id string) row {
		t.Helper()
		run, err := v.d.Runner().Get(v.Ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return row{run.ID, run.Type, run.State, run.TenantID}
	}
	rows := map[string]row{}
	for _, id := range []string{waiting.ID, held.ID, done.ID, elsewhere.ID} {
		rows[id] = rowOf(id)
	}
	rows[other.ID] = row{other.ID, note.Type, note.StateOpen.String(), v.Owner.TenantID}
	want := func(ids ...string) []row {
		out := make([]row, 0, len(ids))
		for _, id := range ids {
			out = append(out, rows[id])
		}
		slices.SortFunc(out, func(a, b row) int { return strings.Compare(a.ID, b.ID) })
		return out
	}
	tenant := v.Owner.TenantID
	tests := []struct {
		name string
		f    runtime.Filter
		want []row
	}{
		{"type", runtime.Filter{Type: job.Type, TenantID: tenant}, want(waiting.ID, held.ID, done.ID)},
		{"other-type", runtime.Filter{Type: note.Type, TenantID: tenant}, want(other.ID)},
		{"tenant", runtime.Filter{TenantID: tenant}, want(waiting.ID, held.ID, done.ID, other.ID)},
		{"other-tenant", runtime.Filter{TenantID: otherTenant.TenantID}, want(elsewhere.ID)},
		{"state", runtime.Filter{Type: job.Type, TenantID: tenant, States: []string{job.StateWaiting.String()}}, want(waiting.ID)},
		{"states", runtime.Filter{TenantID: tenant, States: []string{job.StateWaiting.String(), job.StateHeld.String()}}, want(waiting.ID, held.ID)},
		{"status-succeeded", runtime.Filter{TenantID: tenant, Status: runtime.StatusSucceeded}, want(done.ID)},
		{"status-running", runtime.Filter{TenantID: tenant, Status: runtime.StatusRunning}, want(waiting.ID, held.ID, other.ID)},
		{"key", runtime.Filter{Type: job.Type, IdempotencyKey: v.Key("held")}, want(held.ID)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []row
			v.Eventually("List "+tt.name, func() string {
				runs, err := v.d.Runner().List(v.Ctx, tt.f)
				if err != nil {
					return err.Error()
				}
				got = got[:0]
				for _, r := range runs {
					got = append(got, row{r.ID, r.Type, r.State, r.TenantID})
				}
				slices.SortFunc(got, func(a, b row) int { return strings.Compare(a.ID, b.ID) })
				if diff := cmp.Diff(tt.want, got); diff != "" {
					return fmt.Sprintf("(-want +got):\n%s", diff)
				}
				return ""
			})
		})
	}
	t.Run("limit", func(t *testing.T) {
		runs, err := v.d.Runner().List(v.Ctx, runtime.Filter{Type: job.Type, TenantID: tenant, Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != 2 {
			t.Errorf("List with Limit 2 returned %d runs", len(runs))
		}
	})
}

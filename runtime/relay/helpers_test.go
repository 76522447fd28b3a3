package relay_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/relay"
	"github.com/fsmgen/fsmgen/runtime/store"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// jobDef is the machine whose runs emit the messages: a job that runs once.
func jobDef() runtime.Definition {
	return runtime.Definition{
		Machine: "Job", Type: "job", Version: 1, Initial: "QUEUED",
		States: []runtime.StateSpec{
			{Name: "QUEUED", Initial: true, Status: runtime.StatusRunning},
			{Name: "DONE", Status: runtime.StatusSucceeded},
		},
		Events:      []runtime.EventSpec{{Name: "Finish"}},
		Transitions: []runtime.TransitionSpec{{From: "QUEUED", To: "DONE", Event: "Finish"}},
	}
}

type env struct {
	ctx  context.Context
	pool *pgxpool.Pool
	st   *store.Store
}

// newEnv gives the test a fresh database with jobDef registered.
func newEnv(t *testing.T) env {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	st := store.New(pool)
	if err := st.Register(ctx, jobDef()); err != nil {
		t.Fatal(err)
	}
	return env{ctx: ctx, pool: pool, st: st}
}

// start starts n runs and returns their ids.
func (e env) start(t *testing.T, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		res, err := e.st.Start(e.ctx, runtime.StartRequest{Type: "job", Version: 1, IdempotencyKey: fmt.Sprintf("job-%d", i), Owner: runtime.Owner{TenantID: "t1"}})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = res.Run.ID
	}
	return ids
}

// emit writes perRun messages for every run, round robin (the first message
// of every run, then the second, ...), and returns the ids of each run's
// messages in the order written.
func (e env) emit(t *testing.T, runs []string, perRun int) map[string][]int64 {
	t.Helper()
	out := make(map[string][]int64)
	for i := range perRun {
		for _, r := range runs {
			m, err := e.st.Emit(e.ctx, r, "job.progress", map[string]int{"step": i})
			if err != nil {
				t.Fatal(err)
			}
			out[r] = append(out[r], m.ID)
		}
	}
	return out
}

// newRelay returns a relay on the test's database.
func (e env) newRelay(t *testing.T, pub relay.Publisher, cfg relay.Config) *relay.Relay {
	t.Helper()
	r, err := relay.New(e.pool, pub, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// drain calls RelayOnce until a batch claims nothing, failing the test on an
// error.
func drain(t *testing.T, ctx context.Context, r *relay.Relay) {
	t.Helper()
	for {
		b, err := r.RelayOnce(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if b.Claimed == 0 {
			return
		}
	}
}

// row is an outbox row's relay columns.
type row struct {
	Published bool
	Attempts  int
	LastError string
	// Backoff is next_attempt_at - last_attempt_at, zero when either is
	// NULL.
	Backoff time.Duration
	// Due reports whether next_attempt_at is NULL or not after now().
	Due bool
}

func (e env) row(t *testing.T, id int64) row {
	t.Helper()
	var r row
	var backoff *int64
	err := e.pool.QueryRow(e.ctx, `
		SELECT published_at IS NOT NULL, attempts, coalesce(last_error, ''),
		       (extract(epoch FROM next_attempt_at - last_attempt_at) * 1000000)::bigint, coalesce(next_attempt_at <= now(), true)
		FROM workflow_outbox WHERE id = $1`, id).Scan(&r.Published, &r.Attempts, &r.LastError, &backoff, &r.Due)
	if err != nil {
		t.Fatal(err)
	}
	if backoff != nil {
		r.Backoff = time.Duration(*backoff) * time.Microsecond
	}
	return r
}

// bringForward makes the row's next try due now, as if its backoff were
// over.
func (e env) bringForward(t *testing.T, id int64) {
	t.Helper()
	if _, err := e.pool.Exec(e.ctx, `UPDATE workflow_outbox SET next_attempt_at = now() WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
}

// recorder is a Publisher that acknowledges every message and records it,
// in publish order.
type recorder struct {
	mu   sync.Mutex
	msgs []relay.Message
	// fail, when set, decides whether a message's publish fails.
	fail func(relay.Message) error
}

func (p *recorder) Publish(_ context.Context, m relay.Message) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fail != nil {
		if err := p.fail(m); err != nil {
			return err
		}
	}
	p.msgs = append(p.msgs, m)
	return nil
}

// byRun returns the ids of the published messages of each run, in publish
// order.
func (p *recorder) byRun() map[string][]int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return groupByRun(p.msgs)
}

func groupByRun(msgs []relay.Message) map[string][]int64 {
	out := make(map[string][]int64)
	for _, m := range msgs {
		out[m.RunID] = append(out[m.RunID], m.ID)
	}
	return out
}

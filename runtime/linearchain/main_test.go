package linearchain_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/runtime/linearchain"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
)

func TestMain(m *testing.M) {
	if crashWorkerMain() {
		return
	}
	pgtest.Main(m)
}

// newEngine returns an engine on a fresh, migrated database.
func newEngine(t *testing.T, defs ...linearchain.Definition) (*linearchain.Engine, *pgxpool.Pool) {
	t.Helper()
	pool := pgtest.NewPool(t)
	if err := linearchain.Migrate(context.Background(), pool); err != nil {
		t.Fatal(err)
	}
	if err := linearchain.Migrate(context.Background(), pool); err != nil {
		t.Fatalf("second Migrate: %v", err)
	}
	e := linearchain.New(pool)
	for _, d := range defs {
		if err := e.Register(d); err != nil {
			t.Fatal(err)
		}
	}
	return e, pool
}

// script is a handler that returns its results in order, the last one
// forever after, and counts its calls.
type script struct {
	mu      sync.Mutex
	results []linearchain.Result
	calls   []linearchain.Task
}

func (s *script) handle(_ context.Context, t linearchain.Task) linearchain.Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, t)
	r := s.results[0]
	if len(s.results) > 1 {
		s.results = s.results[1:]
	}
	return r
}

func (s *script) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.calls)
}

func returns(rs ...linearchain.Result) *script { return &script{results: rs} }

// def is a definition whose step i runs scripts[i], each with maxAttempts.
func def(typ string, maxAttempts int, names []string, scripts ...*script) linearchain.Definition {
	d := linearchain.Definition{Type: typ, Version: 1}
	for i, s := range scripts {
		d.Steps = append(d.Steps, linearchain.Step{Type: names[i], MaxAttempts: maxAttempts, Handler: s.handle})
	}
	return d
}

// claimOne claims as worker and wants exactly one task.
func claimOne(t *testing.T, e *linearchain.Engine, o linearchain.ClaimOptions) linearchain.Task {
	t.Helper()
	c, err := e.Claim(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Tasks) != 1 {
		t.Fatalf("claim by %s: %d tasks, want 1: %+v", o.WorkerID, len(c.Tasks), c.Tasks)
	}
	return c.Tasks[0]
}

func claimNone(t *testing.T, e *linearchain.Engine, o linearchain.ClaimOptions) linearchain.Claimed {
	t.Helper()
	c, err := e.Claim(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Tasks) != 0 {
		t.Fatalf("claim by %s: %d tasks, want none: %+v", o.WorkerID, len(c.Tasks), c.Tasks)
	}
	return c
}

func execute(t *testing.T, e *linearchain.Engine, task linearchain.Task) linearchain.Applied {
	t.Helper()
	a, err := e.Execute(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func get(t *testing.T, e *linearchain.Engine, id int64) linearchain.Instance {
	t.Helper()
	in, err := e.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// statuses is the instance's status and its steps' statuses.
func statuses(in linearchain.Instance) []string {
	out := []string{in.Status}
	for _, s := range in.Steps {
		out = append(out, s.Status)
	}
	return out
}

func wantStatuses(t *testing.T, e *linearchain.Engine, id int64, want ...string) linearchain.Instance {
	t.Helper()
	in := get(t, e, id)
	if diff := cmp.Diff(want, statuses(in)); diff != "" {
		t.Fatalf("instance %d: instance and step statuses (-want +got):\n%s", id, diff)
	}
	return in
}

func start(t *testing.T, e *linearchain.Engine, typ, key string) int64 {
	t.Helper()
	s, err := e.Start(context.Background(), typ, 1, key, map[string]string{"key": key})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Created {
		t.Fatalf("start %s %s: not created", typ, key)
	}
	return s.InstanceID
}

func pgCode(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// logRow is a row of a status log, as tests compare it.
type logRow struct {
	Key, From, To, Event, Worker string
}

func statusLog(t *testing.T, pool *pgxpool.Pool, table string) []logRow {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT row_key::text, coalesce(from_state, '-'), to_state,
		coalesce(event, '-'), coalesce(worker, '-') FROM `+pgx.Identifier{table}.Sanitize()+` ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[logRow])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var w1 = linearchain.ClaimOptions{WorkerID: "test:host:1:a", Lease: time.Minute}
var w2 = linearchain.ClaimOptions{WorkerID: "test:host:2:b", Lease: time.Minute}

// wantLastLog wants row as the last row of the status log table.
func wantLastLog(t *testing.T, pool *pgxpool.Pool, table string, want logRow) {
	t.Helper()
	log := statusLog(t, pool, table)
	if len(log) == 0 || log[len(log)-1] != want {
		t.Errorf("last row of %s: %+v, want %+v", table, log[len(log)-1:], want)
	}
}

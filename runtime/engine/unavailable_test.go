package engine_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// slots is a database whose engine connects as a role with a connection
// limit, which can be made to refuse the role every connection, as a
// server whose slots are all taken by other clients does.
type slots struct {
	env
	admin string // the database as a superuser, whom no limit holds
	role  string
	limit int
}

// newSlots returns slots on a new database for a role limited to limit
// connections, with an engine pool of at most limit connections that hands
// out idle connections without checking them.
func newSlots(t *testing.T, limit int) *slots {
	t.Helper()
	admin := pgtest.NewDatabase(t)
	role, dsn := pgtest.NewRole(t, admin, limit)
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = int32(limit)
	cfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return false }
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s := &slots{env: env{pool: pool, st: store.New(pool)}, admin: admin, role: role, limit: limit}
	t.Cleanup(func() {
		if err := s.free(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return s
}

// admin runs statements as a superuser.
func (s *slots) exec(ctx context.Context, stmts ...string) error {
	conn, err := pgx.Connect(ctx, s.admin)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	for _, stmt := range stmts {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			return err
		}
	}
	return nil
}

// exhaust takes every connection slot of the role: from now on the server
// refuses it every new connection with SQLSTATE 53300
// (too_many_connections), and its connections are terminated.
func (s *slots) exhaust(ctx context.Context) error {
	return s.exec(ctx, "ALTER ROLE "+pgx.Identifier{s.role}.Sanitize()+" CONNECTION LIMIT 0",
		"SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE usename = '"+s.role+"'")
}

// free gives the role its slots back.
func (s *slots) free(ctx context.Context) error {
	return s.exec(ctx, fmt.Sprintf("ALTER ROLE %s CONNECTION LIMIT %d", pgx.Identifier{s.role}.Sanitize(), s.limit))
}

// retryLog is a slog.Handler that calls on for each report of a statement
// of the engine tried again after the server refused it a connection for
// want of a slot (SQLSTATE 53300), with the statement's name (empty for
// Work's claims).
type retryLog struct {
	slog.Handler
	on func(op string)
}

func (h retryLog) Handle(ctx context.Context, r slog.Record) error {
	if r.Message != "server unavailable; trying again" && r.Message != "claim failed; trying again" {
		return nil
	}
	var op string
	var refused bool
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "op":
			op = a.Value.String()
		case "err":
			err, _ := a.Value.Any().(error)
			pgErr, ok := errors.AsType[*pgconn.PgError](err)
			refused = ok && pgErr.Code == "53300"
		}
		return true
	})
	if refused {
		h.on(op)
	}
	return nil
}

func (h retryLog) WithAttrs([]slog.Attr) slog.Handler { return h }

// TestRefusedConnectionNotCharged: every connection slot the engine may use
// is taken by another client right after a handler returns, so that the
// engine's transition is refused a connection (SQLSTATE 53300). The engine
// tries it again, like a lost connection, until a slot is free: the run
// goes on, the handler was called once, and no try failed.
func TestRefusedConnectionNotCharged(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		pol  *runtime.RetryPolicy
	}{
		{"no retry policy", nil},
		{"retry policy", &runtime.RetryPolicy{MaxAttempts: 3, InitialInterval: time.Millisecond, Coefficient: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := newSlots(t, 2)
			var calls atomic.Int32
			d := &driver{def: jobDef("job", tc.pol, "GiveUp"), guards: ownerGuard(), handlers: map[string]handler{
				"QUEUED": constant(event("Begin")),
				"WORKING": func(ctx context.Context, run *runtime.Run) (runtime.Event, error) {
					calls.Add(1)
					if err := s.exhaust(ctx); err != nil {
						t.Error(err)
					}
					return event("Finish"), nil
				},
			}}
			retried := make(chan string, 64)
			e := s.engine(t, engine.Config{Lease: time.Minute, Logger: slog.New(retryLog{Handler: quiet.Handler(), on: func(op string) {
				select {
				case retried <- op:
				default:
				}
			}})}, d)
			run := s.start(t, e, "job", "k")

			driven := make(chan error, 1)
			var got runtime.Run
			go func() {
				var err error
				got, err = e.Drive(ctx, run.ID)
				driven <- err
			}()
			// The transition is refused a connection for want of a slot,
			// and tried again: the slots are given back.
			select {
			case op := <-retried:
				if op != "advance" {
					t.Errorf("first statement tried again: %s, want advance", op)
				}
			case err := <-driven:
				if err := s.free(ctx); err != nil {
					t.Error(err)
				}
				t.Fatalf("Drive returned before any statement was tried again: run in %s, %s %q: %v", got.State, got.LastErrorCode, got.LastError, err)
			}
			if err := s.free(ctx); err != nil {
				t.Error(err)
			}
			if err := <-driven; err != nil {
				t.Fatal(err)
			}
			if got.State != "DONE" || calls.Load() != 1 {
				t.Errorf("run in %s after %d calls, want DONE after 1", got.State, calls.Load())
			}
			want := []string{"created start ->QUEUED", "transition Begin QUEUED->WORKING", "transition Finish WORKING->DONE"}
			if diff := cmp.Diff(want, s.moves(t, run.ID)); diff != "" {
				t.Errorf("log (-want +got):\n%s", diff)
			}
			if failed := s.steps(t, run.ID, "attempt_failed"); len(failed) > 0 {
				t.Errorf("tries counted as failed: %v", failed)
			}
		})
	}
}

// TestLostWriteInterruptsTheTry: a handler returns, and then every
// connection slot is taken for longer than the lease, so that its
// transition cannot be written. The engine gives the lease up as
// interrupted; the next claim counts the try and logs it under its try key,
// and the handler is called again with another key. Both calls are in the
// log: the first by the lease_expired step naming its key, the second by
// its transition.
func TestLostWriteInterruptsTheTry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newSlots(t, 2)
	var (
		mu    sync.Mutex
		keys  []string
		tries []int
	)
	d := &driver{def: jobDef("job", nil, "GiveUp"), guards: ownerGuard(), handlers: map[string]handler{
		"QUEUED": constant(event("Begin")),
		"WORKING": func(ctx context.Context, run *runtime.Run) (runtime.Event, error) {
			mu.Lock()
			keys, tries = append(keys, run.TryKey), append(tries, run.StepAttempt)
			first := len(keys) == 1
			mu.Unlock()
			if first {
				if err := s.exhaust(ctx); err != nil {
					t.Error(err)
				}
			}
			return event("Finish"), nil
		},
	}}
	// The slots are given back once the engine gave up writing the
	// transition and tries to give its lease up.
	interrupting := make(chan string, 1)
	var once sync.Once
	e := s.engine(t, engine.Config{Lease: time.Second, Logger: slog.New(retryLog{Handler: quiet.Handler(), on: func(op string) {
		if op == "interrupt lease" || op == "release lease" {
			once.Do(func() { interrupting <- op })
		}
	}})}, d)
	run := s.start(t, e, "job", "k")

	driven := make(chan error, 1)
	var got runtime.Run
	go func() {
		var err error
		got, err = e.Drive(ctx, run.ID)
		driven <- err
	}()
	select {
	case op := <-interrupting:
		if op != "interrupt lease" {
			t.Errorf("the lease was given up with %s, want interrupt lease", op)
		}
	case err := <-driven:
		if err := s.free(ctx); err != nil {
			t.Error(err)
		}
		t.Fatalf("Drive returned before the lease was given up as interrupted: run in %s, %s %q: %v", got.State, got.LastErrorCode, got.LastError, err)
	}
	if err := s.free(ctx); err != nil {
		t.Error(err)
	}
	if err := <-driven; err != nil {
		t.Fatal(err)
	}
	if got.State != "DONE" {
		t.Errorf("run in %s, want DONE", got.State)
	}
	if len(keys) != 2 || keys[0] == "" || keys[0] == keys[1] {
		t.Fatalf("the handler was called with try keys %q, want two different ones", keys)
	}
	if diff := cmp.Diff([]int{1, 2}, tries); diff != "" {
		t.Errorf("step attempts of the calls (-want +got):\n%s", diff)
	}
	want := []string{"created start ->QUEUED", "transition Begin QUEUED->WORKING", "step lease_expired WORKING->WORKING", "transition Finish WORKING->DONE"}
	if diff := cmp.Diff(want, s.moves(t, run.ID)); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
	expired := s.steps(t, run.ID, "lease_expired")
	if len(expired) != 1 || expired[0]["try_key"] != keys[0] || expired[0]["step_attempt"] != float64(2) {
		t.Errorf("lease_expired steps %v, want one naming the first try %s, step attempt 2", expired, keys[0])
	}
}

// TestSoakUnavailableServer: two workers drive 100 runs while, over and
// over, every connection slot they may use is taken by another client and
// their connections are terminated, until one of their statements has been
// refused (SQLSTATE 53300), then given back until the handlers made some
// progress. Every run succeeds; no try is charged to a handler (no failed
// try, no parked run); every call of a handler has a key of its own and is
// in the log, by its transition or, for a try interrupted by the outage, by
// a lease_expired step.
func TestSoakUnavailableServer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const runs = 100
	s := newSlots(t, 4)
	var (
		mu   sync.Mutex
		keys = map[string]string{} // try key -> run
	)
	progress := make(chan struct{}, runs)
	d := &driver{def: jobDef("job", nil, "GiveUp"), guards: ownerGuard(), handlers: map[string]handler{
		"QUEUED": constant(event("Begin")),
		"WORKING": func(ctx context.Context, run *runtime.Run) (runtime.Event, error) {
			mu.Lock()
			if other, ok := keys[run.TryKey]; ok {
				t.Errorf("try key %s of run %s given before, to run %s", run.TryKey, run.ID, other)
			}
			keys[run.TryKey] = run.ID
			mu.Unlock()
			select {
			case progress <- struct{}{}:
			default:
			}
			return event("Finish"), nil
		},
	}}
	refused := make(chan struct{}, 1)
	logger := slog.New(retryLog{Handler: quiet.Handler(), on: func(string) {
		select {
		case refused <- struct{}{}:
		default:
		}
	}})
	var engines []*engine.Engine
	for i := range 2 {
		e := s.engine(t, engine.Config{WorkerID: fmt.Sprintf("soak-%d", i), Lease: 5 * time.Second, Concurrency: 4,
			DisableNotify: true, PollInterval: 20 * time.Millisecond, Logger: logger}, d)
		engines = append(engines, e)
	}
	ids := make([]string, runs)
	for i := range ids {
		ids[i] = s.start(t, engines[0], "job", fmt.Sprintf("k%d", i)).ID
	}

	// The workers start under an outage; each outage ends once a statement
	// of theirs was refused, and the next begins after the next call of a
	// handler.
	done := make(chan struct{})
	var outages atomic.Int32
	chaos := make(chan error, 1)
	if err := s.exhaust(ctx); err != nil {
		t.Fatal(err)
	}
	go func() {
		// The slots are given back before the test reads the logs.
		end := func(err error) {
			chaos <- errors.Join(err, s.free(ctx))
		}
		for {
			select {
			case <-refused:
				outages.Add(1)
			case <-done:
				end(nil)
				return
			}
			if err := s.free(ctx); err != nil {
				end(err)
				return
			}
			select {
			case <-progress:
			case <-done:
				end(nil)
				return
			}
			if err := s.exhaust(ctx); err != nil {
				end(err)
				return
			}
		}
	}()
	for _, e := range engines {
		work(t, e)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	for _, id := range ids {
		got, err := engines[1].Wait(waitCtx, id)
		if err != nil || got.State != "DONE" {
			close(done)
			t.Fatalf("run %s in %s (%s %q): %v", id, got.State, got.LastErrorCode, got.LastError, err)
		}
	}
	close(done)
	if err := <-chaos; err != nil {
		t.Fatal(err)
	}
	if outages.Load() == 0 {
		t.Fatal("no statement of the workers was refused a connection")
	}

	var calls, logged int
	mu.Lock()
	calls = len(keys)
	mu.Unlock()
	var (
		failed, parked, bad []string
		expired             []string
	)
	for _, id := range ids {
		h, err := s.st.History(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range h {
			switch {
			case st.Kind == store.KindTransition && st.Event == "Finish":
				logged++
			case st.Kind == store.KindStep && st.Name == "lease_expired" && st.From == "WORKING":
				logged++
				expired = append(expired, id)
			case st.Kind == store.KindStep && st.Name == "attempt_failed":
				failed = append(failed, id)
			case st.Kind == store.KindStep && st.Name == "parked":
				parked = append(parked, id)
			}
		}
		if got := s.get(t, id); got.Result == nil || got.Result.ErrorCode != "" {
			bad = append(bad, id)
		}
	}
	if len(failed)+len(parked)+len(bad) > 0 {
		t.Errorf("tries charged to handlers: failed %v, parked %v, with an error %v", failed, parked, bad)
	}
	if calls != logged {
		t.Errorf("%d handler calls, %d in the logs (%d interrupted: %v)", calls, logged, len(expired), expired)
	}
	t.Logf("%d outages, %d handler calls, %d interrupted", outages.Load(), calls, len(expired))
}

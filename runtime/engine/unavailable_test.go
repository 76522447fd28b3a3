package engine_test

import (
	"context"
	"errors"
	"log/slog"
	"net/url"
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
// limit, and a hog that can take every slot of that role away from it.
type slots struct {
	env
	admin string // the database as a superuser, whom no limit holds
	role  string

	mu  sync.Mutex
	hog []*pgx.Conn
}

// newSlots returns slots on a new database for a role limited to limit
// connections, with an engine pool of at most limit connections that hands
// out idle connections without checking them.
func newSlots(t *testing.T, limit int) *slots {
	t.Helper()
	admin := pgtest.NewDatabase(t)
	dsn := pgtest.NewRole(t, admin, limit)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
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
	s := &slots{env: env{pool: pool, st: store.New(pool)}, admin: admin, role: u.User.Username()}
	t.Cleanup(s.free)
	return s
}

// exhaust takes every connection slot of the role: it terminates the
// role's connections that are not the hog's and opens connections as the
// role until the server refuses one with SQLSTATE 53300, until none but the
// hog's are left.
func (s *slots) exhaust(ctx context.Context, dsn string) error {
	admin, err := pgx.Connect(ctx, s.admin)
	if err != nil {
		return err
	}
	defer admin.Close(ctx)
	for {
		s.mu.Lock()
		pids := make([]uint32, len(s.hog))
		for i, c := range s.hog {
			pids[i] = c.PgConn().PID()
		}
		s.mu.Unlock()
		var others int
		err := admin.QueryRow(ctx, `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 5000))
			FROM pg_stat_activity WHERE usename = $1 AND NOT (pid = ANY ($2::int[]))`, s.role, pids).Scan(&others)
		if err != nil {
			return err
		}
		if others == 0 && len(pids) > 0 {
			return nil
		}
		for {
			c, err := pgx.Connect(ctx, dsn)
			if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && pgErr.Code == "53300" {
				break
			}
			if err != nil {
				return err
			}
			s.mu.Lock()
			s.hog = append(s.hog, c)
			s.mu.Unlock()
		}
	}
}

// free gives the hog's slots back.
func (s *slots) free() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.hog {
		c.Close(context.Background())
	}
	s.hog = nil
}

// retryLog is a slog.Handler that calls on for each report of a statement
// of the engine tried again after the server refused it a connection for
// want of a slot (SQLSTATE 53300), with the statement's name.
type retryLog struct {
	slog.Handler
	on func(op string)
}

func (h retryLog) Handle(ctx context.Context, r slog.Record) error {
	if r.Message != "server unavailable; trying again" {
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
			limited := s.pool.Config().ConnConfig.ConnString()
			var calls atomic.Int32
			d := &driver{def: jobDef("job", tc.pol, "GiveUp"), guards: ownerGuard(), handlers: map[string]handler{
				"QUEUED": constant(event("Begin")),
				"WORKING": func(ctx context.Context, run *runtime.Run) (runtime.Event, error) {
					calls.Add(1)
					if err := s.exhaust(ctx, limited); err != nil {
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
			var got store.Run
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
				s.free()
				t.Fatalf("Drive returned before any statement was tried again: run in %s, %s %q: %v", got.State, got.LastErrorCode, got.LastError, err)
			}
			s.free()
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
	limited := s.pool.Config().ConnConfig.ConnString()
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
				if err := s.exhaust(ctx, limited); err != nil {
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
	var got store.Run
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
		s.free()
		t.Fatalf("Drive returned before the lease was given up as interrupted: run in %s, %s %q: %v", got.State, got.LastErrorCode, got.LastError, err)
	}
	s.free()
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

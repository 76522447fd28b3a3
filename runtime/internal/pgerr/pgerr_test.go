package pgerr_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fsmgen/fsmgen/runtime/internal/pgerr"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestConnectionReal classifies the errors a real server and a real client
// give.
func TestUnavailableReal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t, pgtest.Empty())
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	killer, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer killer.Close(ctx)

	// A statement's own error is not a connection error.
	_, err = conn.Exec(ctx, "SELECT 1/0")
	if err == nil || pgerr.Unavailable(err) {
		t.Errorf("division by zero: %v, classed as a connection error", err)
	}
	// A cancelled context is not either.
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := conn.Exec(cancelled, "SELECT 1"); err == nil || pgerr.Unavailable(err) {
		t.Errorf("cancelled query: %v, classed as a connection error", err)
	}

	// The connection's backend is terminated: the next statement fails
	// with a connection error, and so does the one after it.
	if _, err := killer.Exec(ctx, "SELECT pg_terminate_backend($1, 5000)", conn.PgConn().PID()); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		_, err := conn.Exec(ctx, "SELECT 1")
		if err == nil || !pgerr.Unavailable(err) {
			t.Errorf("statement %d on a terminated connection: %v, not classed as a connection error", i+1, err)
		}
	}

	// Nothing listens: the connection is refused.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().(*net.TCPAddr)
	l.Close()
	_, err = pgx.Connect(ctx, fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=5", addr.Port))
	if err == nil || !pgerr.Unavailable(err) {
		t.Errorf("connect to a closed port: %v, not classed as a connection error", err)
	}
}

func TestUnavailableCodes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("boom"), false},
		{&pgconn.PgError{Code: "08006"}, true},
		{&pgconn.PgError{Code: "08001"}, true},
		{&pgconn.PgError{Code: "57P01"}, true},
		{&pgconn.PgError{Code: "57P02"}, true},
		{&pgconn.PgError{Code: "57P03"}, true},
		{&pgconn.PgError{Code: "57P05"}, true},
		{&pgconn.PgError{Code: "53300"}, true},  // too_many_connections
		{&pgconn.PgError{Code: "53200"}, true},  // out_of_memory
		{&pgconn.PgError{Code: "53100"}, true},  // disk_full
		{&pgconn.PgError{Code: "53400"}, true},  // configuration_limit_exceeded
		{&pgconn.PgError{Code: "57P04"}, false}, // database_dropped
		{&pgconn.PgError{Code: "57014"}, false}, // query_canceled
		{&pgconn.PgError{Code: "40001"}, false}, // serialization_failure
		{&pgconn.PgError{Code: "22P05"}, false},
		{fmt.Errorf("store: advance: %w", &pgconn.PgError{Code: "57P01"}), true},
		{fmt.Errorf("read: %w", io.ErrUnexpectedEOF), true},
		{io.EOF, true},
		{context.DeadlineExceeded, false},
		{fmt.Errorf("%w: %w", context.Canceled, io.EOF), false},
	}
	for _, tc := range tests {
		if got := pgerr.Unavailable(tc.err); got != tc.want {
			t.Errorf("Unavailable(%v) = %t, want %t", tc.err, got, tc.want)
		}
	}
}

// TestUnavailableRefusedConnection: a server that refuses a connection for
// want of a slot (SQLSTATE 53300, too_many_connections) is unavailable; one
// that refuses it for a database that does not exist is not.
func TestUnavailableRefusedConnection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t, pgtest.Empty())
	_, limited := pgtest.NewRole(t, dsn, 1)
	held, err := pgx.Connect(ctx, limited)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close(ctx)

	_, err = pgx.Connect(ctx, limited)
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); !ok || pgErr.Code != "53300" {
		t.Fatalf("second connection of a role limited to one: %v, want SQLSTATE 53300", err)
	}
	if !pgerr.Unavailable(err) {
		t.Errorf("connection refused for want of a slot: %v, not classed as unavailable", err)
	}

	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Database = "fsmgen_no_such_database"
	_, err = pgx.ConnectConfig(ctx, cfg)
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); !ok || pgErr.Code != "3D000" {
		t.Fatalf("connection to a database that does not exist: %v, want SQLSTATE 3D000", err)
	}
	if pgerr.Unavailable(err) {
		t.Errorf("connection to a database that does not exist: %v, classed as unavailable", err)
	}
}

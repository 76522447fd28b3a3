// Package pgerr classifies errors of PostgreSQL clients for the runtime:
// Unavailable tells an error of the server's availability (a lost or
// refused connection, a shutdown, a lack of resources), which a caller may
// retry on a new connection, from an error of the statement itself.
package pgerr

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// Unavailable reports whether err says that the server could not serve
// the statement, rather than that the statement failed: the connection to
// it was lost, closed or could not be made, the server is shutting down or
// starting up, or it lacks a resource. That is SQLSTATE class 08
// (connection exception), class 53 (insufficient resources: 53300
// too_many_connections, 53200 out_of_memory, 53100 disk_full, 53400
// configuration_limit_exceeded), 57P01 (admin_shutdown), 57P02
// (crash_shutdown), 57P03 (cannot_connect_now), 57P05
// (idle_session_timeout); pgconn's connect errors without a SQLSTATE (a
// refused or unreachable address); a connection closed or reset under the
// query (EOF, a network error); or a request pgconn did not send
// (SafeToRetry). A connect error with another SQLSTATE (a refused password,
// a database that does not exist) is not: no retry would change it. A
// cancelled or timed-out context is not either.
//
// When the statement was sent, such an error leaves it unknown whether it
// committed: a caller that retries a write must recognise its own write
// having been applied.
func Unavailable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok {
		switch pgErr.Code {
		case "57P01", "57P02", "57P03", "57P05":
			return true
		}
		return strings.HasPrefix(pgErr.Code, "08") || strings.HasPrefix(pgErr.Code, "53")
	}
	if _, ok := errors.AsType[*pgconn.ConnectError](err); ok {
		return true
	}
	if _, ok := errors.AsType[net.Error](err); ok {
		return true
	}
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed),
		errors.Is(err, pgconn.ErrConnClosed), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.EPIPE):
		return true
	}
	return pgconn.SafeToRetry(err)
}

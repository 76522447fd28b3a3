// Package pgerr classifies errors of PostgreSQL clients for the runtime:
// Connection tells a lost or refused connection, which a caller may retry
// on a new one, from an error of the statement itself.
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

// Connection reports whether err says that the connection to the server
// was lost, closed or could not be made, rather than that the statement
// failed: SQLSTATE class 08 (connection exception), 57P01
// (admin_shutdown), 57P02 (crash_shutdown), 57P03 (cannot_connect_now),
// pgconn's connect errors, a connection closed or reset under the query
// (EOF, a network error), or a request pgconn did not send (SafeToRetry).
// A cancelled or timed-out context is not a connection error.
//
// When the statement was sent, a connection error leaves it unknown
// whether it committed: a caller that retries a write must recognise its
// own write having been applied.
func Connection(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok {
		switch pgErr.Code {
		case "57P01", "57P02", "57P03":
			return true
		}
		return strings.HasPrefix(pgErr.Code, "08")
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

package enginestore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/internal/dbsqlc"
	"github.com/fsmgen/fsmgen/runtime/internal/diag"
)

// errCaptured is what a query made on a capture returns: it was not sent.
var errCaptured = errors.New("statement captured, not sent")

// capture is a dbsqlc.DBTX that sends nothing: it keeps the statement (text
// and arguments) that a generated query gives it, to be queued in a
// pgx.Batch, so that statements of different queries go to the server in
// one round trip.
type capture struct {
	sql  string
	args []any
}

func (c *capture) keep(sql string, args []any) { c.sql, c.args = sql, args }

func (c *capture) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	c.keep(sql, args)
	return pgconn.CommandTag{}, errCaptured
}

func (c *capture) Query(_ context.Context, sql string, args ...any) (pgx.Rows, error) {
	c.keep(sql, args)
	return nil, errCaptured
}

func (c *capture) QueryRow(_ context.Context, sql string, args ...any) pgx.Row {
	c.keep(sql, args)
	return capturedRow{}
}

type capturedRow struct{}

func (capturedRow) Scan(...any) error { return errCaptured }

// queue queues the statement that query gives q (a dbsqlc.Queries on c).
func (c *capture) queue(b *pgx.Batch, query func()) {
	query()
	b.Queue(c.sql, c.args...)
}

// pipelined reports whether a transition with fx and no actions is written
// by advancePipelined: its effects are steps only.
func pipelined(fx *Effects, actions func(context.Context) error) bool {
	return actions == nil && fx != nil && len(fx.Messages)+len(fx.Starts)+len(fx.Delivered)+len(fx.Tx) == 0
}

// advancePipelined writes a transition and the steps logged before it in
// one round trip and one transaction: each step with InsertStepBefore,
// which logs it only when the transition will move the run, then the
// transition with AdvanceRun, sent together as a pipeline that commits at
// its end (or not at all). It returns the row AdvanceRun returned, or
// pgx.ErrNoRows when the run did not move (and no step was logged).
func (s *Store) advancePipelined(ctx context.Context, id pgtype.UUID, arg dbsqlc.AdvanceRunParams, steps []StepEffect) (dbsqlc.AdvanceRunRow, error) {
	var (
		b pgx.Batch
		c capture
	)
	q := dbsqlc.New(&c)
	for _, st := range steps {
		if st.Name == "" {
			return dbsqlc.AdvanceRunRow{}, fmt.Errorf("%w: empty step name", runtime.ErrInvalidInput)
		}
		if err := s.db.CheckText("step name", st.Name); err != nil {
			return dbsqlc.AdvanceRunRow{}, err
		}
		raw, err := s.db.EncodeJSON("payload of step "+diag.Short(st.Name), st.Payload)
		if err != nil {
			return dbsqlc.AdvanceRunRow{}, err
		}
		c.queue(&b, func() {
			_, _ = q.InsertStepBefore(ctx, dbsqlc.InsertStepBeforeParams{StepName: st.Name, Payload: raw, Now: arg.Now, ID: id,
				FromState: arg.FromState, RowVersion: arg.RowVersion, WorkflowType: arg.WorkflowType, DefinitionVersion: arg.DefinitionVersion,
				Fenced: arg.Fenced, Owner: arg.Owner, Epoch: arg.Epoch})
		})
	}
	c.queue(&b, func() { _, _ = q.AdvanceRun(ctx, arg) })
	br := s.db.Pool().SendBatch(ctx, &b)
	row, err := func() (dbsqlc.AdvanceRunRow, error) {
		for range steps {
			if _, err := br.Exec(); err != nil {
				return dbsqlc.AdvanceRunRow{}, err
			}
		}
		rows, err := br.Query()
		if err != nil {
			return dbsqlc.AdvanceRunRow{}, err
		}
		// AdvanceRunRow's fields are the statement's columns, in order.
		return pgx.CollectExactlyOneRow(rows, pgx.RowToStructByPos[dbsqlc.AdvanceRunRow])
	}()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return row, err
}

package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/internal/dbsqlc"
	"github.com/fsmgen/fsmgen/runtime/internal/diag"
	"github.com/fsmgen/fsmgen/runtime/internal/pgstore"
)

// Get reads a run.
func (s *Store) Get(ctx context.Context, runID string) (runtime.Run, error) {
	return s.get(ctx, "get", runID)
}

func (s *Store) get(ctx context.Context, op, runID string) (runtime.Run, error) {
	id, err := pgstore.ParseRunID(op, runID)
	if err != nil {
		return runtime.Run{}, err
	}
	row, err := s.db().Queries(nil).GetRun(ctx, id)
	if err != nil {
		return runtime.Run{}, pgstore.RunErr(op, runID, pgstore.Translate(err))
	}
	run, err := pgstore.RunFromRow(row)
	if err != nil {
		return run, pgstore.RunErr(op, runID, err)
	}
	return run, nil
}

// Load reads a run that a machine with definition def is to drive, checks
// that the run follows def (same type and version) and that def knows its
// current state, and returns the run with a Recorder bound to it. Rebuild the
// generated machine from it:
//
//	run, rec, err := st.Load(ctx, id, mymachine.Definition())
//	if err != nil { ... }
//	state, err := mymachine.ParseState(run.State)
//	if err != nil { ... }
//	m := mymachine.New(..., mymachine.WithState(state), mymachine.WithRecorder(rec))
func (s *Store) Load(ctx context.Context, runID string, def runtime.Definition) (runtime.Run, *Recorder, error) {
	run, err := s.get(ctx, "load", runID)
	if err != nil {
		return run, nil, err
	}
	if run.Type != def.Type || run.Version != def.Version {
		return run, nil, pgstore.RunErr("load", runID, fmt.Errorf("%w: the run is %s v%d, the machine is %s v%d",
			runtime.ErrDefinitionMismatch, run.Type, run.Version, def.Type, def.Version))
	}
	if _, ok := def.StateOf(run.State); !ok {
		return run, nil, pgstore.RunErr("load", runID, fmt.Errorf("%w: the run is in state %q, which %s v%d does not have",
			runtime.ErrUnknownState, run.State, def.Type, def.Version))
	}
	return run, s.Recorder(run), nil
}

// StepKind says what a log row records.
type StepKind string

// The kinds of log rows.
const (
	// KindCreated is a run's first row: it entered the initial state.
	KindCreated StepKind = "created"
	// KindTransition is a state change on an event.
	KindTransition StepKind = "transition"
	// KindRestarted is a failed run reset to the initial state.
	KindRestarted StepKind = "restarted"
	// KindStep is an observable sub-step logged with LogStep; the state does
	// not change.
	KindStep StepKind = "step"
	// KindUpgraded is a live run moved to another version of its machine
	// by a registered upgrade (Store.Upgrade): From and To are its
	// states in the old and the new version, and the row's version is the
	// new one. The log stores it as "migrated", the word of the database
	// schema, which keeps its names.
	KindUpgraded StepKind = "migrated"
	// KindTerminated is an operator's terminate (admin.Terminate): the run
	// ended where it was, From and To its state, without a transition.
	// Its payload is {"reason", "by", "role", "root"}: why, who, the
	// session's database role and the run terminated (this one, or the
	// ancestor terminated with its descendants).
	KindTerminated StepKind = "terminated"
)

// Step is one row of a run's append-only log.
type Step struct {
	ID      int64
	RunID   string
	Type    string
	Version int
	Attempt int
	Kind    StepKind
	// Name is the step's name: the event's name for a transition, "start"
	// and "restart" for the creation and the restart of the run.
	Name string
	// Event is the event of a transition, empty otherwise.
	Event string
	// From and To are the states before and after; From is empty for the
	// creation of the run.
	From, To string
	// Payload is the event's payload (or the step's) as JSON, nil if none.
	Payload json.RawMessage
	// RowVersion is the run's row version after this row.
	RowVersion int64
	At         time.Time
	// Exited and Entered are, for a transition of a nested machine, the
	// states it exited (innermost first) and entered (outermost first):
	// both empty for an internal transition. Nil for a flat machine's
	// transitions, which exit From and enter To, and for other rows.
	Exited, Entered []string
}

// Decode decodes the step's payload into v.
func (st Step) Decode(v any) error {
	if st.Payload == nil {
		return pgstore.RunErr("decode payload of log row "+fmt.Sprint(st.ID), st.RunID, fmt.Errorf("%w: the row has no payload", runtime.ErrPayload))
	}
	if err := json.Unmarshal(st.Payload, v); err != nil {
		return pgstore.RunErr("decode payload of log row "+fmt.Sprint(st.ID), st.RunID, fmt.Errorf("%w: into %T: %w", runtime.ErrPayload, v, err))
	}
	return nil
}

// History returns every log row of a run, oldest first.
func (s *Store) History(ctx context.Context, runID string) ([]Step, error) {
	id, err := pgstore.ParseRunID("history", runID)
	if err != nil {
		return nil, err
	}
	rows, err := s.db().Queries(nil).History(ctx, id)
	if err != nil {
		return nil, pgstore.RunErr("history", runID, pgstore.Translate(err))
	}
	if len(rows) == 0 {
		// Every run has at least the row of its creation.
		ok, err := s.db().Queries(nil).RunExists(ctx, id)
		if err != nil {
			return nil, pgstore.RunErr("history", runID, pgstore.Translate(err))
		}
		if !ok {
			return nil, pgstore.RunErr("history", runID, runtime.ErrRunNotFound)
		}
	}
	out := make([]Step, len(rows))
	for i, r := range rows {
		out[i] = Step{
			ID: r.ID, RunID: pgstore.UUIDString(r.WorkflowRunID), Type: r.WorkflowType, Version: int(r.DefinitionVersion),
			Attempt: int(r.AttemptNo), Kind: StepKind(r.Kind), Name: r.StepName, Event: r.Event.String,
			From: r.StateBefore.String, To: r.StateAfter.String, Payload: pgstore.RawJSON(r.Payload),
			RowVersion: r.RowVersion, At: r.OccurredAt.Time, Exited: r.Exited, Entered: r.Entered,
		}
	}
	return out, nil
}

// LogStep appends an observable sub-step of a run to its log, at the run's
// current state and attempt. A finished run's log is closed: on a run that
// was succeeded, failed or cancelled before, it fails with runtime.ErrRunFinished
// and writes nothing (LogLink is the one row such a run still takes); in
// the transaction that finishes the run (LogStepTx after RecordTx) the step
// is still written. Use LogStepTx to write it in the transaction of
// the work it describes, together with the Emit calls that belong to it.
func (s *Store) LogStep(ctx context.Context, runID, name string, payload any) (Step, error) {
	return s.logStep(ctx, nil, runID, name, payload)
}

// LogStepTx is LogStep inside the caller's transaction.
func (s *Store) LogStepTx(ctx context.Context, tx pgx.Tx, runID, name string, payload any) (Step, error) {
	return s.logStep(ctx, tx, runID, name, payload)
}

func (s *Store) logStep(ctx context.Context, tx pgx.Tx, runID, name string, payload any) (Step, error) {
	op := "log step " + diag.Short(name)
	id, err := pgstore.ParseRunID(op, runID)
	if err != nil {
		return Step{}, err
	}
	if err := s.checkStepName(name); err != nil {
		return Step{}, pgstore.RunErr(op, runID, err)
	}
	raw, err := s.db().EncodeJSON("payload of step "+diag.Short(name), payload)
	if err != nil {
		return Step{}, pgstore.RunErr(op, runID, err)
	}
	row, err := s.db().Queries(tx).InsertStep(ctx, dbsqlc.InsertStepParams{StepName: name, Payload: raw, Now: s.db().Now(), ID: id})
	if errors.Is(err, pgx.ErrNoRows) {
		err = s.whyNotRunning(ctx, tx, id)
	}
	if err != nil {
		return Step{}, pgstore.RunErr(op, runID, pgstore.Translate(err))
	}
	return Step{ID: row.ID, RunID: runID, Kind: KindStep, Name: name, Payload: pgstore.RawJSON(raw), At: row.OccurredAt.Time}, nil
}

// checkStepName refuses an empty step name or one that is not valid text.
func (s *Store) checkStepName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: empty step name", runtime.ErrInvalidInput)
	}
	return s.db().CheckText("step name", name)
}

// LogLink appends to the log of a run, in whatever status, a step row that
// names another run: its payload is {"run_id": linkedID}. It links a
// finished run to a run that carries its work on (the step engine's rerun
// of a succeeded run), the one row that a finished run's log still takes.
// linkedID must be an existing run; else it fails with runtime.ErrRunNotFound.
func (s *Store) LogLink(ctx context.Context, runID, name, linkedID string) (Step, error) {
	op := "log link " + diag.Short(name)
	id, err := pgstore.ParseRunID(op, runID)
	if err != nil {
		return Step{}, err
	}
	linked, err := pgstore.ParseRunID(op, linkedID)
	if err != nil {
		return Step{}, err
	}
	if err := s.checkStepName(name); err != nil {
		return Step{}, pgstore.RunErr(op, runID, err)
	}
	row, err := s.db().Queries(nil).InsertLink(ctx, dbsqlc.InsertLinkParams{StepName: name, Now: s.db().Now(), ID: id, LinkedID: linked})
	if errors.Is(err, pgx.ErrNoRows) {
		err = fmt.Errorf("%w: run %s or the linked run %s", runtime.ErrRunNotFound, runID, linkedID)
	}
	if err != nil {
		return Step{}, pgstore.RunErr(op, runID, pgstore.Translate(err))
	}
	return Step{ID: row.ID, RunID: runID, Kind: KindStep, Name: name, Payload: pgstore.RawJSON(row.Payload), At: row.OccurredAt.Time}, nil
}

// whyNotRunning returns why a write for a running run wrote nothing: the
// run does not exist (pgx.ErrNoRows, which Translate makes runtime.ErrRunNotFound)
// or is finished (runtime.ErrRunFinished, naming its status and state).
func (s *Store) whyNotRunning(ctx context.Context, tx pgx.Tx, id pgtype.UUID) error {
	r, err := s.db().Queries(tx).GetRun(ctx, id)
	if err != nil {
		return err
	}
	return fmt.Errorf("%w: it is %s in %s", runtime.ErrRunFinished, r.Status, r.CurrentState)
}

// Message is a row of the outbox.
type Message struct {
	ID          int64
	RunID       string
	Type        string
	Attempt     int
	Topic       string
	Payload     json.RawMessage
	CreatedAt   time.Time
	PublishedAt time.Time // zero until a relay publishes it
}

// Emit writes a message for the outside world to the outbox on behalf of a
// run. On a run that was finished before, it fails with runtime.ErrRunFinished and
// writes nothing; in the transaction that finishes the run the message is
// still written. To keep a message with the step that produced it, call EmitTx in the
// step's transaction:
//
//	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
//		if _, err := st.RecordTx(ctx, tx, run.ID, run.RowVersion, t); err != nil {
//			return err
//		}
//		_, err := st.EmitTx(ctx, tx, run.ID, "order.shipped", evt)
//		return err
//	})
func (s *Store) Emit(ctx context.Context, runID, topic string, payload any) (Message, error) {
	return s.emit(ctx, nil, runID, topic, payload)
}

// EmitTx is Emit inside the caller's transaction.
func (s *Store) EmitTx(ctx context.Context, tx pgx.Tx, runID, topic string, payload any) (Message, error) {
	return s.emit(ctx, tx, runID, topic, payload)
}

func (s *Store) emit(ctx context.Context, tx pgx.Tx, runID, topic string, payload any) (Message, error) {
	op := "emit " + diag.Short(topic)
	id, err := pgstore.ParseRunID(op, runID)
	if err != nil {
		return Message{}, err
	}
	if topic == "" {
		return Message{}, pgstore.RunErr(op, runID, fmt.Errorf("%w: empty topic", runtime.ErrInvalidInput))
	}
	if err := s.db().CheckText("topic", topic); err != nil {
		return Message{}, pgstore.RunErr(op, runID, err)
	}
	raw, err := s.db().EncodeJSON("payload of message "+diag.Short(topic), payload)
	if err != nil {
		return Message{}, pgstore.RunErr(op, runID, err)
	}
	row, err := s.db().Queries(tx).InsertOutbox(ctx, dbsqlc.InsertOutboxParams{Topic: topic, Payload: raw, Now: s.db().Now(), ID: id})
	if errors.Is(err, pgx.ErrNoRows) {
		err = s.whyNotRunning(ctx, tx, id)
	}
	if err != nil {
		return Message{}, pgstore.RunErr(op, runID, pgstore.Translate(err))
	}
	return Message{ID: row.ID, RunID: runID, Topic: topic, Payload: pgstore.RawJSON(raw), CreatedAt: row.CreatedAt.Time}, nil
}

// Outbox returns the outbox messages of a run, oldest first.
func (s *Store) Outbox(ctx context.Context, runID string) ([]Message, error) {
	id, err := pgstore.ParseRunID("outbox", runID)
	if err != nil {
		return nil, err
	}
	rows, err := s.db().Queries(nil).ListOutbox(ctx, id)
	if err != nil {
		return nil, pgstore.RunErr("outbox", runID, pgstore.Translate(err))
	}
	out := make([]Message, len(rows))
	for i, r := range rows {
		out[i] = Message{
			ID: r.ID, RunID: pgstore.UUIDString(r.WorkflowRunID), Type: r.WorkflowType, Attempt: int(r.AttemptNo),
			Topic: r.Topic, Payload: pgstore.RawJSON(r.Payload), CreatedAt: r.CreatedAt.Time, PublishedAt: r.PublishedAt.Time,
		}
	}
	return out, nil
}

// Filter selects runs for List and Count: the runtime's filter, and the
// creation times, search and paging that the tools (fsmctl, the console)
// use. Zero fields select everything.
type Filter struct {
	runtime.Filter
	// CreatedFrom and CreatedTo bound created_at: From <= created_at < To.
	CreatedFrom, CreatedTo time.Time
	// Search, when not empty, selects the runs whose idempotency key is
	// Search, and, when Search is hex digits (dashes aside), the runs whose
	// id starts with them: "6f1c2a3e" finds the run a list shows as such.
	Search string
	// Parked selects only the parked runs (a run whose handler failed
	// every try, waiting for an operator's resume).
	Parked bool
	// Newest lists the newest runs first: (created_at, id) descending
	// instead of ascending.
	Newest bool
	// After is the ID of the last run of the previous page: List returns
	// the runs that follow it in the list's order.
	After string
	// Before is the ID of the first run of the next page: List returns the
	// page of runs that precede it in the list's order, in that order (the
	// previous page). At most one of After and Before may be set.
	Before string
}

// List returns the runs that match f, in (created_at, id) order, or its
// reverse with f.Newest. Pages are read from an index range that starts at
// the cursor (f.After, f.Before), never by skipping rows.
func (s *Store) List(ctx context.Context, f Filter) ([]runtime.Run, error) {
	where, err := f.params()
	if err != nil {
		return nil, err
	}
	p := dbsqlc.ListRunsParams{
		WorkflowType: where.WorkflowType, States: where.States, Status: where.Status, TenantID: where.TenantID,
		IdempotencyKey: where.IdempotencyKey, CreatedFrom: where.CreatedFrom, CreatedTo: where.CreatedTo,
		Search: where.Search, IDFrom: where.IDFrom, IDTo: where.IDTo, Parked: where.Parked,
	}
	switch {
	case f.Limit < 0 || f.Limit > 10000:
		return nil, pgstore.RunErr("list", "", fmt.Errorf("%w: limit %d, want 0..10000", runtime.ErrInvalidInput, f.Limit))
	case f.Limit > 0:
		p.MaxRows = int32(f.Limit)
	default:
		p.MaxRows = 100
	}
	if f.After != "" && f.Before != "" {
		return nil, pgstore.RunErr("list", "", fmt.Errorf("%w: both after %s and before %s", runtime.ErrInvalidInput, f.After, f.Before))
	}
	cursor := f.After + f.Before
	if cursor != "" {
		if p.AfterID, err = pgstore.ParseRunID("list", cursor); err != nil {
			return nil, err
		}
	}
	// Ascending from After, or descending from Before, read in the order
	// of the list; the other two read the other way from the cursor, and
	// the page is turned round.
	ascending := f.Newest == (f.Before != "")
	var rows []dbsqlc.WorkflowRun
	if ascending {
		rows, err = s.db().Queries(nil).ListRuns(ctx, p)
	} else {
		rows, err = s.db().Queries(nil).ListRunsNewest(ctx, dbsqlc.ListRunsNewestParams{
			WorkflowType: p.WorkflowType, States: p.States, Status: p.Status, TenantID: p.TenantID,
			IdempotencyKey: p.IdempotencyKey, CreatedFrom: p.CreatedFrom, CreatedTo: p.CreatedTo,
			Search: p.Search, IDFrom: p.IDFrom, IDTo: p.IDTo, Parked: p.Parked, BeforeID: p.AfterID, MaxRows: p.MaxRows,
		})
	}
	if err != nil {
		return nil, pgstore.RunErr("list", "", pgstore.Translate(err))
	}
	if f.Before != "" {
		slices.Reverse(rows)
	}
	out := make([]runtime.Run, 0, len(rows))
	var errs []error
	for _, r := range rows {
		run, err := pgstore.RunFromRow(r)
		if err != nil {
			errs = append(errs, pgstore.RunErr("list", run.ID, err))
		}
		out = append(out, run)
	}
	return out, errors.Join(errs...)
}

// Count returns the number of runs that match f, over all its pages: its
// order, paging and limit do not count.
func (s *Store) Count(ctx context.Context, f Filter) (int64, error) {
	where, err := f.params()
	if err != nil {
		return 0, err
	}
	n, err := s.db().Queries(nil).CountRuns(ctx, where)
	if err != nil {
		return 0, pgstore.RunErr("count", "", pgstore.Translate(err))
	}
	return n, nil
}

// params are the conditions of f, as the list and count queries take them.
func (f Filter) params() (dbsqlc.CountRunsParams, error) {
	p := dbsqlc.CountRunsParams{
		WorkflowType:   pgtype.Text{String: f.Type, Valid: f.Type != ""},
		States:         f.States,
		Status:         pgtype.Text{String: string(f.Status), Valid: f.Status != ""},
		TenantID:       pgtype.Text{String: f.TenantID, Valid: f.TenantID != ""},
		IdempotencyKey: pgtype.Text{String: f.IdempotencyKey, Valid: f.IdempotencyKey != ""},
		CreatedFrom:    pgtype.Timestamptz{Time: f.CreatedFrom, Valid: !f.CreatedFrom.IsZero()},
		CreatedTo:      pgtype.Timestamptz{Time: f.CreatedTo, Valid: !f.CreatedTo.IsZero()},
		Search:         pgtype.Text{String: f.Search, Valid: f.Search != ""},
		Parked:         f.Parked,
	}
	if p.States == nil {
		p.States = []string{}
	}
	if prefix := strings.ReplaceAll(strings.ToLower(f.Search), "-", ""); prefix != "" && len(prefix) <= 32 &&
		strings.Trim(prefix, "0123456789abcdef") == "" {
		for _, id := range []struct {
			to    *pgtype.UUID
			digit string
		}{{&p.IDFrom, "0"}, {&p.IDTo, "f"}} {
			h := prefix + strings.Repeat(id.digit, 32-len(prefix))
			if err := id.to.Scan(h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]); err != nil {
				return p, pgstore.RunErr("list", "", fmt.Errorf("%w: search %q: %w", runtime.ErrInvalidInput, f.Search, err))
			}
		}
	}
	return p, nil
}

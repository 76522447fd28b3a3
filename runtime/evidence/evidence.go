package evidence

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Errors of the package, matched with errors.Is.
var (
	// ErrBroken: a run's chain does not check out (see Break).
	ErrBroken = errors.New("evidence chain broken")
	// ErrAppendOnly: the database refused an UPDATE, DELETE or TRUNCATE of
	// evidence_records (SQLSTATE FS007).
	ErrAppendOnly = errors.New("evidence is append-only")
	// ErrNoEvidence: the run has no evidence records.
	ErrNoEvidence = errors.New("no evidence")
)

// Querier is what the functions need: a pool, a connection or a
// transaction.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Enable makes the runs of workflowType record evidence from now on: it
// installs the type's trigger on workflow_step_logs through the database
// function fsmgen_enable_evidence, which runs with the schema owner's rights
// (a role that does not own the schema creates no trigger itself);
// idempotent; it takes a brief lock on that table, so call it at set-up,
// not per request.
func Enable(ctx context.Context, q Querier, workflowType string) error {
	if workflowType == "" || strings.ContainsRune(workflowType, 0) {
		return fmt.Errorf("evidence: enable %q: invalid workflow type", workflowType)
	}
	if _, err := q.Exec(ctx, `SELECT fsmgen_enable_evidence($1)`, workflowType); err != nil {
		return fmt.Errorf("evidence: enable %s: %w", workflowType, err)
	}
	return nil
}

// Implied makes every transition of a run of workflowType on event also
// record evidence of kind kind: a trigger on workflow_step_logs logs the
// step evidence.<kind>, after the transition's row, in its transaction and
// at the state it reached, with payload (a JSON object) and the event's
// payload merged into it. It is the evidence of a transition that no
// handler makes, and so no handler logs: a timer's ("the authorization
// window closed": the decision's rationale) or a signal's. Call Enable for
// the type too, which chains the step like any other; Implied is
// idempotent per (type, event, kind) and, like Enable, for set-up (it
// installs the trigger through fsmgen_enable_implied_evidence).
func Implied(ctx context.Context, q Querier, workflowType, event, kind string, payload any) error {
	for _, s := range []string{workflowType, event, kind} {
		if s == "" || strings.ContainsRune(s, 0) {
			return fmt.Errorf("evidence: implied %q on %s/%s: invalid name", kind, workflowType, event)
		}
	}
	raw, err := json.Marshal(payload)
	if err != nil || len(raw) == 0 || raw[0] != '{' {
		return fmt.Errorf("evidence: implied %s on %s/%s: the payload must be a JSON object (%v)", kind, workflowType, event, err)
	}
	if _, err := q.Exec(ctx, `SELECT fsmgen_enable_implied_evidence($1, $2, $3, $4::jsonb)`, workflowType, event, kind, string(raw)); err != nil {
		return fmt.Errorf("evidence: implied %s on %s/%s: %w", kind, workflowType, event, err)
	}
	return nil
}

// Record is one evidence record.
type Record struct {
	// ID is the record's id in evidence_records.
	ID int64 `json:"id"`
	// RunID and Type name the run.
	RunID string `json:"runId"`
	Type  string `json:"workflowType"`
	// Seq numbers the run's records from 1.
	Seq int `json:"seq"`
	// Kind is "created", "transition", or the kind of a logged evidence
	// step ("final_decision_rationale").
	Kind string `json:"kind"`
	// StepLogID is the log row the record was made from.
	StepLogID int64 `json:"stepLogId"`
	// Content is what the record attests, as stored.
	Content json.RawMessage `json:"content"`
	// ContentText is the content as PostgreSQL prints it: the bytes that
	// ContentHash hashes.
	ContentText string `json:"contentText"`
	// ContentHash, PrevHash and Hash chain the record (see the package
	// doc).
	ContentHash string `json:"contentHash"`
	PrevHash    string `json:"prevHash"`
	Hash        string `json:"hash"`
	// RecordedAt is when the log row was written.
	RecordedAt time.Time `json:"recordedAt"`
}

// Content is the decoded content of a record.
type Content struct {
	RunID       string          `json:"run_id"`
	Type        string          `json:"workflow_type"`
	Seq         int             `json:"seq"`
	Kind        string          `json:"kind"`
	AttemptNo   int             `json:"attempt_no"`
	StateBefore *string         `json:"state_before"`
	StateAfter  *string         `json:"state_after"`
	Event       *string         `json:"event"`
	Payload     json.RawMessage `json:"payload"`
	OccurredAt  string          `json:"occurred_at"`
	// Exited and Entered name, for a transition of a nested machine, the
	// states it exited and entered; absent for every other record.
	Exited  []string `json:"exited,omitempty"`
	Entered []string `json:"entered,omitempty"`
}

// Decode decodes the record's content.
func (r Record) Decode() (Content, error) {
	var c Content
	if err := json.Unmarshal(r.Content, &c); err != nil {
		return c, fmt.Errorf("evidence: record %d of run %s: %w", r.Seq, r.RunID, err)
	}
	return c, nil
}

// Records returns the evidence records of run runID, in chain order.
func Records(ctx context.Context, q Querier, runID string) ([]Record, error) {
	rows, err := q.Query(ctx, `SELECT id, workflow_run_id::text, workflow_type, seq, kind, step_log_id, content::text,
       content_hash, prev_hash, hash, recorded_at
  FROM evidence_records WHERE workflow_run_id = $1::uuid ORDER BY seq`, runID)
	if err != nil {
		return nil, fmt.Errorf("evidence of run %s: %w", runID, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Record, error) {
		var r Record
		err := row.Scan(&r.ID, &r.RunID, &r.Type, &r.Seq, &r.Kind, &r.StepLogID, &r.ContentText, &r.ContentHash, &r.PrevHash, &r.Hash, &r.RecordedAt)
		r.Content = json.RawMessage(r.ContentText)
		return r, err
	})
	if err != nil {
		return nil, fmt.Errorf("evidence of run %s: %w", runID, err)
	}
	return out, nil
}

// Break says where a chain first fails to check out.
type Break struct {
	// Seq is the record's position in the chain (from 1) and ID its id.
	Seq int
	ID  int64
	// Reason says what does not match.
	Reason string
}

// Error implements error.
func (b *Break) Error() string {
	return fmt.Sprintf("record %d (id %d): %s", b.Seq, b.ID, b.Reason)
}

// Unwrap returns ErrBroken.
func (b *Break) Unwrap() error { return ErrBroken }

// Verification is what Verify checked.
type Verification struct {
	// RunID is the run.
	RunID string
	// Records is the number of records checked.
	Records int
	// Head is the last record's hash.
	Head string
}

// Verify recomputes the chain of run runID from its stored records, and
// checks it against what the database holds besides: the chain's head in
// evidence_heads (its number of records and last hash, written with each
// record), so that records removed from its end are seen, and the log row
// of every record, so that a record that names no log row of the run is. A
// chain that does not check out is an error matching ErrBroken and holding
// a *Break for the first record at fault; a run without records or head is
// ErrNoEvidence.
func Verify(ctx context.Context, q Querier, runID string) (Verification, error) {
	recs, err := Records(ctx, q, runID)
	if err != nil {
		return Verification{}, err
	}
	return verifyStored(ctx, q, runID, recs)
}

// verifyStored is VerifyRecords and the checks of recs against the head
// and the log.
func verifyStored(ctx context.Context, q Querier, runID string, recs []Record) (Verification, error) {
	rows, err := q.Query(ctx, `SELECT records, hash FROM evidence_heads WHERE workflow_run_id = $1::uuid`, runID)
	if err != nil {
		return Verification{}, fmt.Errorf("evidence head of run %s: %w", runID, err)
	}
	type head struct {
		Records int
		Hash    string
	}
	heads, err := pgx.CollectRows(rows, pgx.RowToStructByPos[head])
	if err != nil {
		return Verification{}, fmt.Errorf("evidence head of run %s: %w", runID, err)
	}
	brk := func(v Verification, b *Break) (Verification, error) {
		return v, fmt.Errorf("evidence: verify run %s: %w", runID, b)
	}
	if len(heads) == 1 && len(recs) == 0 {
		return brk(Verification{RunID: runID}, &Break{Seq: 1, Reason: fmt.Sprintf("the chain has no records, its head says %d", heads[0].Records)})
	}
	v, err := VerifyRecords(runID, recs)
	if err != nil {
		return v, err
	}
	last := recs[len(recs)-1]
	switch {
	case len(heads) == 0:
		return brk(v, &Break{Seq: last.Seq, ID: last.ID, Reason: "the chain has no head"})
	case heads[0].Records != len(recs) || heads[0].Hash != v.Head:
		return brk(v, &Break{Seq: last.Seq, ID: last.ID, Reason: fmt.Sprintf("the chain ends at record %d with hash %s, its head says record %d with hash %s",
			len(recs), short(v.Head), heads[0].Records, short(heads[0].Hash))})
	}
	rows, err = q.Query(ctx, `SELECT e.seq FROM evidence_records e
  WHERE e.workflow_run_id = $1::uuid AND NOT EXISTS (
    SELECT 1 FROM workflow_step_logs l WHERE l.workflow_run_id = e.workflow_run_id AND l.id = e.step_log_id)
  ORDER BY e.seq LIMIT 1`, runID)
	if err != nil {
		return v, fmt.Errorf("evidence of run %s: log rows: %w", runID, err)
	}
	dangling, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return v, fmt.Errorf("evidence of run %s: log rows: %w", runID, err)
	}
	if len(dangling) > 0 {
		r := recs[dangling[0]-1]
		return brk(v, &Break{Seq: r.Seq, ID: r.ID, Reason: fmt.Sprintf("log row %d of the run does not exist", r.StepLogID)})
	}
	return v, nil
}

// VerifyRecords checks a chain read with Records or from an export.
func VerifyRecords(runID string, recs []Record) (Verification, error) {
	v := Verification{RunID: runID, Records: len(recs)}
	if len(recs) == 0 {
		return v, fmt.Errorf("evidence: verify run %s: %w", runID, ErrNoEvidence)
	}
	prev := ""
	for i, r := range recs {
		text := r.ContentText
		brk := func(reason string, args ...any) (Verification, error) {
			return v, fmt.Errorf("evidence: verify run %s: %w", runID, &Break{Seq: i + 1, ID: r.ID, Reason: fmt.Sprintf(reason, args...)})
		}
		if r.Seq != i+1 {
			return brk("sequence number %d, want %d", r.Seq, i+1)
		}
		if h := hashHex(text); h != r.ContentHash {
			return brk("content hashes to %s, the record says %s", short(h), short(r.ContentHash))
		}
		var c Content
		if err := json.Unmarshal([]byte(text), &c); err != nil {
			return brk("content does not decode: %v", err)
		}
		if c.Seq != r.Seq || c.RunID != runID || c.Kind != r.Kind {
			return brk("content names run %s record %d kind %s", c.RunID, c.Seq, c.Kind)
		}
		if r.PrevHash != prev {
			return brk("previous hash %s, the previous record's hash is %s", short(r.PrevHash), short(prev))
		}
		if h := hashHex(r.PrevHash + r.ContentHash); h != r.Hash {
			return brk("hash %s, recomputed %s", short(r.Hash), short(h))
		}
		prev = r.Hash
	}
	v.Head = prev
	return v, nil
}

func hashHex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func short(h string) string {
	if h == "" {
		return `""`
	}
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// Export is a run's evidence as Export writes it.
type Export struct {
	RunID    string   `json:"runId"`
	Head     string   `json:"head"`
	Verified bool     `json:"verified"`
	Break    string   `json:"break,omitempty"`
	Records  []Record `json:"records"`
}

// WriteJSON writes the evidence of run runID to w as indented JSON (an
// Export): its records with their hashes, the head hash, and whether the
// chain verified (a broken chain is exported too, with the break, and
// the error returned).
func WriteJSON(ctx context.Context, q Querier, runID string, w io.Writer) error {
	recs, err := Records(ctx, q, runID)
	if err != nil {
		return err
	}
	out := Export{RunID: runID, Records: recs}
	v, verr := verifyStored(ctx, q, runID, recs)
	if verr == nil {
		out.Verified, out.Head = true, v.Head
	} else {
		out.Break = verr.Error()
	}
	if out.Records == nil {
		out.Records = []Record{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("evidence: export run %s: %w", runID, err)
	}
	return verr
}

// Translate maps the database's refusal to change evidence (SQLSTATE
// FS007) to ErrAppendOnly, keeping err.
func Translate(err error) error {
	var pg *pgconn.PgError
	if errors.As(err, &pg) && pg.Code == "FS007" {
		return fmt.Errorf("%w: %w", ErrAppendOnly, err)
	}
	return err
}

package pgstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/internal/dbsqlc"
)

type defKey struct {
	typ     string
	version int
}

// Definition is a registered definition, indexed for the checks made
// before a write.
type Definition struct {
	Def    runtime.Definition
	Digest string
	States map[string]runtime.StateSpec
	Moves  map[[3]string]bool // from, event, to
	// Nest indexes the hierarchy of a nested machine; nil for a flat one.
	Nest *Nesting
}

// NewDefinition indexes def, whose digest is digest.
func NewDefinition(def runtime.Definition, digest string) *Definition {
	d := &Definition{Def: def, Digest: digest, States: make(map[string]runtime.StateSpec, len(def.States)), Moves: make(map[[3]string]bool, len(def.Transitions))}
	for _, s := range def.States {
		d.States[s.Name] = s
	}
	for _, t := range def.Transitions {
		d.Moves[[3]string{t.From, t.Event, t.To}] = true
	}
	d.Nest = NestingOf(def)
	return d
}

// Refusal says why the registered table has no step from one persisted
// state to another on event, or returns "" when it has one: a row of the
// table, looked up in Moves, or runtime.Definition.Refusal's step to or
// from a configuration.
func (d *Definition) Refusal(from, event, to string) string {
	if d.Moves[[3]string{from, event, to}] {
		return ""
	}
	if d.Nest == nil || (!configuration(from) && !configuration(to)) {
		return fmt.Sprintf("no row %s -> %s on %q", from, to, event)
	}
	return d.Def.Refusal(from, event, to)
}

// InitialDelay is EntryDelay of the definition's initial state: when a run
// that starts, or starts again, is first due.
func (d *Definition) InitialDelay() pgtype.Int8 {
	if d.Nest != nil {
		return d.initialDelay()
	}
	return EntryDelay(d.States[d.Def.Initial])
}

// StatusOf is the status of st, running when it names none.
func StatusOf(st runtime.StateSpec) runtime.Status {
	if st.Status == "" {
		return runtime.StatusRunning
	}
	return st.Status
}

// Cached returns the definition of (typ, version) in the cache, or nil.
func (db *DB) Cached(typ string, version int) *Definition {
	db.mu.RLock()
	defer db.mu.RUnlock()
	return db.defs[defKey{typ, version}]
}

// Put caches d, a definition registered in the database.
func (db *DB) Put(d *Definition) {
	db.mu.Lock()
	db.defs[defKey{d.Def.Type, d.Def.Version}] = d
	db.mu.Unlock()
}

// Definition returns the registered definition of (typ, version), from the
// cache or else from the database (registered by another process).
func (db *DB) Definition(ctx context.Context, typ string, version int) (*Definition, error) {
	if d := db.Cached(typ, version); d != nil {
		return d, nil
	}
	row, err := db.q.GetDefinition(ctx, dbsqlc.GetDefinitionParams{WorkflowType: typ, Version: int32(version)})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%w: %s v%d is not registered", runtime.ErrUnknownDefinition, typ, version)
	}
	if err != nil {
		return nil, Translate(err)
	}
	var def runtime.Definition
	if err := json.Unmarshal(row.Definition, &def); err != nil {
		return nil, fmt.Errorf("%w: stored definition of %s v%d does not decode: %w", runtime.ErrUnknownDefinition, typ, version, err)
	}
	digest, err := Digest(def)
	if err != nil {
		return nil, fmt.Errorf("%w: stored definition of %s v%d: %w", runtime.ErrUnknownDefinition, typ, version, err)
	}
	d := NewDefinition(def, digest)
	db.Put(d)
	return d, nil
}

// InitialDelay is the InitialDelay of the registered definition of (typ,
// version), for the runs the engine starts (children, enqueued runs).
func (db *DB) InitialDelay(ctx context.Context, typ string, version int) (pgtype.Int8, error) {
	d, err := db.Definition(ctx, typ, version)
	if err != nil {
		return pgtype.Int8{}, err
	}
	return d.InitialDelay(), nil
}

// Canonical is the part of a definition that changes how runs behave or
// what is stored for them, in a canonical order: everything but the Go
// name, the doc comments and the list of guard names (the rows name the
// guards they ask). States and events are sorted by name; transitions by
// (from, event), keeping the order in which the rows of one (from, event)
// are tried.
type Canonical struct {
	Initial     string                   `json:"initial"`
	Cancel      string                   `json:"cancel,omitempty"`
	States      []runtime.StateSpec      `json:"states"`
	Events      []runtime.EventSpec      `json:"events"`
	Transitions []runtime.TransitionSpec `json:"transitions"`
	// Composites, sorted by name, are absent from a flat machine's form,
	// which is then what it was before machines could nest.
	Composites []runtime.CompositeSpec `json:"composites,omitempty"`
}

// CanonicalOf returns the canonical form of def, which Digest hashes.
func CanonicalOf(def runtime.Definition) Canonical {
	c := Canonical{Initial: def.Initial, Cancel: def.Cancel}
	for _, st := range def.States {
		st.Status = StatusOf(st)
		st.Initial = st.Name == def.Initial
		if st.Retry != nil {
			r := *st.Retry
			r.NonRetryable = slices.Sorted(slices.Values(r.NonRetryable))
			if len(r.NonRetryable) == 0 {
				r.NonRetryable = nil
			}
			st.Retry = &r
		}
		if len(st.Timers) == 0 {
			st.Timers = nil
		}
		c.States = append(c.States, st)
	}
	slices.SortFunc(c.States, func(a, b runtime.StateSpec) int { return strings.Compare(a.Name, b.Name) })
	for _, ev := range def.Events {
		if len(ev.Fields) == 0 {
			ev.Fields = nil
		}
		c.Events = append(c.Events, ev)
	}
	slices.SortFunc(c.Events, func(a, b runtime.EventSpec) int { return strings.Compare(a.Name, b.Name) })
	for _, cs := range def.Composites {
		if len(cs.Timers) == 0 {
			cs.Timers = nil
		}
		c.Composites = append(c.Composites, cs)
	}
	slices.SortFunc(c.Composites, func(a, b runtime.CompositeSpec) int { return strings.Compare(a.Name, b.Name) })
	c.Transitions = slices.Clone(def.Transitions)
	slices.SortStableFunc(c.Transitions, func(a, b runtime.TransitionSpec) int {
		if n := strings.Compare(a.From, b.From); n != 0 {
			return n
		}
		return strings.Compare(a.Event, b.Event)
	})
	return c
}

// Digest hashes the canonical form of a definition: two definitions with
// the same digest drive runs the same way and store the same data.
func Digest(def runtime.Definition) (string, error) {
	raw, err := json.Marshal(CanonicalOf(def))
	if err != nil { // a retry policy with a NaN, say
		return "", fmt.Errorf("%w: encode: %w", runtime.ErrInvalidDefinition, err)
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:]), nil
}

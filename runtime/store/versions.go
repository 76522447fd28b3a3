package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/internal/dbsqlc"
	"github.com/fsmgen/fsmgen/runtime/internal/pgstore"
)

// RegisterUpgrade records an upgrade of live runs between two
// registered versions of a type, so that the database accepts the moves
// it declares and no other. It is idempotent; registering other rules for
// the same versions fails with runtime.ErrUpgradeConflict. Both versions must be
// registered, the older one by any process: RegisterUpgrade returns
// runtime.ErrUnknownDefinition otherwise. engine.Engine.Register registers the
// upgrades of a definition (Definition.Upgrades) whose older version
// is registered.
func (s *Store) RegisterUpgrade(ctx context.Context, m runtime.Upgrade) error {
	op := fmt.Sprintf("register upgrade of %s from v%d to v%d", m.Type, m.From, m.To)
	from, err := s.db().Definition(ctx, m.Type, m.From)
	if err != nil {
		return pgstore.RunErr(op, "", err)
	}
	to, err := s.db().Definition(ctx, m.Type, m.To)
	if err != nil {
		return pgstore.RunErr(op, "", err)
	}
	if err := m.Validate(from.Def, to.Def); err != nil {
		return pgstore.RunErr(op, "", fmt.Errorf("%w: %w", runtime.ErrInvalidDefinition, err))
	}
	raw, digest, err := upgradeDigest(m)
	if err != nil {
		return pgstore.RunErr(op, "", err)
	}
	err = pgx.BeginFunc(ctx, s.db().Pool(), func(tx pgx.Tx) error {
		q := s.db().Queries(nil).WithTx(tx)
		n, err := q.InsertMigration(ctx, dbsqlc.InsertMigrationParams{
			WorkflowType: m.Type, FromVersion: int32(m.From), ToVersion: int32(m.To), Drain: m.Drain,
			Digest: digest, Migration: raw, Now: s.db().Now(),
		})
		if err != nil {
			return err
		}
		if n == 0 {
			have, err := q.GetMigration(ctx, dbsqlc.GetMigrationParams{WorkflowType: m.Type, FromVersion: int32(m.From), ToVersion: int32(m.To)})
			if err != nil {
				return err
			}
			if have.Digest != digest {
				return fmt.Errorf("%w: the database holds other rules (%s) than this process (%s); an upgrade that moved runs cannot change: give the machine a new version and upgrade from this one",
					runtime.ErrUpgradeConflict, describeUpgrade(have.Migration), describeUpgrade(raw))
			}
			return nil
		}
		p := dbsqlc.InsertMigrationRulesParams{WorkflowType: m.Type, FromVersion: int32(m.From), ToVersion: int32(m.To),
			Ordinals: []int32{}, FromStates: []string{}, ToStates: []string{}, Drains: []bool{}, WhenEvents: []string{}, UnlessEvents: []bool{}}
		for i, r := range m.Rules {
			p.Ordinals = append(p.Ordinals, int32(i))
			p.FromStates = append(p.FromStates, r.From)
			p.ToStates = append(p.ToStates, r.To)
			p.Drains = append(p.Drains, r.Drain)
			p.WhenEvents = append(p.WhenEvents, r.When)
			p.UnlessEvents = append(p.UnlessEvents, r.Unless)
		}
		return q.InsertMigrationRules(ctx, p)
	})
	if err != nil {
		return pgstore.RunErr(op, "", pgstore.Translate(err))
	}
	return nil
}

// upgradeDigest returns the JSON of m and its digest.
func upgradeDigest(m runtime.Upgrade) ([]byte, string, error) {
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, "", fmt.Errorf("%w: encode upgrade: %w", runtime.ErrInvalidDefinition, err)
	}
	sum := sha256.Sum256(raw)
	return raw, hex.EncodeToString(sum[:]), nil
}

// describeUpgrade renders a stored upgrade's rules on one line.
func describeUpgrade(raw []byte) string {
	var m runtime.Upgrade
	if err := json.Unmarshal(raw, &m); err != nil {
		return "undecodable"
	}
	if m.Drain {
		return "drain"
	}
	out := ""
	for i, r := range m.Rules {
		if i > 0 {
			out += "; "
		}
		out += DescribeRule(r)
	}
	for _, d := range m.Defaults {
		out += "; default " + d.Event + "." + d.Field + " " + string(d.Value)
	}
	return out
}

// DescribeRule renders an upgrade rule as the .fsm file writes it.
func DescribeRule(r runtime.UpgradeRule) string {
	s := r.From + " -> " + r.To
	if r.Drain {
		s = r.From + " drain"
	}
	if r.When != "" {
		if r.Unless {
			s += " unless " + r.When
		} else {
			s += " when " + r.When
		}
	}
	if r.Timers != "" {
		s += " timers " + r.Timers
	}
	return s
}

// RegisteredUpgrade returns the registered upgrade of typ from version from to
// version to, or an error matching runtime.ErrNoUpgrade.
func (s *Store) RegisteredUpgrade(ctx context.Context, typ string, from, to int) (runtime.Upgrade, error) {
	op := fmt.Sprintf("read upgrade of %s from v%d to v%d", typ, from, to)
	row, err := s.db().Queries(nil).GetMigration(ctx, dbsqlc.GetMigrationParams{WorkflowType: typ, FromVersion: int32(from), ToVersion: int32(to)})
	if errors.Is(err, pgx.ErrNoRows) {
		hint := fmt.Sprintf("register v%d with an engine: a .fsm whose version %d declares \"upgrade from %d { ... }\" carries it", to, to, from)
		if _, derr := s.db().Definition(ctx, typ, to); derr != nil {
			hint = fmt.Sprintf("v%d is not registered either; deploy it first", to)
		}
		return runtime.Upgrade{}, pgstore.RunErr(op, "", fmt.Errorf("%w: %s; without one, the runs of v%d drain on v%d", runtime.ErrNoUpgrade, hint, from, from))
	}
	if err != nil {
		return runtime.Upgrade{}, pgstore.RunErr(op, "", pgstore.Translate(err))
	}
	var m runtime.Upgrade
	if err := json.Unmarshal(row.Migration, &m); err != nil {
		return runtime.Upgrade{}, pgstore.RunErr(op, "", fmt.Errorf("%w: the registered upgrade does not decode: %w", runtime.ErrNoUpgrade, err))
	}
	return m, nil
}

// PlannedMove is what one rule of an upgrade would do now: move Runs
// runs (Leased of them are held by a worker's lease, and wait for it to
// be given up), or leave them to drain.
type PlannedMove struct {
	Rule   runtime.UpgradeRule
	Runs   int
	Leased int
}

// StuckRun is a live run that an upgrade cannot move now, and why.
type StuckRun struct {
	RunID, State, Reason string
}

// UpgradePlan is what upgrading the live runs of a type from one
// version to another would do, counted in the database.
type UpgradePlan struct {
	Type     string
	From, To int
	// Drain reports an upgrade that moves no run.
	Drain bool
	// Live counts the live runs of version From.
	Live int
	// Moves holds every rule of the upgrade in the order tried, with
	// the runs it admits now (a drain rule's runs stay).
	Moves []PlannedMove
	// Stuck lists the runs that cannot move now: left to drain, admitted
	// by no rule, or leased (those move once their lease is given up).
	Stuck []StuckRun
}

// Movable counts the runs the plan's rules would move now.
func (p UpgradePlan) Movable() int {
	n := 0
	for _, m := range p.Moves {
		if !m.Rule.Drain {
			n += m.Runs - m.Leased
		}
	}
	return n
}

// PlanUpgrade counts, for each rule of the registered upgrade of typ
// from version from to version to, the live runs of from it admits, as the
// database's guard decides, and lists the runs it cannot move now with the
// reason. It writes nothing.
func (s *Store) PlanUpgrade(ctx context.Context, typ string, from, to int) (UpgradePlan, error) {
	m, err := s.RegisteredUpgrade(ctx, typ, from, to)
	if err != nil {
		return UpgradePlan{}, err
	}
	plan := UpgradePlan{Type: typ, From: from, To: to, Drain: m.Drain}
	for _, r := range m.Rules {
		plan.Moves = append(plan.Moves, PlannedMove{Rule: r})
	}
	rows, err := s.db().Queries(nil).PlanRuns(ctx, dbsqlc.PlanRunsParams{Now: s.db().Now(), ToVersion: int32(to), WorkflowType: typ, FromVersion: int32(from)})
	if err != nil {
		return UpgradePlan{}, pgstore.RunErr(fmt.Sprintf("plan upgrade of %s from v%d to v%d", typ, from, to), "", pgstore.Translate(err))
	}
	plan.Live = len(rows)
	for _, r := range rows {
		id := pgstore.UUIDString(r.ID)
		switch {
		case m.Drain:
			plan.Stuck = append(plan.Stuck, StuckRun{id, r.CurrentState, fmt.Sprintf("the upgrade drains: it finishes on v%d", from)})
			continue
		case r.Ordinal < 0 || int(r.Ordinal) >= len(plan.Moves):
			plan.Stuck = append(plan.Stuck, StuckRun{id, r.CurrentState, fmt.Sprintf("no rule for %s admits it: it finishes on v%d", r.CurrentState, from)})
			continue
		}
		mv := &plan.Moves[r.Ordinal]
		mv.Runs++
		switch {
		case r.Drain:
			plan.Stuck = append(plan.Stuck, StuckRun{id, r.CurrentState, fmt.Sprintf("%q: it finishes on v%d", DescribeRule(mv.Rule), from)})
		case r.Leased:
			mv.Leased++
			plan.Stuck = append(plan.Stuck, StuckRun{id, r.CurrentState, fmt.Sprintf("leased by %s until %s: it moves once the lease is given up",
				r.LeaseOwner, r.LeaseExpiresAt.Time.UTC().Format("2006-01-02T15:04:05.000Z"))})
		}
	}
	return plan, nil
}

// UpgradeOptions tune Upgrade.
type UpgradeOptions struct {
	// BatchSize is how many runs are read at once; each is moved in a
	// transaction of its own. Default 100.
	BatchSize int
	// Progress, when set, is called after each batch with the counts so
	// far.
	Progress func(UpgradeReport)
}

// UpgradeReport counts what a pass of Upgrade did with the live runs of
// the older version it saw.
type UpgradeReport struct {
	// Moved runs are now on the newer version, each with its log row.
	Moved int
	// Leased runs were held by a worker's lease and were left alone: a
	// later pass moves them once the lease is given up.
	Leased int
	// Drained runs are left on the older version by a drain rule, and
	// Unmatched runs by no rule admitting them.
	Drained, Unmatched int
}

// Upgrade moves the live runs of typ from version from to version to,
// following the registered upgrade, in one pass over them in id order:
// each run in a transaction of its own that locks it, decides its rule
// from its state and its current attempt's events, and writes, in one
// statement, the run at the new version and state and its log row (kind
// and event "migrated", from (from, state) to (to, state)); the
// database's guard checks the move against the registered upgrade.
//
// A run held by a worker's live lease is left alone and counted in
// Leased: call Upgrade again later for those. Upgrade is idempotent and
// resumable: a run moved already is no longer of version from, and a
// transaction cut short by a crash moved nothing. The moved run's
// schedule follows its new state: a retry under way in a state kept by
// name keeps its due time and tries; a driven state is due at once; a
// wait state's timers count from the run's entry into its old state
// (timers keep) or from the upgrade (timers restart). A parked run
// stays parked. Its lease's epoch moves on, so that a worker whose lease
// expired writes nothing more.
func (s *Store) Upgrade(ctx context.Context, typ string, from, to int, opts UpgradeOptions) (UpgradeReport, error) {
	op := fmt.Sprintf("upgrade %s from v%d to v%d", typ, from, to)
	var rep UpgradeReport
	m, err := s.RegisteredUpgrade(ctx, typ, from, to)
	if err != nil {
		return rep, err
	}
	if m.Drain {
		return rep, pgstore.RunErr(op, "", fmt.Errorf("%w: the upgrade from v%d drains: its runs finish on v%d", runtime.ErrNoUpgrade, from, from))
	}
	fromDef, err := s.db().Definition(ctx, typ, from)
	if err != nil {
		return rep, pgstore.RunErr(op, "", err)
	}
	toDef, err := s.db().Definition(ctx, typ, to)
	if err != nil {
		return rep, pgstore.RunErr(op, "", err)
	}
	batch := opts.BatchSize
	if batch <= 0 {
		batch = 100
	}
	after := pgtype.UUID{Valid: true} // the nil UUID sorts first
	for {
		ids, err := s.db().Queries(nil).MigrationCandidates(ctx, dbsqlc.MigrationCandidatesParams{WorkflowType: typ, Version: int32(from), After: after, MaxRuns: int32(batch)})
		if err != nil {
			return rep, pgstore.RunErr(op, "", pgstore.Translate(err))
		}
		if len(ids) == 0 {
			return rep, nil
		}
		moved := rep.Moved
		for _, id := range ids {
			if err := s.upgradeRun(ctx, m, fromDef, toDef, id, &rep); err != nil {
				return rep, pgstore.RunErr(op, pgstore.UUIDString(id), err)
			}
		}
		after = ids[len(ids)-1]
		if rep.Moved > moved {
			if err := s.Notify(ctx, typ); err != nil {
				return rep, err
			}
		}
		if opts.Progress != nil {
			opts.Progress(rep)
		}
	}
}

// upgradeRun moves one run in a transaction of its own, counting what it
// did in rep.
func (s *Store) upgradeRun(ctx context.Context, m runtime.Upgrade, fromDef, toDef *pgstore.Definition, id pgtype.UUID, rep *UpgradeReport) error {
	return pgx.BeginFunc(ctx, s.db().Pool(), func(tx pgx.Tx) error {
		q := s.db().Queries(nil).WithTx(tx)
		run, err := q.LockRunForMigration(ctx, dbsqlc.LockRunForMigrationParams{Now: s.db().Now(), ID: id})
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return pgstore.Translate(err)
		}
		if int(run.DefinitionVersion) != m.From || run.Status != string(runtime.StatusRunning) {
			return nil // moved or finished since it was listed
		}
		if run.Leased {
			rep.Leased++
			return nil
		}
		fired, err := q.FiredEvents(ctx, dbsqlc.FiredEventsParams{ID: id, AttemptNo: run.AttemptNo})
		if err != nil {
			return pgstore.Translate(err)
		}
		rule, ok := m.Decide(run.CurrentState, func(e string) bool {
			for _, f := range fired {
				if f == e {
					return true
				}
			}
			return false
		})
		switch {
		case !ok:
			rep.Unmatched++
			return nil
		case rule.Drain:
			rep.Drained++
			return nil
		}
		p := dbsqlc.MigrateRunParams{
			ToVersion: int32(m.To), ToState: rule.To, RestartTimers: rule.Timers == runtime.TimersRestart, Now: s.db().Now(),
			ID: id, WorkflowType: m.Type, FromVersion: int32(m.From), FromState: run.CurrentState, RowVersion: run.RowVersion,
		}
		src, dst := fromDef.States[run.CurrentState], toDef.States[rule.To]
		switch {
		case !dst.Wait && !src.Wait && src.Name == dst.Name:
			p.Schedule, p.KeepAttempts = "keep", true
		case !dst.Wait:
			p.Schedule = "now"
		case toDef.Nest != nil:
			// The timers of the leaf and of the composites above it, all
			// counting from the run's entry (or now, restarted).
			first := time.Duration(-1)
			for _, st := range toDef.Nest.Active(dst.Name) {
				for _, d := range pgstore.Durations(toDef.Nest.Timers(st), "", nil) {
					if first < 0 || d < first {
						first = d
					}
				}
			}
			p.Schedule, p.DelayUs = "timer", int64(first/time.Microsecond)
			if first < 0 {
				p.Schedule, p.DelayUs = "never", 0
			}
		case len(dst.Timers) == 0:
			p.Schedule = "never"
		default:
			first := dst.Timers[0].After
			for _, t := range dst.Timers[1:] {
				first = min(first, t.After)
			}
			p.Schedule, p.DelayUs = "timer", int64(first/time.Microsecond)
		}
		p.Payload, err = json.Marshal(map[string]any{
			"from": map[string]any{"version": m.From, "state": run.CurrentState},
			"to":   map[string]any{"version": m.To, "state": rule.To},
			"rule": DescribeRule(rule),
		})
		if err != nil {
			return err
		}
		_, err = q.MigrateRun(ctx, p)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // it moved under the lock: cannot happen, and harmless
		}
		if err != nil {
			return pgstore.Translate(err)
		}
		rep.Moved++
		return nil
	})
}

// VersionStatus is what is left of one registered version of a type.
type VersionStatus struct {
	Version int
	// Live counts the runs that are not finished; Parked and Leased of
	// them are parked for an operator or held by a worker's lease.
	Live, Parked, Leased int64
	// Finished counts the runs in a terminal state.
	Finished int64
	// States counts the live runs by state, by name.
	States map[string]int64
	// UpgradesTo lists the newer versions with a registered upgrade
	// from this one, and Drains those whose upgrade moves no run.
	UpgradesTo, Drains []int
}

// Versions returns the registered versions of typ, oldest first, with
// their runs.
func (s *Store) Versions(ctx context.Context, typ string) ([]VersionStatus, error) {
	op := "versions of " + typ
	rows, err := s.db().Queries(nil).VersionsOf(ctx, dbsqlc.VersionsOfParams{Now: s.db().Now(), WorkflowType: typ})
	if err != nil {
		return nil, pgstore.RunErr(op, "", pgstore.Translate(err))
	}
	if len(rows) == 0 {
		return nil, pgstore.RunErr(op, "", fmt.Errorf("%w: no version of %s is registered", runtime.ErrUnknownDefinition, typ))
	}
	migs, err := s.db().Queries(nil).MigrationsOf(ctx, typ)
	if err != nil {
		return nil, pgstore.RunErr(op, "", pgstore.Translate(err))
	}
	out := make([]VersionStatus, 0, len(rows))
	for _, r := range rows {
		vs := VersionStatus{Version: int(r.Version), Live: r.Live, Parked: r.Parked, Leased: r.Leased, Finished: r.Finished, States: map[string]int64{}}
		if r.Live > 0 {
			states, err := s.db().Queries(nil).LiveStates(ctx, dbsqlc.LiveStatesParams{WorkflowType: typ, Version: r.Version})
			if err != nil {
				return nil, pgstore.RunErr(op, "", pgstore.Translate(err))
			}
			for _, st := range states {
				vs.States[st.CurrentState] = st.Runs
			}
		}
		for _, m := range migs {
			if m.FromVersion == r.Version {
				if m.Drain {
					vs.Drains = append(vs.Drains, int(m.ToVersion))
				} else {
					vs.UpgradesTo = append(vs.UpgradesTo, int(m.ToVersion))
				}
			}
		}
		out = append(out, vs)
	}
	return out, nil
}

// LiveRuns counts the runs of (typ, version) that are not finished.
func (s *Store) LiveRuns(ctx context.Context, typ string, version int) (int64, error) {
	states, err := s.db().Queries(nil).LiveStates(ctx, dbsqlc.LiveStatesParams{WorkflowType: typ, Version: int32(version)})
	if err != nil {
		return 0, pgstore.RunErr(fmt.Sprintf("count live runs of %s v%d", typ, version), "", pgstore.Translate(err))
	}
	var n int64
	for _, st := range states {
		n += st.Runs
	}
	return n, nil
}

package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
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

// DescribeRule renders an upgrade rule as the .fsm file writes it
// (runtime.UpgradeRule.Describe).
func DescribeRule(r runtime.UpgradeRule) string { return r.Describe() }

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
	// KeptByName counts the runs in configurations whose every leaf keeps
	// its name (no rule names one), KeptLeased those of them leased: they
	// move under no rule of Moves. A run in a configuration is counted
	// under the rule of its first leaf that has one.
	KeptByName, KeptLeased int
	// Stuck lists the runs that cannot move now: left to drain, admitted
	// by no rule, in a configuration the rules map to no state, or leased
	// (those move once their lease is given up).
	Stuck []StuckRun
}

// Movable counts the runs the plan's rules would move now.
func (p UpgradePlan) Movable() int {
	n := p.KeptByName - p.KeptLeased
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
		if !m.Drain && strings.Contains(r.CurrentState, runtime.ConfigurationSeparator) {
			if err := s.planConfiguration(ctx, m, &plan, r); err != nil {
				return UpgradePlan{}, pgstore.RunErr(fmt.Sprintf("plan upgrade of %s from v%d to v%d", typ, from, to), id, err)
			}
			continue
		}
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

// planConfiguration adds to plan the run r, in a configuration, as
// Upgrade would move it (runtime.Upgrade.Map): under the rule of its
// first leaf that has one, or in KeptByName when every leaf keeps its
// name; stuck when a leaf drains or no rule admits it, when the rules map
// it to no state, or when it is leased.
func (s *Store) planConfiguration(ctx context.Context, m runtime.Upgrade, plan *UpgradePlan, r dbsqlc.PlanRunsRow) error {
	id := pgstore.UUIDString(r.ID)
	fromDef, err := s.db().Definition(ctx, m.Type, m.From)
	if err != nil {
		return err
	}
	toDef, err := s.db().Definition(ctx, m.Type, m.To)
	if err != nil {
		return err
	}
	run, err := s.Get(ctx, id)
	if err != nil {
		return err
	}
	fired, err := s.db().Queries(nil).FiredEvents(ctx, dbsqlc.FiredEventsParams{ID: r.ID, AttemptNo: int32(run.Attempt)})
	if err != nil {
		return pgstore.Translate(err)
	}
	mv, err := m.Map(fromDef.Def, toDef.Def, r.CurrentState, func(e string) bool { return slices.Contains(fired, e) })
	stuck := func(reason string) { plan.Stuck = append(plan.Stuck, StuckRun{id, r.CurrentState, reason}) }
	switch {
	case err != nil:
		stuck(err.Error())
		return nil
	case mv.Unmatched != "":
		stuck(fmt.Sprintf("no rule for %s admits it: it finishes on v%d", mv.Unmatched, m.From))
		return nil
	case mv.Drain:
		stuck(fmt.Sprintf("%q: it finishes on v%d", mv.Describe(), m.From))
		return nil
	}
	runs, leased := &plan.KeptByName, &plan.KeptLeased
	if len(mv.Rules) > 0 {
		i := slices.Index(m.Rules, mv.Rules[0])
		runs, leased = &plan.Moves[i].Runs, &plan.Moves[i].Leased
	}
	*runs++
	if r.Leased {
		*leased++
		stuck(fmt.Sprintf("leased by %s until %s: it moves once the lease is given up",
			r.LeaseOwner, r.LeaseExpiresAt.Time.UTC().Format("2006-01-02T15:04:05.000Z")))
	}
	return nil
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
	// Refused runs are in configurations that the rules map to no state
	// of the newer version (runtime.Upgrade.Map); they stay, untouched,
	// and Upgrade's error names each.
	Refused int
}

// Upgrade moves the live runs of typ from version from to version to,
// following the registered upgrade, in one pass over them in id order:
// each run in a transaction of its own that locks it, decides where it
// moves from its state and its current attempt's events (a run in a
// configuration of a parallel state leaf by leaf: runtime.Upgrade.Map),
// and writes, in one
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
//
// A run in a configuration that the rules map to no state of the newer
// version is refused: it stays as it was, is counted in Refused, and,
// once the pass is over, the error Upgrade returns names each such run,
// its configuration and why (errors.Is matches
// runtime.ErrUpgradeRefused).
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
	var refusals []error
	for {
		ids, err := s.db().Queries(nil).MigrationCandidates(ctx, dbsqlc.MigrationCandidatesParams{WorkflowType: typ, Version: int32(from), After: after, MaxRuns: int32(batch)})
		if err != nil {
			return rep, pgstore.RunErr(op, "", pgstore.Translate(err))
		}
		if len(ids) == 0 {
			return rep, errors.Join(refusals...)
		}
		moved := rep.Moved
		for _, id := range ids {
			if err := s.upgradeRun(ctx, op, m, fromDef, toDef, id, &rep, &refusals); err != nil {
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
// did in rep and adding the error of a refused run, of operation op, to
// refusals.
func (s *Store) upgradeRun(ctx context.Context, op string, m runtime.Upgrade, fromDef, toDef *pgstore.Definition, id pgtype.UUID, rep *UpgradeReport, refusals *[]error) error {
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
		mv, err := m.Map(fromDef.Def, toDef.Def, run.CurrentState, func(e string) bool { return slices.Contains(fired, e) })
		switch {
		case err != nil:
			rep.Refused++
			*refusals = append(*refusals, pgstore.RunErr(op, pgstore.UUIDString(id), err))
			return nil
		case mv.Unmatched != "":
			rep.Unmatched++
			return nil
		case mv.Drain:
			rep.Drained++
			return nil
		}
		p := dbsqlc.MigrateRunParams{
			ToVersion: int32(m.To), ToState: mv.To, RestartTimers: mv.Restart(), Now: s.db().Now(),
			ID: id, WorkflowType: m.Type, FromVersion: int32(m.From), FromState: run.CurrentState, RowVersion: run.RowVersion,
		}
		p.Schedule, p.DelayUs, p.KeepAttempts = schedule(fromDef, toDef, run.CurrentState, mv.To)
		p.Payload, err = json.Marshal(map[string]any{
			"from": map[string]any{"version": m.From, "state": run.CurrentState},
			"to":   map[string]any{"version": m.To, "state": mv.To},
			"rule": mv.Describe(),
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

// schedule says when a run moved from state src of fromDef to state dst
// of toDef is next due (see MigrateRun): a retry under way in a driven
// state kept by name keeps its due time and tries; a driven state is due
// at once; a wait state at the first timer of its leaves and the
// composites above them, or never.
func schedule(fromDef, toDef *pgstore.Definition, src, dst string) (string, int64, bool) {
	from, _ := fromDef.Def.StateOf(src)
	to, _ := toDef.Def.StateOf(dst)
	switch {
	case !to.Wait && !from.Wait && src == dst:
		return "keep", 0, true
	case !to.Wait:
		return "now", 0, false
	}
	first := time.Duration(-1)
	active := []string{dst}
	if toDef.Nest != nil {
		active = toDef.Nest.Active(dst)
	}
	for _, st := range active {
		timers := to.Timers
		if toDef.Nest != nil {
			timers = toDef.Nest.Timers(st)
		}
		for _, d := range runtime.TimerDurations(timers, "", nil) {
			if first < 0 || d < first {
				first = d
			}
		}
	}
	if first < 0 {
		return "never", 0, false
	}
	return "timer", int64(first / time.Microsecond), false
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

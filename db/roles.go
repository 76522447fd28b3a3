package db

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Role is a kind of database role of the role model (docs/security.md): what
// a role needs to do its work, and no more. The schema's owner, who applies
// the migrations, is not one of them: the guarantees of the schema hold only
// for roles that do not own it.
type Role string

// The roles of the role model.
const (
	// RoleRuntime drives runs: the engine, the store, the relay and
	// activities. It registers definitions, creates and moves runs, logs
	// steps, writes the outbox and the activity cache, and enables
	// evidence; it deletes nothing and writes no evidence but through the
	// log's trigger.
	RoleRuntime Role = "runtime"
	// RoleOperator is fsmctl's: what the runtime may do, and set retention,
	// purge finished runs (fsmgen_purge_finished_runs) and terminate live
	// ones (fsmgen_terminate_run).
	RoleOperator Role = "operator"
	// RoleReader reads everything and writes nothing: the console without
	// actions, reports.
	RoleReader Role = "reader"
)

// ErrUnknownRole is returned by [Grant] for a kind of role that is not one
// of [Roles].
var ErrUnknownRole = errors.New("unknown role kind")

// Roles returns the kinds of role [Grant] knows, in the order the docs list
// them.
func Roles() []Role { return []Role{RoleRuntime, RoleOperator, RoleReader} }

// ParseRole returns the Role named s ("runtime", "operator", "reader").
func ParseRole(s string) (Role, error) {
	for _, r := range Roles() {
		if string(r) == s {
			return r, nil
		}
	}
	return "", fmt.Errorf("%w %q: want one of runtime, operator, reader", ErrUnknownRole, s)
}

// readTables are the tables and views every role reads.
var readTables = []string{
	"fsmgen_migrations", "workflow_definitions", "workflow_states", "workflow_transitions", "workflow_moves",
	"workflow_migrations", "workflow_migration_rules", "workflow_runs", "workflow_step_logs", "workflow_outbox",
	"activity_executions", "evidence_records", "evidence_heads", "workflow_retention", "workflow_executions",
}

// runColumns are the columns of workflow_runs the runtime updates: not its
// identity (id, workflow_type, idempotency_key), tenant_id, user_id,
// correlation_id, input, created_at or parent link (parent_run_id,
// parent_event), which are fixed when the run is created.
var runColumns = []string{
	"current_state", "previous_state", "status", "row_version", "attempt_no", "definition_version",
	"policy_snapshot", "result", "finished_at", "updated_at", "attempt_started_at", "step_attempt",
	"last_error_code", "last_error", "parked_at", "next_run_at", "lease_owner", "lease_expires_at",
	"lease_epoch", "parent_delivered_at", "timer_anchors", "history",
}

// advanceRunsArgs are the argument types of fsmgen_advance_runs, the
// runtime's transitions of many runs (0026_trusted_transitions.sql).
const advanceRunsArgs = "uuid[], text[], text[], text[], bigint[], text[], integer[], text[], jsonb[], bigint[], " +
	"boolean[], boolean[], text[], bigint[], boolean[], text[], text[], jsonb[], double precision[], bigint[], " +
	"text[], text[], timestamp with time zone"

// GrantStatements returns the statements that give a role of kind r its
// privileges on the schema named schema, for docs and for [Grant]; the
// role's name is the placeholder ROLE.
func GrantStatements(r Role, schema string) ([]string, error) {
	return grantStatements(r, pgx.Identifier{schema}.Sanitize(), "ROLE")
}

func grantStatements(r Role, schema, role string) ([]string, error) {
	q := func(names ...string) string {
		out := make([]string, len(names))
		for i, n := range names {
			out[i] = schema + "." + n
		}
		return strings.Join(out, ", ")
	}
	base := []string{
		"GRANT USAGE ON SCHEMA " + schema + " TO " + role,
		"GRANT SELECT ON " + q(readTables...) + " TO " + role,
	}
	runtime := append(base,
		"GRANT INSERT ON "+q("workflow_definitions", "workflow_states", "workflow_transitions", "workflow_moves",
			"workflow_migrations", "workflow_migration_rules", "workflow_runs", "workflow_step_logs", "workflow_outbox",
			"activity_executions")+" TO "+role,
		"GRANT UPDATE ("+strings.Join(runColumns, ", ")+") ON "+q("workflow_runs")+" TO "+role,
		"GRANT UPDATE ON "+q("workflow_outbox", "activity_executions")+" TO "+role,
		"GRANT USAGE ON SEQUENCE "+q("workflow_step_logs_id_seq", "workflow_outbox_id_seq")+" TO "+role,
		"GRANT EXECUTE ON FUNCTION "+schema+".fsmgen_enable_evidence(text), "+
			schema+".fsmgen_enable_implied_evidence(text, text, text, jsonb), "+
			schema+".fsmgen_advance_runs("+advanceRunsArgs+") TO "+role,
	)
	switch r {
	case RoleReader:
		return base, nil
	case RoleRuntime:
		return runtime, nil
	case RoleOperator:
		return append(runtime,
			"GRANT INSERT, UPDATE, DELETE ON "+q("workflow_retention")+" TO "+role,
			"GRANT EXECUTE ON FUNCTION "+schema+".fsmgen_purge_finished_runs(boolean, integer), "+
				schema+".fsmgen_terminate_run(uuid, text, text) TO "+role,
		), nil
	}
	return nil, fmt.Errorf("%w %q: want one of runtime, operator, reader", ErrUnknownRole, string(r))
}

// Grant gives the existing database role name the privileges of kind r on
// the schema Migrate created (the connection's current schema), and records
// it in fsmgen_role_grants, so that Migrate gives it the privileges of what
// later migrations add. Run it as the schema's owner, after Migrate; it is
// idempotent. The role must exist (CREATE ROLE is the cluster
// administrator's) and must not own the schema.
func Grant(ctx context.Context, conn Beginner, r Role, name string) error {
	if _, err := grantStatements(r, "s", "r"); err != nil {
		return fmt.Errorf("grant %s to %s: %w", r, name, err)
	}
	err := inLockedTx(ctx, conn, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS fsmgen_role_grants (
			role_name  TEXT        PRIMARY KEY,
			role_kind  TEXT        NOT NULL,
			granted_at TIMESTAMPTZ NOT NULL DEFAULT now()
		)`)
		if err != nil {
			return err
		}
		if err := grant(ctx, tx, r, name); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO fsmgen_role_grants (role_name, role_kind) VALUES ($1, $2)
			ON CONFLICT (role_name) DO UPDATE SET role_kind = EXCLUDED.role_kind, granted_at = now()`, name, string(r))
		return err
	})
	if err != nil {
		return fmt.Errorf("grant %s to %s: %w", r, name, err)
	}
	return nil
}

// grant runs the statements of r for role name in tx, after checking that
// the role exists and does not own the schema.
func grant(ctx context.Context, tx pgx.Tx, r Role, name string) error {
	var schema string
	var exists, owns bool
	err := tx.QueryRow(ctx, `SELECT current_schema(),
		EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1),
		EXISTS (SELECT 1 FROM pg_namespace n JOIN pg_roles o ON o.oid = n.nspowner
		        WHERE n.nspname = current_schema() AND o.rolname = $1)
		OR EXISTS (SELECT 1 FROM pg_class c JOIN pg_roles o ON o.oid = c.relowner
		        WHERE c.oid = to_regclass('workflow_runs') AND o.rolname = $1)`, name).Scan(&schema, &exists, &owns)
	if err != nil {
		return err
	}
	if !exists {
		return fmt.Errorf("role %q does not exist: create it first (CREATE ROLE %s LOGIN)", name, pgx.Identifier{name}.Sanitize())
	}
	if owns {
		return fmt.Errorf("role %q owns the schema or its tables: the database's guarantees hold only for roles that do not", name)
	}
	stmts, err := grantStatements(r, pgx.Identifier{schema}.Sanitize(), pgx.Identifier{name}.Sanitize())
	if err != nil {
		return err
	}
	for _, s := range stmts {
		if _, err := tx.Exec(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}

// regrant gives the roles recorded in fsmgen_role_grants the privileges of
// their kind again, after migrations added objects.
func regrant(ctx context.Context, conn Beginner) error {
	return inLockedTx(ctx, conn, func(tx pgx.Tx) error {
		var present bool
		if err := tx.QueryRow(ctx, `SELECT to_regclass('fsmgen_role_grants') IS NOT NULL`).Scan(&present); err != nil || !present {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT role_name, role_kind FROM fsmgen_role_grants ORDER BY role_name`)
		if err != nil {
			return err
		}
		type rg struct{ name, kind string }
		grants, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (rg, error) {
			var g rg
			return g, row.Scan(&g.name, &g.kind)
		})
		if err != nil {
			return err
		}
		for _, g := range grants {
			r, err := ParseRole(g.kind)
			if err != nil {
				return fmt.Errorf("fsmgen_role_grants: role %s: %w", g.name, err)
			}
			if err := grant(ctx, tx, r, g.name); err != nil {
				return fmt.Errorf("regrant %s to %s: %w", r, g.name, err)
			}
		}
		return nil
	})
}

package gen

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/fsmgen/fsmgen/dsl"
	"github.com/fsmgen/fsmgen/internal/version"
)

// The SQLSTATEs the SQL that [SQL] writes raises (class FS, as the
// runtime's schema; FS001 to FS005 are the runtime's own).
const (
	// SQLStateGuardRefused is raised by the guard trigger when a row is
	// inserted in a state other than the initial one, when the guarded
	// column moves between two states that no row of the machine's table
	// joins, and when a move that several events make names none of them.
	SQLStateGuardRefused = "FS006"
	// SQLStateGuardLogImmutable is raised on an UPDATE, DELETE or TRUNCATE
	// of the log table: the same code as the runtime's own append-only log.
	SQLStateGuardLogImmutable = "FS002"
)

// The transaction-local settings the guard trigger reads (set_config(name,
// value, true), or SET LOCAL): the event that moves the row, needed only
// when several events join the same two states, and the worker that the
// log row names. Both are optional otherwise.
const (
	SQLEventSetting  = "fsmgen.event"
	SQLWorkerSetting = "fsmgen.worker"
)

// SQLGuard names the column of a user's table whose value is a machine's
// state, for [SQL].
type SQLGuard struct {
	// Table is the table, optionally schema-qualified (schema.table).
	Table string
	// Column holds the state's name, the machine's persisted form.
	Column string
	// Key are the columns that identify a row, copied into each log row as
	// a JSON object; default: id.
	Key []string
	// Log is the log table; default: Table_Column_log, in Table's schema.
	Log string
}

var sqlIdent = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// maxIdent is PostgreSQL's identifier length (NAMEDATALEN - 1).
const maxIdent = 63

// checkIdent reports whether name is a lower-case SQL identifier that
// PostgreSQL keeps whole.
func checkIdent(what, name string) error {
	if !sqlIdent.MatchString(name) {
		return fmt.Errorf("%s %q: want a lower-case SQL identifier ([a-z_][a-z0-9_]*)", what, name)
	}
	if len(name) > maxIdent {
		return fmt.Errorf("%s %q: longer than PostgreSQL's %d bytes", what, name, maxIdent)
	}
	return nil
}

// splitTable splits schema.table; schema is "" when not given.
func splitTable(what, name string) (schema, table string, err error) {
	schema, table, found := strings.Cut(name, ".")
	if !found {
		schema, table = "", name
	} else if err := checkIdent(what+" schema", schema); err != nil {
		return "", "", err
	}
	if err := checkIdent(what, table); err != nil {
		return "", "", err
	}
	return schema, table, nil
}

func qualify(schema, name string) string {
	if schema == "" {
		return quoteIdent(name)
	}
	return quoteIdent(schema) + "." + quoteIdent(name)
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func quoteLit(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// SQL renders a migration that makes g.Column of g.Table follow machine m,
// in the database itself, whatever writes to the table:
//
//   - a CHECK constraint (Table_Column_fsm_check) admitting exactly the
//     machine's state names, and no NULL;
//   - a trigger (Table_Column_fsm_insert, Table_Column_fsm_update, both
//     calling the function Table_Column_fsm) that refuses with SQLSTATE
//     FS006 ([SQLStateGuardRefused]) an INSERT whose state is not the
//     initial one, and an UPDATE that changes the column from one state to
//     another when no row of the machine's table joins the two. The message
//     names the machine, the table and column, and both states, e.g.
//     `machine Order (type "order" version 1): orders.status may not move
//     from NEW to SHIPPED`. An UPDATE that leaves the column as it is
//     (including a self-transition of the machine) is neither checked nor
//     logged; DELETE is not a transition and is left alone;
//   - an append-only log table (g.Log) with one row per insert and per
//     change of the column, written by the same trigger in the same
//     transaction: the row's key (g.Key as a JSON object), from_state
//     (NULL for an insert), to_state, event, worker and at (the
//     transaction's now()). The event is the row of the table that joins
//     the two states when only one does; when several events join them
//     (RUNNING to READY on Retry or on RecoverLease), the writer must name
//     one in the transaction-local setting fsmgen.event
//     ([SQLEventSetting]), else the change is refused with FS006. The
//     worker is the setting fsmgen.worker ([SQLWorkerSetting]), NULL when
//     unset. An UPDATE, DELETE or TRUNCATE of the log is refused with
//     FS002 ([SQLStateGuardLogImmutable]).
//
// Both functions run with a pinned search_path, pg_catalog first and the
// session's temporary schema last: a temporary table of the writer's
// session named like the log table cannot take its rows. The guard's
// function names the log table with its schema when g.Log (or g.Table)
// gives one; otherwise the migration pins it to the schema the log table
// was created in (current_schema() when it is applied).
//
// A machine with parallel states, eventless rows or completion rows is
// refused with an error matching [ErrNotGenerated]. Every name must be a lower-case SQL identifier; the table may be
// schema-qualified, and the function, triggers and log go in its schema.
// The migration can be applied again: it replaces what it created. Output
// is deterministic: it depends only on m and g.
func SQL(m *dsl.Machine, g SQLGuard) ([]byte, error) {
	if len(m.Parallels) > 0 {
		// A column of a machine with parallel states holds configurations
		// ("A|B"), whose moves the guard does not list yet.
		return nil, fmt.Errorf("machine %s: a column guard for parallel states is %w", m.Name, ErrNotGenerated)
	}
	for _, t := range m.Transitions {
		if t.Event == nil {
			// The log names each move's event, which such a row has not.
			return nil, fmt.Errorf("machine %s: a column guard for eventless and completion rows (%s -> %s) is %w", m.Name, rowSource(t).Name, rowTarget(t), ErrNotGenerated)
		}
	}
	schema, table, err := splitTable("table", g.Table)
	if err != nil {
		return nil, err
	}
	if err := checkIdent("column", g.Column); err != nil {
		return nil, err
	}
	key := g.Key
	if len(key) == 0 {
		key = []string{"id"}
	}
	seenKey := map[string]bool{}
	for _, k := range key {
		if err := checkIdent("key column", k); err != nil {
			return nil, err
		}
		if seenKey[k] {
			return nil, fmt.Errorf("key column %q named twice", k)
		}
		seenKey[k] = true
	}
	logSchema, logTable := schema, table+"_"+g.Column+"_log"
	if g.Log != "" {
		if logSchema, logTable, err = splitTable("log table", g.Log); err != nil {
			return nil, err
		}
	}
	base := table + "_" + g.Column + "_fsm"
	names := map[string]string{
		"function": base, "check": base + "_check", "insert trigger": base + "_insert",
		"update trigger": base + "_update", "log table": logTable,
		"log function": logTable + "_immutable", "log trigger": logTable + "_immutable_truncate",
		"log index": logTable + "_row_key",
	}
	for _, what := range sortedKeys(names) {
		if err := checkIdent(what, names[what]); err != nil {
			return nil, fmt.Errorf("%w; shorten the table or column name, or name the log table", err)
		}
	}
	if table == logTable && schema == logSchema {
		return nil, fmt.Errorf("log table %q: it is the guarded table", g.Log)
	}

	tbl := qualify(schema, table)
	col := quoteIdent(g.Column)
	fn := qualify(schema, base)
	logTbl := qualify(logSchema, logTable)
	logFn := qualify(logSchema, logTable+"_immutable")
	where := fmt.Sprintf("%s.%s", g.Table, g.Column)
	machine := fmt.Sprintf("machine %s (type %q version %d)", m.Name, m.Type, m.Version)

	// events[from][to] lists the events joining two different states, in
	// the order the table declares them.
	type pair struct{ from, to string }
	events := map[pair][]string{}
	var fromOrder []string
	tos := map[string][]string{}
	for _, tr := range m.Transitions {
		p := pair{tr.From.Name, tr.To.Name}
		if p.from == p.to || slices.Contains(events[p], tr.Event.Name) {
			continue
		}
		if len(events[p]) == 0 {
			if len(tos[p.from]) == 0 {
				fromOrder = append(fromOrder, p.from)
			}
			tos[p.from] = append(tos[p.from], p.to)
		}
		events[p] = append(events[p], tr.Event.Name)
	}
	// Order the from states as the machine declares its states.
	order := map[string]int{}
	for _, s := range m.States {
		order[s.Name] = s.Index
	}
	sortByIndex(fromOrder, order)

	var b bytes.Buffer
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("-- %s\n", header(sourceOf(m)))
	w("-- versions:\n-- \tfsmgen %s\n--\n", version.Version)
	w("-- %s guards column %s: a CHECK of its states, a trigger that\n", machine, where)
	w("-- refuses (SQLSTATE %s) an INSERT not in %s and an UPDATE between two\n", SQLStateGuardRefused, m.Initial.Name)
	w("-- states no row of the table joins, and the append-only log %s,\n", logTable)
	w("-- written by the same trigger in the same transaction. When several\n")
	w("-- events join two states, the writer names one with\n")
	w("-- set_config('%s', EVENT, true); set_config('%s', WORKER, true)\n", SQLEventSetting, SQLWorkerSetting)
	w("-- names the worker in the log. Applying this file again replaces what it\n-- created.\n\n")

	var states []string
	for _, s := range m.States {
		states = append(states, quoteLit(s.Name))
	}
	w("ALTER TABLE %s DROP CONSTRAINT IF EXISTS %s;\n", tbl, quoteIdent(base+"_check"))
	w("ALTER TABLE %s ADD CONSTRAINT %s\n    CHECK (%s IS NOT NULL AND %s IN (%s));\n\n",
		tbl, quoteIdent(base+"_check"), col, col, strings.Join(states, ", "))

	w("CREATE TABLE IF NOT EXISTS %s (\n", logTbl)
	w("    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,\n")
	w("    row_key    jsonb NOT NULL,\n")
	w("    from_state text,\n")
	w("    to_state   text NOT NULL,\n")
	w("    event      text,\n")
	w("    worker     text,\n")
	w("    at         timestamptz NOT NULL DEFAULT now()\n")
	w(");\n")
	w("CREATE INDEX IF NOT EXISTS %s ON %s (row_key, id);\n\n", quoteIdent(logTable+"_row_key"), logTbl)

	w("CREATE OR REPLACE FUNCTION %s() RETURNS trigger\nLANGUAGE plpgsql\nSET search_path = pg_catalog, pg_temp\nAS $fsm$\n", logFn)
	w("BEGIN\n")
	w("    RAISE EXCEPTION '%s is append-only: %% refused', TG_OP\n", logTable)
	w("        USING ERRCODE = '%s';\n", SQLStateGuardLogImmutable)
	w("END\n$fsm$;\n\n")
	w("DROP TRIGGER IF EXISTS %s ON %s;\n", quoteIdent(logTable+"_immutable"), logTbl)
	w("CREATE TRIGGER %s BEFORE UPDATE OR DELETE ON %s\n    FOR EACH ROW EXECUTE FUNCTION %s();\n",
		quoteIdent(logTable+"_immutable"), logTbl, logFn)
	w("DROP TRIGGER IF EXISTS %s ON %s;\n", quoteIdent(logTable+"_immutable_truncate"), logTbl)
	w("CREATE TRIGGER %s BEFORE TRUNCATE ON %s\n    FOR EACH STATEMENT EXECUTE FUNCTION %s();\n\n",
		quoteIdent(logTable+"_immutable_truncate"), logTbl, logFn)

	w("CREATE OR REPLACE FUNCTION %s() RETURNS trigger\nLANGUAGE plpgsql\nSET search_path = pg_catalog, pg_temp\nAS $fsm$\n", fn)
	w("DECLARE\n")
	w("    from_state text;\n")
	w("    events     text[];\n")
	w("    ev         text;\n")
	w("BEGIN\n")
	w("    IF TG_OP = 'INSERT' THEN\n")
	w("        IF NEW.%s IS DISTINCT FROM %s THEN\n", col, quoteLit(m.Initial.Name))
	w("            RAISE EXCEPTION '%s: a row of %s is inserted in %s, not in %%', NEW.%s\n",
		escapeRaise(machine), g.Table, m.Initial.Name, col)
	w("                USING ERRCODE = '%s';\n", SQLStateGuardRefused)
	w("        END IF;\n")
	w("    ELSE\n")
	w("        from_state := OLD.%s;\n", col)
	w("        events := CASE from_state\n")
	for _, from := range fromOrder {
		w("            WHEN %s THEN CASE NEW.%s", quoteLit(from), col)
		sortByIndex(tos[from], order)
		for _, to := range tos[from] {
			w(" WHEN %s THEN %s::text[]", quoteLit(to), quoteLit("{"+strings.Join(events[pair{from, to}], ",")+"}"))
		}
		w(" END\n")
	}
	w("        END;\n")
	w("        IF events IS NULL THEN\n")
	w("            RAISE EXCEPTION '%s: %s may not move from %% to %%', from_state, NEW.%s\n",
		escapeRaise(machine), where, col)
	w("                USING ERRCODE = '%s';\n", SQLStateGuardRefused)
	w("        END IF;\n")
	w("        IF cardinality(events) = 1 THEN\n")
	w("            ev := events[1];\n")
	w("        ELSE\n")
	w("            ev := nullif(current_setting('%s', true), '');\n", SQLEventSetting)
	w("            IF ev IS NULL OR NOT ev = ANY (events) THEN\n")
	w("                RAISE EXCEPTION '%s: %s moves from %% to %% on one of %%; name it in setting %s, not %%',\n",
		escapeRaise(machine), where, SQLEventSetting)
	w("                    from_state, NEW.%s, array_to_string(events, ', '), coalesce(ev, 'unset')\n", col)
	w("                    USING ERRCODE = '%s';\n", SQLStateGuardRefused)
	w("            END IF;\n")
	w("        END IF;\n")
	w("    END IF;\n")
	var keyArgs []string
	for _, k := range key {
		keyArgs = append(keyArgs, quoteLit(k), "NEW."+quoteIdent(k))
	}
	w("    INSERT INTO %s (row_key, from_state, to_state, event, worker)\n", logTbl)
	w("    VALUES (jsonb_build_object(%s), from_state, NEW.%s, ev,\n", strings.Join(keyArgs, ", "), col)
	w("            nullif(current_setting('%s', true), ''));\n", SQLWorkerSetting)
	w("    RETURN NULL;\n")
	w("END\n$fsm$;\n")
	if logSchema == "" {
		// The log table went to the schema CREATE TABLE put it in: the
		// function finds it there, and in the session's temporary schema
		// only after it.
		w("DO $fsm$\nBEGIN\n")
		w("    EXECUTE format('ALTER FUNCTION %%s SET search_path = pg_catalog, %%I, pg_temp', %s::regprocedure, current_schema());\n",
			quoteLit(fn+"()"))
		w("END\n$fsm$;\n")
	}
	w("\n")

	w("DROP TRIGGER IF EXISTS %s ON %s;\n", quoteIdent(base+"_insert"), tbl)
	w("CREATE TRIGGER %s AFTER INSERT ON %s\n    FOR EACH ROW EXECUTE FUNCTION %s();\n",
		quoteIdent(base+"_insert"), tbl, fn)
	w("DROP TRIGGER IF EXISTS %s ON %s;\n", quoteIdent(base+"_update"), tbl)
	w("CREATE TRIGGER %s AFTER UPDATE ON %s\n    FOR EACH ROW WHEN (OLD.%s IS DISTINCT FROM NEW.%s)\n    EXECUTE FUNCTION %s();\n",
		quoteIdent(base+"_update"), tbl, col, col, fn)
	return b.Bytes(), nil
}

// escapeRaise makes s safe inside a RAISE format string literal.
func escapeRaise(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "'", "''"), "%", "%%")
}

func sortByIndex(names []string, order map[string]int) {
	sort.SliceStable(names, func(i, j int) bool { return order[names[i]] < order[names[j]] })
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

package gen_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/gen"
)

// TestSQLGolden compares the guard migrations with their golden copies
// under testdata/sql; go test ./gen -update rewrites them.
func TestSQLGolden(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		golden, input string
		guard         gen.SQLGuard
	}{
		{"orders.sql", "testdata/sql/orders.fsm", gen.SQLGuard{Table: "orders", Column: "status"}},
		{"shop_orders.sql", "testdata/sql/orders.fsm", gen.SQLGuard{Table: "shop.orders", Column: "state", Key: []string{"tenant", "number"}, Log: "audit.order_states"}},
		{"door.sql", "testdata/door.fsm", gen.SQLGuard{Table: "doors", Column: "state"}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			t.Parallel()
			spec := load(t, tc.input)
			got, err := gen.SQL(spec.Machines[0], tc.guard)
			if err != nil {
				t.Fatalf("SQL: %v", err)
			}
			again, err := gen.SQL(spec.Machines[0], tc.guard)
			if err != nil || string(again) != string(got) {
				t.Fatalf("a second SQL call differs (err %v)", err)
			}
			path := filepath.Join("testdata", "sql", tc.golden)
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./gen -update)", err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("%s (-want +got):\n%s", path, diff)
			}
		})
	}
}

func TestSQLRefusesBadNames(t *testing.T) {
	t.Parallel()
	m := load(t, "testdata/sql/orders.fsm").Machines[0]
	long := "a23456789012345678901234567890123456789012345678901234567890"
	for _, tc := range []struct {
		guard gen.SQLGuard
		want  string
	}{
		{gen.SQLGuard{Table: "Orders", Column: "status"}, `table "Orders": want a lower-case SQL identifier ([a-z_][a-z0-9_]*)`},
		{gen.SQLGuard{Table: "a.b.c", Column: "status"}, `table "b.c": want a lower-case SQL identifier ([a-z_][a-z0-9_]*)`},
		{gen.SQLGuard{Table: "x-y.orders", Column: "status"}, `table schema "x-y": want a lower-case SQL identifier ([a-z_][a-z0-9_]*)`},
		{gen.SQLGuard{Table: "orders", Column: "st atus"}, `column "st atus": want a lower-case SQL identifier ([a-z_][a-z0-9_]*)`},
		{gen.SQLGuard{Table: "orders", Column: "status", Key: []string{"id", "id"}}, `key column "id" named twice`},
		{gen.SQLGuard{Table: "orders", Column: "status", Key: []string{""}}, `key column "": want a lower-case SQL identifier ([a-z_][a-z0-9_]*)`},
		{gen.SQLGuard{Table: "orders", Column: "status", Log: "orders"}, `log table "orders": it is the guarded table`},
		{gen.SQLGuard{Table: long, Column: "status"}, `check "` + long + `_status_fsm_check": longer than PostgreSQL's 63 bytes; shorten the table or column name, or name the log table`},
	} {
		_, err := gen.SQL(m, tc.guard)
		if err == nil {
			t.Errorf("SQL(%+v): no error, want %q", tc.guard, tc.want)
			continue
		}
		if diff := cmp.Diff(tc.want, err.Error()); diff != "" {
			t.Errorf("SQL(%+v) error (-want +got):\n%s", tc.guard, diff)
		}
	}
}

// TestSQLRefusesWhatItDoesNotGuard: a machine with parallel states, whose
// column would hold configurations, and one with eventless or completion
// rows, whose moves have no event for the log, are refused with
// ErrNotGenerated.
func TestSQLRefusesWhatItDoesNotGuard(t *testing.T) {
	t.Parallel()
	g := gen.SQLGuard{Table: "t", Column: "c"}
	for _, tt := range []struct {
		file, want string
	}{
		{filepath.Join("..", "dsl", "testdata", "parallel", "podlifecycle.fsm"), "machine Pod: a column guard for parallel states is not generated yet"},
		{filepath.Join("testdata", "nested", "player.fsm"), "machine Player: a column guard for eventless and completion rows (PAUSED -> STOPPED) is not generated yet"},
	} {
		_, err := gen.SQL(load(t, tt.file).Machines[0], g)
		if err == nil || err.Error() != tt.want || !errors.Is(err, gen.ErrNotGenerated) {
			t.Errorf("SQL(%s) = %v, want %q matching ErrNotGenerated", tt.file, err, tt.want)
		}
	}
}

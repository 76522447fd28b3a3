package main

import (
	"context"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime/linearchain"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
)

// chains list without -status lists every instance: the empty status
// filter is an empty list, not SQL NULL, which matched nothing.
func TestChainsListWithoutStatus(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	pool := openPool(t, url)
	if err := linearchain.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	e := linearchain.New(pool)
	never := func(context.Context, linearchain.Task) linearchain.Result { panic("no worker runs here") }
	if err := e.Register(linearchain.Definition{Type: "order.process", Version: 1, Steps: []linearchain.Step{
		{Type: "reserve", Handler: never}, {Type: "charge", Handler: never},
	}}); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"k-1", "k-2"} {
		if _, err := e.Start(ctx, "order.process", 1, key, map[string]any{}); err != nil {
			t.Fatal(err)
		}
	}
	row := regexp.MustCompile(`(?m)^\d+\s+order\.process v1\s+RUNNING\s+0 reserve\s+0/2\s+(k-\d)\s`)
	for _, args := range [][]string{{"chains", "list"}, {"chains", "list", "-status", "RUNNING"}, {"chains", "list", "-type", "order.process"}} {
		got := withDB(t, url, args...)
		var keys []string
		for _, m := range row.FindAllStringSubmatch(got.Stdout, -1) {
			keys = append(keys, m[1])
		}
		if diff := cmp.Diff([]string{"k-1", "k-2"}, keys); diff != "" || got.Code != exitOK {
			t.Errorf("%v: exit %d, stderr %q, keys (-want +got):\n%s\n%s", args, got.Code, got.Stderr, diff, got.Stdout)
		}
	}
}

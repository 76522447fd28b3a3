package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/db"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestRecord: with -database, the demo's worker records every run in the
// database, as the runtime role: each of the four runs is there, finished
// in the state its branch decides, with every transition in its log.
func TestRecord(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dsn := pgtest.RoleDSN(t, pgtest.NewDatabase(t), db.RoleRuntime)
	var out, errOut bytes.Buffer
	if err := run(ctx, []string{"-database", dsn}, &out, &errOut); err != nil {
		t.Fatalf("fchademo -database: %v\n%s%s", err, out.String(), errOut.String())
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	st := store.New(pool)
	var got []string
	for _, m := range regexp.MustCompile(`recorded: fsmctl runs show (\S+)`).FindAllStringSubmatch(out.String(), -1) {
		x, err := st.Execution(ctx, m[1])
		if err != nil {
			t.Fatalf("execution of run %s: %v", m[1], err)
		}
		run := fmt.Sprintf("%s %s:", x.Status, x.State)
		for _, s := range x.StateHistory {
			run += fmt.Sprintf(" %s -%s-> %s;", s.From, s.Event, s.To)
		}
		got = append(got, run)
	}
	const (
		offer = " PREQUALIFICATION -PrequalificationCompleted-> CONDITIONAL_OFFER;" +
			" CONDITIONAL_OFFER -BackgroundCheckAuthorizationSigned-> BACKGROUND_CHECK_ALLOWED;"
		assess = " BACKGROUND_CHECK_ALLOWED -BackgroundCheckCompleted-> INDIVIDUALIZED_ASSESSMENT;"
	)
	want := []string{
		"succeeded DENIED: PREQUALIFICATION -PrequalificationCompleted-> DENIED;",
		"succeeded APPROVED:" + offer + " BACKGROUND_CHECK_ALLOWED -BackgroundCheckCompleted-> APPROVED;",
		"succeeded APPROVED:" + offer + assess + " INDIVIDUALIZED_ASSESSMENT -AssessmentCompleted-> APPROVED;",
		"succeeded DENIED:" + offer + assess + " INDIVIDUALIZED_ASSESSMENT -AssessmentCompleted-> DENIED;",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("recorded runs (-want +got):\n%s\noutput:\n%s", diff, out.String())
	}
}

// TestUsage: -h prints the usage with the -database flag; an argument is
// refused, with the usage.
func TestUsage(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"-h"}, &out, &errOut); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("fchademo -h = %v, want flag.ErrHelp", err)
	}
	if !strings.HasPrefix(errOut.String(), "usage: fchademo [-database DSN]\n") || !strings.Contains(errOut.String(), "  -database DSN\n") || out.Len() > 0 {
		t.Errorf("fchademo -h printed %q to stdout and to stderr:\n%s", out.String(), errOut.String())
	}
	errOut.Reset()
	err := run(context.Background(), []string{"now"}, &out, &errOut)
	if err == nil || err.Error() != `unexpected argument "now"` || !strings.HasPrefix(errOut.String(), "usage: fchademo") {
		t.Errorf("fchademo now = %v, printed %q", err, errOut.String())
	}
}

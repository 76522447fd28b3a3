package stepengine_test

import (
	"context"
	"flag"
	"os"
	"testing"
	"time"

	"github.com/fsmgen/fsmgen/runtime/fsmtest"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/stepengine"
	"github.com/fsmgen/fsmgen/runtime/store"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

func TestMain(m *testing.M) {
	if os.Getenv(crashChildEnv) != "" {
		crashChild()
		return
	}
	pgtest.Main(m)
}

// stepClock is a fake clock: every reading is one second after the one
// before, from 2026-02-19T10:30:00Z, so that a run's files are the same
// bytes at every run of a test.
func stepClock() func() time.Time {
	return fsmtest.NewClock(time.Date(2026, 2, 19, 10, 30, 0, 0, time.UTC)).Tick(time.Second).Now
}

// newEngine returns an engine on a fresh database, registered, with a fake
// clock and a fixed git sha.
func newEngine(t *testing.T) (*stepengine.Engine, *store.Store) {
	t.Helper()
	st := store.New(pgtest.NewPool(t))
	e := stepengine.New(st, stepengine.WithClock(stepClock()), stepengine.WithGitSHA("0123456789abcdef0123456789abcdef01234567"))
	if err := e.Register(context.Background()); err != nil {
		t.Fatal(err)
	}
	return e, st
}

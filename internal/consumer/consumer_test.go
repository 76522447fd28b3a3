package consumer_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsmgen/fsmgen/runtime/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// The service's files: a machine that never ends, the line that generates
// it, and a test that drives it on the store.
var service = map[string]string{
	"doors/door.fsm": `// Door opens, closes and locks for as long as it stands.
machine Door {
    initial CLOSED wait
    state   OPEN   wait
    state   LOCKED wait

    event Open { by string }
    event Close
    event Lock
    event Unlock

    CLOSED -> OPEN   on Open
    OPEN   -> CLOSED on Close
    CLOSED -> LOCKED on Lock
    LOCKED -> CLOSED on Unlock
}
`,
	"doors/generate.go": `// Package doors keeps the doors of a building.
package doors

//go:generate go tool fsmgen door.fsm
`,
	"doors/doors_test.go": `package doors_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"example.com/doorsvc/doors/door"
	"github.com/fsmgen/fsmgen/db"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/store"
)

func TestDoorOnTheStore(t *testing.T) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DOORSVC_DATABASE_URL"))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := db.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	st := store.New(pool)
	if err := st.Register(ctx, door.Definition()); err != nil {
		t.Fatal(err)
	}
	res, err := st.Start(ctx, store.StartParams{Type: door.Type, Version: door.Version, IdempotencyKey: "front-door", TenantID: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	run, rec, err := st.Load(ctx, res.Run.ID, door.Definition())
	if err != nil {
		t.Fatal(err)
	}
	state, err := door.ParseState(run.State)
	if err != nil {
		t.Fatal(err)
	}
	m := door.New(door.WithState(state), door.WithRecorder(rec))
	for _, e := range []door.Event{door.Open{By: "ann"}, door.Close{}, door.Lock{}, door.Unlock{}, door.Open{By: "bob"}} {
		if err := m.Fire(ctx, e); err != nil {
			t.Fatalf("%s: %v", e.EventName(), err)
		}
	}
	if err := m.Fire(ctx, door.Lock{}); !errors.Is(err, runtime.ErrIllegalTransition) {
		t.Fatalf("Lock while OPEN: %v, want ErrIllegalTransition", err)
	}
	got, err := st.Get(ctx, res.Run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != "OPEN" || got.Status != runtime.StatusRunning || m.State() != door.StateOpen {
		t.Fatalf("run in %s (%s), machine in %s; want OPEN, running", got.State, got.Status, m.State())
	}
	h, err := st.History(ctx, res.Run.ID)
	if err != nil {
		t.Fatal(err)
	}
	var events []string
	for _, s := range h {
		events = append(events, s.Name)
	}
	if want := []string{"start", "Open", "Close", "Lock", "Unlock", "Open"}; !slices.Equal(events, want) {
		t.Fatalf("history %v, want %v", events, want)
	}
}
`,
}

// TestUsedFromAnotherModule follows the README's "Write a machine" in a
// new module outside the repository.
//
// The module's go.sum starts as a copy of the checkout's, and the go
// command runs with GOPROXY=off and -mod=mod: every module it needs is one
// this repository's own build has put in the module cache, so the test
// needs no network and no proxy, and -mod=mod adds the requirements the
// build needs (what go mod tidy does, without fetching the test
// dependencies of every dependency, which the cache may not hold).
func TestUsedFromAnotherModule(t *testing.T) {
	t.Parallel()
	checkout, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/doorsvc\n\ngo 1.26\n\nreplace github.com/fsmgen/fsmgen => "+checkout+"\n")
	sum, err := os.ReadFile(filepath.Join(checkout, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	write("go.sum", string(sum))

	env := append(os.Environ(),
		"GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off",
		"DOORSVC_DATABASE_URL="+pgtest.NewDatabase(t),
	)
	gocmd := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out.String())
		}
		return out.String()
	}

	gocmd("get", "-tool", "github.com/fsmgen/fsmgen/cmd/fsmgen")
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\ntool github.com/fsmgen/fsmgen/cmd/fsmgen\n", "github.com/fsmgen/fsmgen v0.0.0-00010101000000-000000000000"} {
		if !strings.Contains(string(mod), want) {
			t.Fatalf("go.mod after go get -tool lacks %q:\n%s", want, mod)
		}
	}

	for name, content := range service {
		write(name, content)
	}
	gocmd("generate", "./...")
	for _, f := range []string{"fsm.go", "fsm_test.go", "diagram.mmd", "diagram.dot", "README.md"} {
		if _, err := os.Stat(filepath.Join(dir, "doors", "door", f)); err != nil {
			t.Errorf("go generate did not write doors/door/%s: %v", f, err)
		}
	}
	gocmd("build", "./...")
	gocmd("vet", "./...")
	out := gocmd("test", "-count=1", "./...")
	for _, want := range []string{"ok  \texample.com/doorsvc/doors\t", "ok  \texample.com/doorsvc/doors/door\t"} {
		if !strings.Contains(out, want) {
			t.Errorf("go test output lacks %q:\n%s", want, out)
		}
	}
}

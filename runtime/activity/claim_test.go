package activity_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/runtime/activity"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
)

// The environment of a child process that executes the charge activity
// (see runChild): its mode, its database and its name.
const (
	childModeEnv   = "ACTIVITY_CHILD_MODE"
	childDSNEnv    = "ACTIVITY_CHILD_DSN"
	childCallerEnv = "ACTIVITY_CHILD_CALLER"
)

// chargeKey is the idempotency key every caller of the tests uses.
const chargeKey = "charge:order-1"

// charge is the activity of the tests: its side effect is a row of
// side_effects, and its output names that row, so that callers that got
// the same output got the result of the same execution. gate runs after
// the side effect, before the activity returns.
func charge(pool *pgxpool.Pool, caller string, gate func(ctx context.Context) error) activity.Activity[string, string] {
	return activity.Activity[string, string]{
		Name: "charge", Retry: activity.Payment,
		IdempotencyKey: func(string) string { return chargeKey },
		Execute: func(ctx context.Context, order string) (string, error) {
			var id int
			if err := pool.QueryRow(ctx, `INSERT INTO side_effects (caller) VALUES ($1) RETURNING id`, caller).Scan(&id); err != nil {
				return "", err
			}
			if err := gate(ctx); err != nil {
				return "", err
			}
			return fmt.Sprintf("receipt %d of %s", id, order), nil
		},
	}
}

func createSideEffects(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), `CREATE TABLE side_effects (id SERIAL PRIMARY KEY, caller TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
}

// sideEffects returns the callers that ran the side effect, in order.
func sideEffects(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT caller FROM side_effects ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestConcurrentCallsExecuteOnce: four goroutines execute the same key at
// once. One runs the side effect, while the three others wait for the key
// (each reports its first wait); then all four get its output, three of
// them as cached, and the side effect ran once.
func TestConcurrentCallsExecuteOnce(t *testing.T) {
	t.Parallel()
	const n = 4
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	createSideEffects(t, pool)

	running := make(chan string, n) // callers whose activity ran
	waiting := make(chan string, n) // callers that found the key held
	proceed := make(chan struct{})  // lets the running activity return
	done := make(chan struct{})     // the running caller's Execute returned
	var closeProceed, closeDone sync.Once
	letGo := func() { closeProceed.Do(func() { close(proceed) }) }

	type outcome struct {
		res activity.Result[string]
		err error
	}
	outcomes := make([]outcome, n)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer letGo() // before wg.Wait, when the test fails early
	for i := range n {
		caller := "caller-" + strconv.Itoa(i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var first sync.Once
			x := activity.NewExecutor(pool, activity.WithSleep(func(ctx context.Context, d time.Duration) error {
				first.Do(func() { waiting <- caller })
				select {
				case <-done:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			}))
			ran := false
			a := charge(pool, caller, func(ctx context.Context) error {
				ran = true
				running <- caller
				select {
				case <-proceed:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			})
			res, err := activity.Execute(ctx, x, "wf-"+caller, a, "order-1")
			outcomes[i] = outcome{res, err}
			if ran {
				closeDone.Do(func() { close(done) })
			}
		}()
	}

	var ran, waited []string
	for len(ran) < 1 || len(waited) < n-1 {
		select {
		case c := <-running:
			ran = append(ran, c)
			if len(ran) > 1 {
				t.Fatalf("callers %v ran the side effect concurrently", ran)
			}
		case c := <-waiting:
			waited = append(waited, c)
		}
	}
	letGo()
	wg.Wait()

	want := "receipt 1 of order-1"
	executed := 0
	for i, o := range outcomes {
		if o.err != nil {
			t.Errorf("caller %d: %v", i, o.err)
			continue
		}
		if o.res.Output != want || o.res.Key != chargeKey {
			t.Errorf("caller %d got %+v, want output %q", i, o.res, want)
		}
		if !o.res.Cached {
			executed++
		}
	}
	if executed != 1 {
		t.Errorf("%d callers executed the activity, want 1", executed)
	}
	if diff := cmp.Diff(ran, sideEffects(t, pool)); diff != "" {
		t.Errorf("side effects (-want +got):\n%s", diff)
	}
}

// child is a test binary started as a caller of the charge activity.
type child struct {
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// line is a line a child wrote on its standard output.
type line struct {
	child *child
	text  string
}

// startChild starts the test binary as a caller named name in mode (see
// runChild), sending the lines it writes to lines.
func startChild(t *testing.T, dsn, mode, name string, lines chan<- line) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childModeEnv+"="+mode, childDSNEnv+"="+dsn, childCallerEnv+"="+name)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{name: name, cmd: cmd, stdin: stdin}
	t.Cleanup(func() {
		// Reached with the child still running only when the test failed.
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- line{c, sc.Text()}
		}
	}()
	return c
}

// TestConcurrentProcessesExecuteOnce: four processes execute the same key
// at once. One runs the side effect while the three others wait for the
// key; then all four get its output and the side effect ran once.
func TestConcurrentProcessesExecuteOnce(t *testing.T) {
	t.Parallel()
	const n = 4
	pool := pgtest.NewPool(t)
	dsn := pool.Config().ConnString()
	createSideEffects(t, pool)

	lines := make(chan line, 4*n)
	for i := range n {
		startChild(t, dsn, "wait", "process-"+strconv.Itoa(i), lines)
	}
	var runner *child
	waited := 0
	for runner == nil || waited < n-1 {
		l := <-lines
		switch l.text {
		case "running":
			if runner != nil {
				t.Fatalf("%s and %s ran the side effect concurrently", runner.name, l.child.name)
			}
			runner = l.child
		case "waiting":
			waited++
		default:
			t.Fatalf("%s: %s", l.child.name, l.text)
		}
	}
	if _, err := io.WriteString(runner.stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for range n {
		l := <-lines
		got[l.text]++
	}
	want := map[string]int{"result receipt 1 of order-1 cached=false": 1, "result receipt 1 of order-1 cached=true": n - 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{runner.name}, sideEffects(t, pool)); diff != "" {
		t.Errorf("side effects (-want +got):\n%s", diff)
	}
}

// TestKilledCallerReleasesKey: a process that holds the key, its side
// effect done, is killed before it stores the result; a caller that waited
// for the key then takes it over, executes the activity and stores its
// result, instead of waiting for ever.
func TestKilledCallerReleasesKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	dsn := pool.Config().ConnString()
	createSideEffects(t, pool)

	lines := make(chan line, 4)
	holder := startChild(t, dsn, "hold", "killed", lines)
	if l := <-lines; l.text != "running" {
		t.Fatalf("%s: %s, want running", l.child.name, l.text)
	}

	waiting := make(chan struct{})
	killed := make(chan struct{})
	var first sync.Once
	x := activity.NewExecutor(pool, activity.WithSleep(func(ctx context.Context, d time.Duration) error {
		first.Do(func() { close(waiting) })
		select {
		case <-killed:
		case <-ctx.Done():
			return ctx.Err()
		}
		return activity.Wait(ctx, d)
	}))
	ran := make(chan struct{})
	type outcome struct {
		res activity.Result[string]
		err error
	}
	result := make(chan outcome, 1)
	go func() {
		res, err := activity.Execute(ctx, x, "wf-survivor", charge(pool, "survivor", func(context.Context) error {
			close(ran)
			return nil
		}), "order-1")
		result <- outcome{res, err}
	}()
	select {
	case <-waiting:
	case <-ran:
		t.Fatal("the survivor ran the activity while the live holder held the key")
	}

	if err := holder.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := holder.cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("holder: %v, want killed by SIGKILL", err)
	}
	close(killed)

	o := <-result
	if o.err != nil {
		t.Fatal(o.err)
	}
	if o.res.Cached || o.res.Output != "receipt 2 of order-1" || o.res.Tries != 1 {
		t.Errorf("survivor got %+v, want its own execution", o.res)
	}
	if diff := cmp.Diff([]string{"killed", "survivor"}, sideEffects(t, pool)); diff != "" {
		t.Errorf("side effects (-want +got):\n%s", diff)
	}
	ex, err := activity.Executions(ctx, pool, "wf-survivor")
	if err != nil {
		t.Fatal(err)
	}
	if len(ex) != 1 || ex[0].Status != "completed" || ex[0].Attempt != 2 || string(ex[0].Output) != `"receipt 2 of order-1"` {
		t.Errorf("executions = %+v, want the key completed on its second try", ex)
	}
}

// runChild is a child process of the tests above: it executes the charge
// activity under the key they share and reports on its standard output:
// "waiting" when it first finds the key held by another caller, "running"
// once its side effect is done, and "result OUTPUT cached=BOOL" at the
// end. In mode "wait" the activity then returns when a line arrives on
// the standard input; in mode "hold" it never returns (the process is
// killed).
func runChild(mode string) int {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv(childDSNEnv))
	if err != nil {
		fmt.Println(err)
		return 4
	}
	defer pool.Close()
	caller := os.Getenv(childCallerEnv)
	var first sync.Once
	x := activity.NewExecutor(pool, activity.WithSleep(func(ctx context.Context, d time.Duration) error {
		first.Do(func() { fmt.Println("waiting") })
		return activity.Wait(ctx, d)
	}))
	in := bufio.NewReader(os.Stdin)
	a := charge(pool, caller, func(ctx context.Context) error {
		fmt.Println("running")
		if mode == "hold" {
			select {}
		}
		_, err := in.ReadString('\n')
		return err
	})
	res, err := activity.Execute(ctx, x, "wf-"+caller, a, "order-1")
	if err != nil {
		fmt.Println(strings.ReplaceAll(err.Error(), "\n", " "))
		return 1
	}
	fmt.Printf("result %s cached=%t\n", res.Output, res.Cached)
	return 0
}

package linearchain_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fsmgen/fsmgen/runtime/linearchain"
)

// Run's workers drive instances to their ends; the test waits on the
// results they report.
func TestRunDrivesInstancesToTheirEnds(t *testing.T) {
	t.Parallel()
	e, _ := newEngine(t, def("flow", 3, abc,
		returns(linearchain.Completed()), returns(linearchain.Retry(0, "again"), linearchain.Completed()), returns(linearchain.Completed())))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const n = 20
	ended := make(chan int64, n)
	errs := make(chan error, 1)
	done := make(chan error)
	go func() {
		done <- e.Run(ctx, linearchain.RunOptions{App: "test", Workers: 3, Batch: 4, Poll: time.Second,
			OnApplied: func(a linearchain.Applied) {
				if a.Instance == "COMPLETED" {
					ended <- a.Task.InstanceID
				}
			},
			OnError: func(err error) {
				select {
				case errs <- err:
				default:
				}
			}})
	}()
	ids := map[int64]bool{}
	for i := range n {
		ids[start(t, e, "flow", string(rune('a'+i)))] = true
	}
	for range n {
		select {
		case id := <-ended:
			if !ids[id] {
				t.Fatalf("instance %d completed twice or is unknown", id)
			}
			delete(ids, id)
		case err := <-errs:
			t.Fatalf("worker error: %v", err)
		case <-time.After(time.Minute):
			t.Fatalf("%d instances not completed", len(ids))
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Run returned %v", err)
	}
}

func TestWorkerIDIsAppHostPidSuffix(t *testing.T) {
	t.Parallel()
	a, b := linearchain.WorkerID("shop"), linearchain.WorkerID("shop")
	parts := strings.Split(a, ":")
	if len(parts) != 4 || parts[0] != "shop" || parts[1] == "" || parts[2] == "" || len(parts[3]) != 8 || a == b {
		t.Errorf("WorkerID: %q and %q", a, b)
	}
}

// A handler cannot return a result that RUNNING does not take: the step
// machine's events are not Results, and only Completed, Waiting, Retry and
// Dead make one. Each program is built with go build -overlay, as a file
// added to this package.
func TestImpossibleResultsDoNotCompile(t *testing.T) {
	t.Parallel()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	build := func(ret string) string {
		t.Helper()
		tmp := t.TempDir()
		src := filepath.Join(tmp, "prog.go")
		prog := "package linearchain\n\nimport (\n\t\"context\"\n\n\t\"github.com/fsmgen/fsmgen/runtime/linearchain/step\"\n)\n\n" +
			"var _ = step.Type\n\nvar _ Handler = func(ctx context.Context, t Task) Result { return " + ret + " }\n"
		if err := os.WriteFile(src, []byte(prog), 0o644); err != nil {
			t.Fatal(err)
		}
		overlay := filepath.Join(tmp, "overlay.json")
		js, _ := json.Marshal(map[string]any{"Replace": map[string]string{filepath.Join(dir, "zz_prog.go"): src}})
		if err := os.WriteFile(overlay, js, 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("go", "build", "-overlay", overlay, ".")
		cmd.Dir = dir
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	if out := build("Completed()"); out != "" {
		t.Fatalf("a good handler does not compile:\n%s", out)
	}
	for _, bad := range []string{"step.Activate{}", "step.RecoverLease{}", "step.Completed{}", "step.WakeUp{}"} {
		if out := build(bad); !strings.Contains(out, "cannot use "+bad) {
			t.Errorf("returning %s: go build said %q, want it refused", bad, out)
		}
	}
}

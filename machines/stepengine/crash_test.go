package stepengine_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/internal/runfiles"
	"github.com/fsmgen/fsmgen/machines/stepengine"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// The crash test's child process: the test binary run again with these
// variables set, running crashWorkflow until the parent kills it.
const (
	crashChildEnv = "STEPENGINE_CRASH_CHILD" // the database URL
	crashDirEnv   = "STEPENGINE_CRASH_RUNS_DIR"
	crashStopEnv  = "STEPENGINE_CRASH_STOP_AT" // the step that blocks
)

// crashWorkflow has four steps that change the state and register an
// artifact each; the step named block, when not "", tells the parent the
// run id and blocks until the process is killed.
func crashWorkflow(block string) stepengine.Workflow {
	wf := stepengine.Workflow{Name: "crash"}
	for _, name := range []string{"one", "two", "three", "four"} {
		wf.Steps = append(wf.Steps, stepengine.Step{Name: name, Run: func(ctx context.Context, rc stepengine.RunContext, st *stepengine.RunState, log *stepengine.Logger) (stepengine.StepResult, error) {
			if name == block {
				fmt.Printf("blocked %s\n", rc.RunID())
				select {}
			}
			st.Data[name] = strings.Repeat(name, 1000)
			if err := os.WriteFile(filepath.Join(rc.RunDir(), name+".txt"), []byte(name), 0o644); err != nil {
				return stepengine.StepResult{}, err
			}
			if _, err := rc.RegisterArtifact(name, "txt", name+".txt", map[string]any{"bytes": len(name)}); err != nil {
				return stepengine.StepResult{}, err
			}
			return stepengine.StepResult{OK: true, Outputs: map[string]any{"step": name}}, nil
		}})
	}
	return wf
}

// crashChild runs crashWorkflow, blocking at the step the parent chose.
func crashChild() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv(crashChildEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	e := stepengine.New(store.New(pool))
	if err := e.Register(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	_, err = e.Run(ctx, crashWorkflow(os.Getenv(crashStopEnv)), stepengine.RunOptions{RunsDir: os.Getenv(crashDirEnv)})
	fmt.Fprintln(os.Stderr, "the run returned:", err)
	os.Exit(4)
}

// TestCrashAndRerun kills a process running a workflow (SIGKILL) while a
// step runs, checks that every file it left is whole and says how far it
// got, and runs the workflow again with the same run id: the directory
// and the database then hold the new attempt, consistent.
func TestCrashAndRerun(t *testing.T) {
	t.Parallel()
	for _, stopAt := range []string{"one", "three", "four"} {
		t.Run(stopAt, func(t *testing.T) {
			t.Parallel()
			url := pgtest.NewDatabase(t)
			runsDir := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), crashChildEnv+"="+url, crashDirEnv+"="+runsDir, crashStopEnv+"="+stopAt)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			line, err := bufio.NewReader(out).ReadString('\n')
			if err != nil {
				cmd.Wait()
				t.Fatalf("child: %v; stderr:\n%s", err, stderr.String())
			}
			runID := strings.TrimSpace(strings.TrimPrefix(line, "blocked "))
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			cmd.Wait()

			dir := filepath.Join(runsDir, runID)
			done := map[string]int{"one": 0, "three": 2, "four": 3}[stopAt]
			checkWhole(t, dir)
			var steps []runfiles.StepSummary
			readJSONFile(t, filepath.Join(dir, runfiles.StepsFile), &steps, done > 0)
			if len(steps) != done {
				t.Errorf("steps.json lists %d steps, want %d", len(steps), done)
			}
			if _, err := os.Stat(filepath.Join(dir, runfiles.RunFile)); err == nil {
				t.Error("run.json exists for a run that did not finish")
			}
			var state stepengine.RunState
			readJSONFile(t, filepath.Join(dir, runfiles.ContextFile), &state, true)
			if len(state.StepOutputs) != done {
				t.Errorf("context.json has the outputs of %d steps, want %d", len(state.StepOutputs), done)
			}

			// Run it again, to the end, under the same id.
			pool, err := pgxpool.New(context.Background(), url)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(pool.Close)
			st := store.New(pool)
			e := stepengine.New(st)
			res, err := e.Run(context.Background(), crashWorkflow(""), stepengine.RunOptions{RunsDir: runsDir, RunID: runID})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != "OK" || res.Attempt != 2 {
				t.Fatalf("rerun: status %s attempt %d, want OK 2", res.Status, res.Attempt)
			}
			checkWhole(t, dir)
			checkDatabase(t, st, res, []string{"OK", "OK", "OK", "OK"})
			var index []runfiles.ArtifactRecord
			readJSONFile(t, filepath.Join(dir, runfiles.IndexFile), &index, true)
			var names []string
			for _, r := range index {
				names = append(names, r.Name)
			}
			if diff := cmp.Diff([]string{"one", "two", "three", "four"}, names); diff != "" {
				t.Errorf("artifact index after the rerun (-want +got):\n%s", diff)
			}

			// The interrupted attempt is closed in the database: its step
			// that was running FAILED as interrupted, the rest as they were.
			first, err := runfiles.StepRunsOf(context.Background(), st, runID, 1)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range first.Steps {
				sr, err := st.Get(context.Background(), s.RunID)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, sr.State+" "+sr.LastErrorCode+resultCode(sr))
			}
			want := []string{"OK ", "OK ", "OK ", "OK "}
			for i := range want {
				switch {
				case i < done:
				case i == done:
					want[i] = "FAILED " + stepengine.ErrorTypeInterrupted
				default:
					want[i] = "PENDING "
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("the first attempt's steps in the database (-want +got):\n%s", diff)
			}
		})
	}
}

func resultCode(r store.Run) string {
	if r.Result == nil {
		return ""
	}
	return r.Result.ErrorCode
}

// checkWhole fails the test if a JSON file of dir does not decode, a line
// of logs.jsonl is not a JSON object, or a temporary file is left.
func checkWhole(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		switch {
		case strings.Contains(d.Name(), ".tmp-"):
			t.Errorf("temporary file %s left", p)
		case strings.HasSuffix(p, ".jsonl"):
			for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
				var v map[string]any
				if err := json.Unmarshal([]byte(line), &v); err != nil {
					t.Errorf("%s:%d: torn line: %v", p, i+1, err)
				}
			}
		case strings.HasSuffix(p, ".json"):
			if !json.Valid(data) {
				t.Errorf("%s: torn JSON: %q", p, data)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func readJSONFile(t *testing.T, name string, v any, mustExist bool) {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		if mustExist || !os.IsNotExist(err) {
			t.Errorf("%s: %v", name, err)
		}
		return
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Errorf("%s: %v", name, err)
	}
}

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
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/stepengine"
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
			if err := os.WriteFile(filepath.Join(rc.ArtifactsDir(), name+".txt"), []byte(name), 0o644); err != nil {
				return stepengine.StepResult{}, err
			}
			if _, err := rc.RegisterArtifact(name, "txt", "artifacts/"+name+".txt", map[string]any{"bytes": len(name)}); err != nil {
				return stepengine.StepResult{}, err
			}
			return stepengine.StepResult{OK: true, Outputs: map[string]any{"step": name}}, nil
		}})
	}
	return wf
}

// busySteps is the number of steps of busyWorkflow.
const busySteps = 60

// busyWorkflow has busySteps steps that each grow the state, write a file
// and register it: a run spends its time writing its files. With announce,
// each step prints its run id and number when it starts, and goes on.
func busyWorkflow(announce bool) stepengine.Workflow {
	wf := stepengine.Workflow{Name: "busy"}
	for i := range busySteps {
		name := fmt.Sprintf("s%03d", i+1)
		wf.Steps = append(wf.Steps, stepengine.Step{Name: name, Run: func(ctx context.Context, rc stepengine.RunContext, st *stepengine.RunState, log *stepengine.Logger) (stepengine.StepResult, error) {
			if announce {
				fmt.Printf("%s %d\n", rc.RunID(), i+1)
			}
			st.Data[name] = strings.Repeat("x", 500)
			if err := os.WriteFile(filepath.Join(rc.ArtifactsDir(), name+".txt"), []byte(name), 0o644); err != nil {
				return stepengine.StepResult{}, err
			}
			if _, err := rc.RegisterArtifact(name, "txt", "artifacts/"+name+".txt", nil); err != nil {
				return stepengine.StepResult{}, err
			}
			return stepengine.StepResult{OK: true, Outputs: map[string]any{"i": i + 1}, Metrics: map[string]any{"i": i + 1}}, nil
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
	wf := crashWorkflow(os.Getenv(crashStopEnv))
	if os.Getenv(crashStopEnv) == "" {
		wf = busyWorkflow(true)
	}
	_, err = e.Run(ctx, wf, stepengine.RunOptions{RunsDir: os.Getenv(crashDirEnv)})
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
			checkWhole(t, dir, false)
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
			checkWhole(t, dir, false)
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
					want[i] = "SKIPPED " + stepengine.ErrorTypeSkipped
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("the first attempt's steps in the database (-want +got):\n%s", diff)
			}
		})
	}
}

func resultCode(r runtime.Run) string {
	if r.Result == nil {
		return ""
	}
	return r.Result.ErrorCode
}

// checkWhole fails the test if a JSON file of dir does not decode, a line
// of logs.jsonl is not a JSON object, or, unless allowTemp, a temporary
// file is left (a process killed while writing a file leaves its
// temporary file behind; a rerun removes it).
func checkWhole(t *testing.T, dir string, allowTemp bool) {
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
			if !allowTemp {
				t.Errorf("temporary file %s left", p)
			}
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

// TestCrashWhileWriting kills a process (SIGKILL) while its run writes its
// files: after the step it waits for has started, the child goes on, so the
// kill falls at a point of the run that no one chose, most likely in the
// middle of writing a file. Every file left is whole; a rerun under the
// same run id finishes the run, and the directory and the database agree.
func TestCrashWhileWriting(t *testing.T) {
	t.Parallel()
	for _, killAt := range []int{1, 20, 45} {
		t.Run(fmt.Sprint(killAt), func(t *testing.T) {
			t.Parallel()
			url := pgtest.NewDatabase(t)
			runsDir := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), crashChildEnv+"="+url, crashDirEnv+"="+runsDir, crashStopEnv+"=")
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			r := bufio.NewReader(out)
			var runID string
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					cmd.Wait()
					t.Fatalf("child: %v; stderr:\n%s", err, stderr.String())
				}
				var n int
				if _, err := fmt.Sscanf(line, "%s %d", &runID, &n); err != nil {
					t.Fatalf("child printed %q", line)
				}
				if n == killAt {
					break
				}
			}
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			cmd.Wait()
			dir := filepath.Join(runsDir, runID)
			checkWhole(t, dir, true)

			pool, err := pgxpool.New(context.Background(), url)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(pool.Close)
			st := store.New(pool)
			res, err := stepengine.New(st).Run(context.Background(), busyWorkflow(false), stepengine.RunOptions{RunsDir: runsDir, RunID: runID})
			if err != nil {
				t.Fatal(err)
			}
			checkWhole(t, dir, false)
			want := make([]string, busySteps)
			for i := range want {
				want[i] = "OK"
			}
			checkDatabase(t, st, res, want)
			var index []runfiles.ArtifactRecord
			readJSONFile(t, filepath.Join(dir, runfiles.IndexFile), &index, true)
			if len(index) != busySteps {
				t.Errorf("%d artifact records after the rerun, want %d", len(index), busySteps)
			}
		})
	}
}

package runnertest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/runnertest/internal/fixture/job"
)

// The environment of a worker process of the scenario worker-killed: the
// address DeployRemote returned, and what the process's handler does
// (workerHang or workerFinish).
const (
	workerEnv     = "FSMGEN_RUNNERTEST_WORKER"
	workerModeEnv = "FSMGEN_RUNNERTEST_WORKER_MODE"
	workerHang    = "hang"
	workerFinish  = "finish"
)

// WorkerMain is the body of the worker processes of the scenario
// worker-killed, which re-executes the test binary: when this process is
// one, WorkerMain calls work with the address that ProcessBackend's
// DeployRemote returned and the scenario's drivers, and exits, with status
// 2 when work returns an error; otherwise it returns at once. work must
// drive the drivers' runs until the process is killed. A backend that is a
// ProcessBackend calls WorkerMain first in its test binary's TestMain:
//
//	func TestMain(m *testing.M) {
//		runnertest.WorkerMain(func(ctx context.Context, addr string, drivers []runtime.Driver) error { ... })
//		os.Exit(m.Run())
//	}
func WorkerMain(work func(ctx context.Context, addr string, drivers []runtime.Driver) error) {
	addr := os.Getenv(workerEnv)
	if addr == "" {
		return
	}
	d := jobDriver(processWorker{hang: os.Getenv(workerModeEnv) == workerHang})
	if err := work(context.Background(), addr, []runtime.Driver{d}); err != nil {
		fmt.Fprintf(os.Stderr, "runnertest: worker process: %v\n", err)
		os.Exit(2)
	}
	os.Exit(0)
}

// processWorker is Job's handler in a worker process: it says on stdout
// that it was called ("HANDLER <run id>"), then hangs until the process
// is killed, or returns Worked.
type processWorker struct{ hang bool }

func (p processWorker) Working(ctx context.Context, run *runtime.Run) (job.WorkingEvent, error) {
	fmt.Printf("HANDLER %s\n", run.ID)
	if p.hang {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return job.Worked{}, nil
}

// noWorker is Job's handler in a process that must not drive Job's runs.
type noWorker struct{ t *testing.T }

func (n noWorker) Working(_ context.Context, run *runtime.Run) (job.WorkingEvent, error) {
	n.t.Errorf("run %s: the handler was called in the test's process, which DeployRemote gave no worker", run.ID)
	return nil, fmt.Errorf("no worker here")
}

// workerProcess is a worker process the scenario started, and the lines
// its handler printed.
type workerProcess struct {
	cmd   *exec.Cmd
	lines chan string
}

func startWorker(t *testing.T, addr, mode string) *workerProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), workerEnv+"="+addr, workerModeEnv+"="+mode)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start a worker process: %v", err)
	}
	p := &workerProcess{cmd: cmd, lines: make(chan string, 16)}
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "HANDLER ") {
				p.lines <- sc.Text()
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	t.Cleanup(func() { p.kill() })
	return p
}

// kill kills the process (SIGKILL) and reaps it.
func (p *workerProcess) kill() {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	_ = p.cmd.Wait()
}

// handled waits until the process's handler was called for run id.
func (p *workerProcess) handled(s *Scenario, id string) {
	s.T.Helper()
	select {
	case line, ok := <-p.lines:
		if !ok {
			s.T.Fatalf("the worker process ended before its handler was called for run %s", id)
		}
		if line != "HANDLER "+id {
			s.T.Fatalf("worker process: %q, want the handler of run %s", line, id)
		}
	case <-s.Ctx.Done():
		s.T.Fatalf("the worker process's handler was not called for run %s within %v", id, Timeout)
	}
}

// workerKilled: a worker process killed in the middle of a handler, and
// another one started, which calls the handler again and finishes the run;
// its history has each transition once.
func workerKilled(t *testing.T, b Backend) {
	pb, ok := b.(ProcessBackend)
	if !ok {
		t.Skipf("the backend is no ProcessBackend: %s", capabilityReason["ProcessBackend"])
	}
	s := NewScenario(t)
	d, addr := pb.DeployRemote(t, jobDriver(noWorker{t}))
	runs := job.Runs[jobInput](d.Runner())
	first := startWorker(t, addr, workerHang)
	st, err := runs.Start(s.Ctx, s.Key("crash"), jobInput{}, s.Owner)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	if _, err := runs.Work(s.Ctx, st.ID, job.Work{Ok: true}); err != nil {
		t.Fatalf("signal Work: %v", err)
	}
	first.handled(s, st.ID)
	first.kill()

	second := startWorker(t, addr, workerFinish)
	second.handled(s, st.ID)
	got, err := runs.Wait(s.Ctx, st.ID)
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	if got.State != job.StateDone || got.Status != runtime.StatusSucceeded {
		t.Errorf("the run ended in %s (%s), want %s (succeeded)", got.State, got.Status, job.StateDone)
	}
	s.CheckHistory(d, st.ID, []string{toWorking, worked})
	select {
	case line, ok := <-second.lines:
		if ok {
			t.Errorf("the handler was called again after the run finished: %q", line)
		}
	default:
	}
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
)

const gate = `machine Gate {
    initial SHUT
    final OPEN succeeded
    event Push
    guard Unlocked
    guard Strong
    SHUT -> OPEN on Push when Unlocked
    SHUT -> OPEN on Push when Strong
}
`

// TestCheckJSON holds check -json to its exact output, for errors and
// warnings, and to check's exit codes.
func TestCheckJSON(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, dir, "good.fsm", good)
	write(t, dir, "bad.fsm", bad)
	write(t, dir, "gate.fsm", gate)

	code, stdout, stderr := runCmd(t, dir, "", "check", "-json", "good.fsm")
	if diff := cmp.Diff("[]\n", stdout); code != exitOK || stderr != "" || diff != "" {
		t.Errorf("check -json good.fsm: exit %d, stderr %q, stdout (-want +got):\n%s", code, stderr, diff)
	}

	code, stdout, stderr = runCmd(t, dir, "", "check", "-json", "gate.fsm", "bad.fsm")
	if code != exitInput || stderr != "" {
		t.Errorf("check -json gate.fsm bad.fsm: exit %d, stderr %q; want exit 1 and no stderr", code, stderr)
	}
	g, b := filepath.Join(dir, "gate.fsm"), filepath.Join(dir, "bad.fsm")
	want := `[
  {
    "file": "` + g + `",
    "line": 8,
    "column": 5,
    "endLine": 8,
    "endColumn": 9,
    "severity": "warning",
    "message": "every transition from SHUT on Push is guarded: when no guard admits the event, it is rejected; add an unguarded one last if that is not intended"
  },
  {
    "file": "` + b + `",
    "line": 5,
    "column": 11,
    "endLine": 5,
    "endColumn": 15,
    "severity": "error",
    "message": "event Slam is never used"
  },
  {
    "file": "` + b + `",
    "line": 7,
    "column": 5,
    "endLine": 7,
    "endColumn": 10,
    "severity": "error",
    "message": "unknown state CLOSD; did you mean CLOSED?",
    "suggestion": "CLOSED"
  }
]
`
	if diff := cmp.Diff(want, stdout); diff != "" {
		t.Errorf("check -json (-want +got):\n%s", diff)
	}

	// Warnings alone exit 0, as check does.
	if code, _, _ := runCmd(t, dir, "", "check", "-json", "gate.fsm"); code != exitOK {
		t.Errorf("check -json gate.fsm: exit %d, want 0", code)
	}
	// A file that cannot be read: said on stderr, exit 1, the list still
	// printed.
	code, stdout, stderr = runCmd(t, dir, "", "check", "-json", "missing.fsm")
	m := filepath.Join(dir, "missing.fsm")
	if code != exitInput || stdout != "[]\n" || stderr != "fsmgen: open "+m+": no such file or directory\n" {
		t.Errorf("check -json missing.fsm: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// TestLSPCommand runs fsmgen lsp as a process of its own (the test
// binary, as fsmgen) on the pipes an editor gives it: the diagnostics of an
// opened file arrive, and the process ends with the exit code the
// protocol asks for: 0 after shutdown and exit, 1 after exit alone.
func TestLSPCommand(t *testing.T) {
	t.Parallel()
	for _, shutdown := range []bool{true, false} {
		cmd := exec.Command(os.Args[0], "lsp", "-stdio")
		cmd.Env = append(os.Environ(), asMain+"=1")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		// Standard input is a blocking pipe, as most editors give it (Go's
		// own pipes are non-blocking, and a read of them ends when the file
		// is closed, which hides a server that waits for that).
		var fds [2]int
		if err := syscall.Pipe2(fds[:], syscall.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		stdinR, stdin := os.NewFile(uintptr(fds[0]), "stdin"), os.NewFile(uintptr(fds[1]), "stdin")
		cmd.Stdin = stdinR
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		stdinR.Close()
		ctx := t.Context()
		conn := jsonrpc2.NewConn(jsonrpc2.NewStream(pipes{stdout, stdin}))
		diags := make(chan protocol.PublishDiagnosticsParams, 1)
		conn.Go(ctx, func(ctx context.Context, reply jsonrpc2.Replier, req jsonrpc2.Request) error {
			if req.Method() == protocol.MethodTextDocumentPublishDiagnostics {
				var p protocol.PublishDiagnosticsParams
				if err := json.Unmarshal(req.Params(), &p); err != nil {
					t.Error(err)
				}
				diags <- p
			}
			return reply(ctx, nil, nil)
		})
		var init json.RawMessage
		if _, err := conn.Call(ctx, protocol.MethodInitialize, &protocol.InitializeParams{}, &init); err != nil {
			t.Fatal(err)
		}
		if err := conn.Notify(ctx, protocol.MethodTextDocumentDidOpen, &protocol.DidOpenTextDocumentParams{
			TextDocument: protocol.TextDocumentItem{URI: "file:///door.fsm", Version: 1, Text: bad}}); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, d := range (<-diags).Diagnostics {
			got = append(got, d.Message)
		}
		if diff := cmp.Diff([]string{"event Slam is never used", "unknown state CLOSD; did you mean CLOSED?"}, got); diff != "" {
			t.Errorf("diagnostics (-want +got):\n%s", diff)
		}
		want := exitInput
		if shutdown {
			want = exitOK
			if _, err := conn.Call(ctx, protocol.MethodShutdown, nil, nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := conn.Notify(ctx, protocol.MethodExit, nil); err != nil {
			t.Fatal(err)
		}
		err = cmd.Wait()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != want || stderr.String() != "" {
			t.Errorf("shutdown %v: exit %d, stderr %q; want exit %d", shutdown, code, stderr.String(), want)
		}
		conn.Close()
		stdin.Close()
	}
}

// pipes joins the process's standard output and input into one stream.
// Closing it closes standard output only: the connection closes its
// stream when the process's output ends, and an editor that keeps the
// process's input open must not keep the process alive.
type pipes struct {
	io.ReadCloser
	io.Writer
}

func (p pipes) Close() error { return p.ReadCloser.Close() }

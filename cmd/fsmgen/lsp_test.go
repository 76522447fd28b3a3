package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/textproto"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
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

// lspProcess is fsmgen lsp running as a process of its own (the test
// binary, as fsmgen) on the pipes an editor gives it.
type lspProcess struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  *os.File
	out    *textproto.Reader
	stderr *strings.Builder
}

func startLSP(t *testing.T) *lspProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], "lsp", "-stdio")
	cmd.Env = append(os.Environ(), asMain+"=1")
	p := &lspProcess{t: t, cmd: cmd, stderr: &strings.Builder{}}
	cmd.Stderr = p.stderr
	// Standard input is a blocking pipe, as most editors give it (Go's
	// own pipes are non-blocking, and a read of them ends when the file
	// is closed, which hides a server that waits for that).
	var fds [2]int
	if err := syscall.Pipe2(fds[:], syscall.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	stdinR := os.NewFile(uintptr(fds[0]), "stdin")
	p.stdin = os.NewFile(uintptr(fds[1]), "stdin")
	cmd.Stdin = stdinR
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stdinR.Close()
	p.out = textproto.NewReader(bufio.NewReader(stdout))
	t.Cleanup(func() {
		p.stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return p
}

// writeRaw writes bytes to the server's input as they are.
func (p *lspProcess) writeRaw(b string) {
	p.t.Helper()
	if _, err := io.WriteString(p.stdin, b); err != nil {
		p.t.Fatal(err)
	}
}

// send writes a framed message.
func (p *lspProcess) send(v any) {
	p.t.Helper()
	body, err := json.Marshal(v)
	if err != nil {
		p.t.Fatal(err)
	}
	p.writeRaw(fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body))
}

// lspMessage is a message of the server.
type lspMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// read reads the server's next message.
func (p *lspProcess) read() lspMessage {
	p.t.Helper()
	h, err := p.out.ReadMIMEHeader()
	if err != nil {
		p.t.Fatalf("read headers: %v (stderr %q)", err, p.stderr.String())
	}
	n, err := strconv.Atoi(h.Get("Content-Length"))
	if err != nil {
		p.t.Fatalf("Content-Length %q", h.Get("Content-Length"))
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(p.out.R, body); err != nil {
		p.t.Fatal(err)
	}
	var m lspMessage
	if err := json.Unmarshal(body, &m); err != nil {
		p.t.Fatalf("%s: %v", body, err)
	}
	return m
}

func request(id int, method string, params any) any {
	return map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}
}

func notification(method string, params any) any {
	return map[string]any{"jsonrpc": "2.0", "method": method, "params": params}
}

// exit sends exit and returns the process's exit code and standard error.
func (p *lspProcess) exit() (int, string) {
	p.t.Helper()
	p.send(notification(protocol.MethodExit, nil))
	err := p.cmd.Wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), p.stderr.String()
	} else if err != nil {
		p.t.Fatal(err)
	}
	return 0, p.stderr.String()
}

// TestLSPCommand runs fsmgen lsp as a process: the diagnostics of an
// opened file arrive, and the process ends with the exit code the
// protocol asks for: 0 after shutdown and exit, 1 after exit alone.
func TestLSPCommand(t *testing.T) {
	t.Parallel()
	for _, shutdown := range []bool{true, false} {
		p := startLSP(t)
		p.send(request(1, protocol.MethodInitialize, &protocol.InitializeParams{}))
		if m := p.read(); string(m.ID) != "1" || m.Error != nil {
			t.Fatalf("initialize: %+v", m)
		}
		p.send(notification(protocol.MethodTextDocumentDidOpen, &protocol.DidOpenTextDocumentParams{
			TextDocument: protocol.TextDocumentItem{URI: "file:///door.fsm", Version: 1, Text: bad}}))
		m := p.read()
		var diags protocol.PublishDiagnosticsParams
		if err := json.Unmarshal(m.Params, &diags); err != nil || m.Method != protocol.MethodTextDocumentPublishDiagnostics {
			t.Fatalf("%+v: %v", m, err)
		}
		var got []string
		for _, d := range diags.Diagnostics {
			got = append(got, d.Message)
		}
		if diff := cmp.Diff([]string{"event Slam is never used", "unknown state CLOSD; did you mean CLOSED?"}, got); diff != "" {
			t.Errorf("diagnostics (-want +got):\n%s", diff)
		}
		want := exitInput
		if shutdown {
			want = exitOK
			p.send(request(2, protocol.MethodShutdown, nil))
			if m := p.read(); string(m.ID) != "2" || m.Error != nil {
				t.Fatalf("shutdown: %+v", m)
			}
		}
		if code, stderr := p.exit(); code != want || stderr != "" {
			t.Errorf("shutdown %v: exit %d, stderr %q; want exit %d", shutdown, code, stderr, want)
		}
	}
}

// TestLSPSurvivesMalformedInput sends fsmgen lsp frames it cannot take:
// each is answered with a JSON-RPC error and the server goes on, answering
// the next request and exiting with 0 after shutdown and exit.
func TestLSPSurvivesMalformedInput(t *testing.T) {
	t.Parallel()
	frame := func(body string) string { return fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body) }
	type answer struct {
		ID      string
		Code    int
		Message string
	}
	tests := []struct {
		name, raw string
		want      answer
	}{
		{"garbage", "garbage\r\n\r\n", answer{"null", -32700, `parse error: malformed header "garbage"`}},
		{"no Content-Length", "Content-Type: application/json\r\n\r\n", answer{"null", -32700, "parse error: missing Content-Length header"}},
		{"negative Content-Length", "Content-Length: -5\r\n\r\n", answer{"null", -32700, `parse error: invalid Content-Length "-5"`}},
		{"Content-Length not a number", "Content-Length: lots\r\n\r\n", answer{"null", -32700, `parse error: invalid Content-Length "lots"`}},
		{"Content-Length over the limit", "Content-Length: 99999999999\r\n\r\n", answer{}},
		{"long header line", strings.Repeat("X", 10000) + "\r\n\r\n", answer{"null", -32700, "parse error: header line longer than 4096 bytes"}},
		{"not JSON", frame("not json"), answer{"null", -32700, "parse error: the message is not valid JSON"}},
		{"truncated JSON", frame(`{"jsonrpc":"2.0","id":1,"method":"initialize","par`), answer{"null", -32700, "parse error: the message is not valid JSON"}},
		{"batch", frame(`[{"jsonrpc":"2.0","id":1,"method":"shutdown"}]`), answer{"null", -32600, "invalid request: batches are not supported"}},
		{"object id", frame(`{"jsonrpc":"2.0","id":{"a":1},"method":"shutdown"}`), answer{"null", -32600, "invalid request: the id is not a number or a string"}},
		{"no method", frame(`{"jsonrpc":"2.0","id":7}`), answer{"7", -32600, "invalid request: no method"}},
		{"wrong version", frame(`{"jsonrpc":"1.0","id":8,"method":"shutdown"}`), answer{"8", -32600, `invalid request: jsonrpc is not "2.0"`}},
		{"a number", frame(`42`), answer{"null", -32600, "invalid request: want a JSON object"}},
		{"bad params", frame(`{"jsonrpc":"2.0","id":9,"method":"textDocument/hover","params":[1]}`), answer{"9", -32602, "invalid params of textDocument/hover: json: cannot unmarshal array into Go value of type struct { TextDocument protocol.TextDocumentIdentifier \"json:\\\"textDocument\\\"\" }"}},
	}
	p := startLSP(t)
	p.send(request(1, protocol.MethodInitialize, &protocol.InitializeParams{}))
	if m := p.read(); string(m.ID) != "1" || m.Error != nil {
		t.Fatalf("initialize: %+v", m)
	}
	for _, tc := range tests {
		if tc.want.Code == 0 {
			// Over the limit: the body is skipped, so send it.
			p.writeRaw("Content-Length: 67108865\r\n\r\n" + strings.Repeat(" ", 67108865))
			tc.want = answer{"null", -32700, "parse error: message of 67108865 bytes exceeds the limit of 67108864"}
		} else {
			p.writeRaw(tc.raw)
		}
		m := p.read()
		got := answer{ID: string(m.ID)}
		if m.Error != nil {
			got.Code, got.Message = m.Error.Code, m.Error.Message
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: answer (-want +got):\n%s", tc.name, diff)
		}
	}
	p.send(request(2, protocol.MethodShutdown, nil))
	if m := p.read(); string(m.ID) != "2" || m.Error != nil {
		t.Fatalf("shutdown after malformed input: %+v", m)
	}
	if code, stderr := p.exit(); code != exitOK || stderr != "" {
		t.Errorf("exit %d, stderr %q; want exit 0", code, stderr)
	}
}

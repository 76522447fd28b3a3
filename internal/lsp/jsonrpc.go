package lsp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
)

// Code is a JSON-RPC 2.0 error code.
type Code int64

// The error codes the server answers with: JSON-RPC's own and the
// protocol's.
const (
	CodeParseError           Code = -32700
	CodeInvalidRequest       Code = -32600
	CodeMethodNotFound       Code = -32601
	CodeInvalidParams        Code = -32602
	CodeInternalError        Code = -32603
	CodeServerNotInitialized Code = -32002
	CodeRequestFailed        Code = -32803
)

// Error is a JSON-RPC error: what a request that fails is answered with.
type Error struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
}

// Error implements error.
func (e *Error) Error() string { return fmt.Sprintf("jsonrpc2 error %d: %s", e.Code, e.Message) }

func rpcError(code Code, msg string) *Error { return &Error{Code: code, Message: msg} }

// Limits of the base protocol.
const (
	// MaxMessage is the largest Content-Length read (64 MiB: a whole
	// document, escaped as JSON); a larger message is skipped and answered
	// with a parse error.
	MaxMessage = 64 << 20
	// maxHeaderLine is the longest header line read.
	maxHeaderLine = 4096
)

// message is a JSON-RPC 2.0 message as read: a request (method and id), a
// notification (method, no id) or a response (id, result or error).
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// isNotification reports whether m is a notification: it has no id.
func (m *message) isNotification() bool { return len(m.ID) == 0 }

// frameError is a message that could not be read but after which the
// stream goes on: it is answered with a parse error and the next message is
// read.
type frameError struct{ msg string }

func (e *frameError) Error() string { return e.msg }

// readFrame reads one message's body: headers (Content-Length required,
// Content-Type and others ignored) up to a blank line, then the body. A
// malformed header block or a body over MaxMessage is a *frameError, after
// which the reader stands at the next message; other errors end the stream.
func readFrame(r *bufio.Reader) ([]byte, error) {
	length := int64(-1)
	var bad string
	lines := 0
	for {
		line, err := readLine(r)
		if err != nil {
			if errors.Is(err, errLongLine) {
				bad = cmpFirst(bad, "header line longer than "+strconv.Itoa(maxHeaderLine)+" bytes")
				continue
			}
			if errors.Is(err, io.EOF) && lines > 0 {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
		lines++
		if line == "" {
			break
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			bad = cmpFirst(bad, fmt.Sprintf("malformed header %q", truncate(line)))
			continue
		}
		if strings.EqualFold(strings.TrimSpace(name), "Content-Length") {
			n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
			if err != nil || n < 0 {
				bad = cmpFirst(bad, fmt.Sprintf("invalid Content-Length %q", truncate(strings.TrimSpace(value))))
				continue
			}
			length = n
		}
	}
	switch {
	case bad != "":
		return nil, &frameError{bad}
	case length < 0:
		return nil, &frameError{"missing Content-Length header"}
	case length > MaxMessage:
		if _, err := io.CopyN(io.Discard, r, length); err != nil {
			return nil, err
		}
		return nil, &frameError{fmt.Sprintf("message of %d bytes exceeds the limit of %d", length, MaxMessage)}
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, err
	}
	return body, nil
}

func cmpFirst(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

var errLongLine = errors.New("header line too long")

// readLine reads a header line without its CR LF (or LF). A line longer
// than maxHeaderLine is skipped to its end and errLongLine returned.
func readLine(r *bufio.Reader) (string, error) {
	var b []byte
	long := false
	for {
		chunk, err := r.ReadSlice('\n')
		if !long {
			b = append(b, chunk...)
			if len(b) > maxHeaderLine {
				long, b = true, nil
			}
		}
		if err == nil {
			break
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if errors.Is(err, io.EOF) && (len(b) > 0 || long) {
			return "", io.ErrUnexpectedEOF
		}
		return "", err
	}
	if long {
		return "", errLongLine
	}
	return strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r"), nil
}

// parseMessage decodes a body. It returns the error to answer with (and
// the id to answer it to, null when the id is unknown) when the body is
// not a JSON-RPC 2.0 request, notification or response the server takes:
// invalid JSON is a parse error, a batch, an id that is not a number or a
// string, or a missing method an invalid request.
func parseMessage(body []byte) (*message, json.RawMessage, *Error) {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if !json.Valid(trimmed) {
		return nil, nil, rpcError(CodeParseError, "parse error: the message is not valid JSON")
	}
	switch {
	case len(trimmed) > 0 && trimmed[0] == '[':
		return nil, nil, rpcError(CodeInvalidRequest, "invalid request: batches are not supported")
	case len(trimmed) == 0 || trimmed[0] != '{':
		return nil, nil, rpcError(CodeInvalidRequest, "invalid request: want a JSON object")
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &raw); err != nil {
		return nil, nil, rpcError(CodeInvalidRequest, "invalid request: "+err.Error())
	}
	m := &message{}
	id, hasID := raw["id"]
	if hasID {
		if !validID(id) {
			return nil, nil, rpcError(CodeInvalidRequest, "invalid request: the id is not a number or a string")
		}
		m.ID = id
	}
	if err := json.Unmarshal(trimmed, m); err != nil {
		return nil, m.ID, rpcError(CodeInvalidRequest, "invalid request: "+err.Error())
	}
	if m.JSONRPC != "2.0" {
		return nil, m.ID, rpcError(CodeInvalidRequest, `invalid request: jsonrpc is not "2.0"`)
	}
	if m.Method == "" {
		if _, ok := raw["method"]; ok || !hasID || (m.Result == nil && m.Error == nil) {
			return nil, m.ID, rpcError(CodeInvalidRequest, "invalid request: no method")
		}
	}
	return m, m.ID, nil
}

// validID reports whether an id is a JSON number or string.
func validID(id json.RawMessage) bool {
	var v any
	if err := json.Unmarshal(id, &v); err != nil {
		return false
	}
	switch v.(type) {
	case string, float64:
		return true
	}
	return false
}

// writer writes messages framed with a Content-Length header, one at a
// time.
type writer struct {
	mu  sync.Mutex
	out io.Writer
}

func (w *writer) write(v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("lsp: encode: %w", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := fmt.Fprintf(w.out, "Content-Length: %d\r\n\r\n", len(body)); err != nil {
		return err
	}
	_, err = w.out.Write(body)
	return err
}

// notify sends a notification.
func (w *writer) notify(method string, params any) error {
	return w.write(struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		Params  any    `json:"params"`
	}{"2.0", method, params})
}

// reply answers the request id with result, or with err when not nil; a
// nil id is written as null.
func (w *writer) reply(id json.RawMessage, result any, err error) error {
	if id == nil {
		id = json.RawMessage("null")
	}
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			e = rpcError(CodeInternalError, err.Error())
		}
		return w.write(struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   *Error          `json:"error"`
		}{"2.0", id, e})
	}
	return w.write(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  any             `json:"result"`
	}{"2.0", id, result})
}

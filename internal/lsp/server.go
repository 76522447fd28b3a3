package lsp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"

	"go.lsp.dev/protocol"

	"github.com/fsmgen/fsmgen/dsl"
)

// ErrNoShutdown is returned by Serve when the client sent exit without
// asking for a shutdown first; the command exits with 1 then, as the
// protocol asks.
var ErrNoShutdown = errors.New("exit without shutdown")

// Serve runs the language server on one client connection: it reads
// requests from in and writes responses and notifications to out, framed
// as the protocol says (Content-Length headers, JSON-RPC 2.0), until the
// client sends exit, in ends, or ctx is done. It returns nil after a
// shutdown and exit, ErrNoShutdown after an exit alone, and the
// connection's error when reading or writing fails.
//
// Malformed input does not end it: a frame it cannot read (bad headers,
// a body over MaxMessage) or a body that is not JSON is answered with a
// parse error (-32700), and a batch, an id that is neither a number nor a
// string, or a message without a method with an invalid request (-32600),
// each to the id null unless the message's id could be read; then the
// next message is read.
func Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := &server{out: &writer{out: out}, docs: map[protocol.DocumentURI]*document{}}
	q := newQueue()
	// The reader runs ahead of the handler, so that changes to a document
	// that arrive while an earlier one is checked are coalesced. It is not
	// waited for: a read blocked on a terminal or a pipe that is not in
	// non-blocking mode (standard input, often) does not return when its
	// file is closed.
	go s.read(bufio.NewReaderSize(in, 64<<10), q)
	for {
		item, ok := q.pop(ctx)
		if !ok {
			return ctx.Err()
		}
		if item.err != nil {
			if errors.Is(item.err, io.EOF) || errors.Is(item.err, io.ErrClosedPipe) {
				return nil
			}
			return fmt.Errorf("lsp: %w", item.err)
		}
		if err := s.handle(ctx, item.msg); err != nil {
			return fmt.Errorf("lsp: %w", err)
		}
		s.mu.Lock()
		exit, shutdown := s.exit, s.shutdown
		s.mu.Unlock()
		switch {
		case exit && shutdown:
			return nil
		case exit:
			return ErrNoShutdown
		}
	}
}

// read reads messages into q until the stream fails or ends, answering
// those it cannot take itself.
func (s *server) read(r *bufio.Reader, q *queue) {
	for {
		body, err := readFrame(r)
		var fe *frameError
		if errors.As(err, &fe) {
			if err := s.out.reply(nil, nil, rpcError(CodeParseError, "parse error: "+fe.msg)); err != nil {
				q.push(queued{err: err})
				return
			}
			continue
		}
		if err != nil {
			q.push(queued{err: err})
			return
		}
		m, id, rpcErr := parseMessage(body)
		if rpcErr != nil {
			if err := s.out.reply(id, nil, rpcErr); err != nil {
				q.push(queued{err: err})
				return
			}
			continue
		}
		if m.Method == "" {
			continue // a response: the server sends no request
		}
		item := queued{msg: m}
		if m.Method == protocol.MethodTextDocumentDidChange {
			var p struct {
				TextDocument struct {
					URI protocol.DocumentURI `json:"uri"`
				} `json:"textDocument"`
			}
			if json.Unmarshal(m.Params, &p) == nil {
				item.change = p.TextDocument.URI
			}
		}
		q.push(item)
	}
}

// queued is a message read and not handled yet, or the error that ended
// the stream.
type queued struct {
	msg *message
	err error
	// change is the document of a didChange: a later change of it that
	// arrives before this one is handled replaces it.
	change protocol.DocumentURI
}

// queue holds the messages read and not yet handled, in order. A change of
// a document pushed right after another change of the same document
// replaces it: the server sends whole documents, so only the later one
// matters, and an editor that types faster than the server checks costs
// one check and one diagnostics push, not one per keystroke.
type queue struct {
	mu    sync.Mutex
	items []queued
	ready chan struct{}
}

func newQueue() *queue { return &queue{ready: make(chan struct{}, 1)} }

func (q *queue) push(it queued) {
	q.mu.Lock()
	if n := len(q.items); n > 0 && it.change != "" && q.items[n-1].change == it.change {
		q.items[n-1] = it
	} else {
		q.items = append(q.items, it)
	}
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// pop returns the first message, waiting for one; false when ctx is done.
func (q *queue) pop(ctx context.Context) (queued, bool) {
	for {
		q.mu.Lock()
		if len(q.items) > 0 {
			it := q.items[0]
			q.items[0] = queued{}
			q.items = q.items[1:]
			q.mu.Unlock()
			return it, true
		}
		q.mu.Unlock()
		select {
		case <-q.ready:
		case <-ctx.Done():
			return queued{}, false
		}
	}
}

type server struct {
	out *writer

	mu          sync.Mutex
	initialized bool
	shutdown    bool
	exit        bool
	docs        map[protocol.DocumentURI]*document
}

// handle answers one request or notification, in the order they arrive,
// so that a request sees every change sent before it. A notification gets
// no reply, even when it fails.
func (s *server) handle(ctx context.Context, m *message) error {
	result, err := s.dispatchSafely(ctx, m)
	if m.isNotification() {
		return nil
	}
	return s.out.reply(m.ID, result, err)
}

// dispatchSafely is dispatch, a panic turned into an internal error: no
// input ends the server.
func (s *server) dispatchSafely(ctx context.Context, m *message) (result any, err error) {
	defer func() {
		if r := recover(); r != nil {
			result, err = nil, rpcError(CodeInternalError, fmt.Sprintf("internal error in %s: %v", m.Method, r))
		}
	}()
	return s.dispatch(ctx, m)
}

// dispatch answers one message: a request's result or error, nil for a
// notification.
func (s *server) dispatch(ctx context.Context, req *message) (any, error) {
	method := req.Method
	s.mu.Lock()
	initialized, shutdown := s.initialized, s.shutdown
	s.mu.Unlock()
	switch {
	case method == protocol.MethodExit:
		s.mu.Lock()
		s.exit = true
		s.mu.Unlock()
		return nil, nil
	case method == protocol.MethodInitialize:
		if initialized {
			return nil, rpcError(CodeInvalidRequest, "initialize sent twice")
		}
		s.mu.Lock()
		s.initialized = true
		s.mu.Unlock()
		return initializeResult(), nil
	case !initialized:
		if req.isNotification() {
			return nil, nil
		}
		return nil, rpcError(CodeServerNotInitialized, "the server is not initialized")
	case shutdown:
		if req.isNotification() {
			return nil, nil
		}
		return nil, rpcError(CodeInvalidRequest, "the server is shutting down")
	}

	switch method {
	case protocol.MethodInitialized:
		return nil, nil
	case protocol.MethodShutdown:
		s.mu.Lock()
		s.shutdown = true
		s.mu.Unlock()
		return nil, nil
	case protocol.MethodTextDocumentDidOpen:
		var p protocol.DidOpenTextDocumentParams
		if err := decode(req, &p); err != nil {
			return nil, err
		}
		return nil, s.update(ctx, p.TextDocument.URI, p.TextDocument.Version, p.TextDocument.Text)
	case protocol.MethodTextDocumentDidChange:
		var p protocol.DidChangeTextDocumentParams
		if err := decode(req, &p); err != nil || len(p.ContentChanges) == 0 {
			return nil, err
		}
		// The server asks for whole documents: the last change is the text.
		return nil, s.update(ctx, p.TextDocument.URI, p.TextDocument.Version, p.ContentChanges[len(p.ContentChanges)-1].Text)
	case protocol.MethodTextDocumentDidClose:
		var p protocol.DidCloseTextDocumentParams
		if err := decode(req, &p); err != nil {
			return nil, err
		}
		s.mu.Lock()
		delete(s.docs, p.TextDocument.URI)
		s.mu.Unlock()
		// Clear the closed file's diagnostics.
		return nil, s.out.notify(protocol.MethodTextDocumentPublishDiagnostics,
			&protocol.PublishDiagnosticsParams{URI: p.TextDocument.URI, Diagnostics: []protocol.Diagnostic{}})
	case protocol.MethodTextDocumentDidSave:
		return nil, nil
	}

	handler, ok := requests[method]
	if !ok {
		if req.isNotification() {
			return nil, nil
		}
		return nil, rpcError(CodeMethodNotFound, "method not supported: "+method)
	}
	var target struct {
		TextDocument protocol.TextDocumentIdentifier `json:"textDocument"`
	}
	if err := decode(req, &target); err != nil {
		return nil, err
	}
	s.mu.Lock()
	doc := s.docs[target.TextDocument.URI]
	s.mu.Unlock()
	if doc == nil {
		return nil, rpcError(CodeInvalidParams, "document not open: "+string(target.TextDocument.URI))
	}
	result, err := handler(doc, req.Params)
	return result, err
}

func decode(req *message, v any) error {
	if err := json.Unmarshal(req.Params, v); err != nil {
		return rpcError(CodeInvalidParams, fmt.Sprintf("invalid params of %s: %v", req.Method, err))
	}
	return nil
}

// requests are the document requests the server answers, by method: each
// gets the open document and the request's params.
var requests = map[string]func(d *document, params json.RawMessage) (any, error){
	protocol.MethodTextDocumentHover:          withParams((*document).hover),
	protocol.MethodTextDocumentDefinition:     withParams((*document).definition),
	protocol.MethodTextDocumentReferences:     withParams((*document).references),
	protocol.MethodTextDocumentPrepareRename:  withParams((*document).prepareRename),
	protocol.MethodTextDocumentRename:         withParams((*document).rename),
	protocol.MethodTextDocumentCompletion:     withParams((*document).completion),
	protocol.MethodTextDocumentFormatting:     withParams((*document).formatting),
	protocol.MethodTextDocumentDocumentSymbol: withParams((*document).symbols),
	protocol.MethodTextDocumentCodeAction:     withParams((*document).codeActions),
}

// withParams adapts a typed request handler to the table above.
func withParams[P, R any](f func(*document, *P) (R, error)) func(*document, json.RawMessage) (any, error) {
	return func(d *document, raw json.RawMessage) (any, error) {
		p := new(P)
		if err := json.Unmarshal(raw, p); err != nil {
			return nil, rpcError(CodeInvalidParams, fmt.Sprintf("invalid params: %v", err))
		}
		r, err := f(d, p)
		if err != nil {
			return nil, err
		}
		return r, nil
	}
}

func initializeResult() *protocol.InitializeResult {
	return &protocol.InitializeResult{
		Capabilities: protocol.ServerCapabilities{
			TextDocumentSync: &protocol.TextDocumentSyncOptions{
				OpenClose: true,
				Change:    protocol.TextDocumentSyncKindFull,
			},
			CompletionProvider:         &protocol.CompletionOptions{TriggerCharacters: []string{">", " ", "!"}},
			HoverProvider:              true,
			DefinitionProvider:         true,
			ReferencesProvider:         true,
			DocumentSymbolProvider:     true,
			DocumentFormattingProvider: true,
			RenameProvider:             &protocol.RenameOptions{PrepareProvider: true},
			CodeActionProvider:         &protocol.CodeActionOptions{CodeActionKinds: []protocol.CodeActionKind{protocol.QuickFix}},
		},
		ServerInfo: &protocol.ServerInfo{Name: "fsmgen"},
	}
}

// update replaces the text of a document, checks it and publishes its
// diagnostics.
func (s *server) update(ctx context.Context, u protocol.DocumentURI, version int32, text string) error {
	s.mu.Lock()
	old := s.docs[u]
	s.mu.Unlock()
	if old != nil && version < old.version {
		return nil // a stale version: the document has moved on
	}
	d := newDocument(u, version, text)
	s.mu.Lock()
	s.docs[u] = d
	s.mu.Unlock()
	return s.out.notify(protocol.MethodTextDocumentPublishDiagnostics, &protocol.PublishDiagnosticsParams{
		URI:         u,
		Version:     uint32(max(version, 0)),
		Diagnostics: d.lspDiagnostics(),
	})
}

// filename returns the path that positions and messages use for a
// document: the file's path for a file: URI, else the URI's last element.
func filename(u protocol.DocumentURI) string {
	if p, err := url.Parse(string(u)); err == nil && p.Scheme == "file" {
		name := p.Path
		// file:///C:/dir/x.fsm names C:/dir/x.fsm on Windows.
		if len(name) >= 3 && name[0] == '/' && name[2] == ':' && goruntime.GOOS == "windows" {
			name = name[1:]
		}
		return filepath.FromSlash(name)
	}
	return path.Base(string(u))
}

// document is an open .fsm file: its text, what ParsePartial makes of it
// and the diagnostics of dsl.Load, as fsmgen check reports them.
type document struct {
	uri     protocol.DocumentURI
	version int32
	text    string
	// src is the text as the dsl reads it: without a leading byte order
	// mark, which bom records.
	src   []byte
	bom   bool
	lines []int // offsets in text of each line's first byte
	file  *dsl.File
	diags dsl.Diagnostics
}

func newDocument(u protocol.DocumentURI, version int32, text string) *document {
	d := &document{uri: u, version: version, text: text}
	d.bom = strings.HasPrefix(text, "\uFEFF")
	d.src = []byte(strings.TrimPrefix(text, "\uFEFF"))
	d.lines = []int{0}
	for i := 0; i < len(text); i++ {
		if text[i] == '\n' {
			d.lines = append(d.lines, i+1)
		}
	}
	name := filename(u)
	d.file, _ = dsl.ParsePartial(name, []byte(text))
	_, d.diags = dsl.Load(name, []byte(text))
	return d
}

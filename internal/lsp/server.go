package lsp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"sync"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

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
func Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	conn := jsonrpc2.NewConn(jsonrpc2.NewStream(&pipe{in: in, out: out}))
	s := &server{conn: conn, docs: map[protocol.DocumentURI]*document{}, exited: make(chan struct{})}
	conn.Go(ctx, protocol.Handlers(s.handle))
	// After exit, the connection is closed but not waited for: a read
	// blocked on a terminal or a pipe that is not in non-blocking mode
	// (standard input, often) does not return when its file is closed.
	select {
	case <-s.exited:
		conn.Close()
	case <-conn.Done():
	case <-ctx.Done():
		conn.Close()
		return ctx.Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.exit && s.shutdown:
		return nil
	case s.exit:
		return ErrNoShutdown
	}
	if err := conn.Err(); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrClosedPipe) {
		return fmt.Errorf("lsp: %w", err)
	}
	return nil
}

// pipe joins a reader and a writer into the io.ReadWriteCloser that a
// jsonrpc2 stream reads and writes; Close closes whichever of them is a
// Closer.
type pipe struct {
	in  io.Reader
	out io.Writer
}

func (p *pipe) Read(b []byte) (int, error)  { return p.in.Read(b) }
func (p *pipe) Write(b []byte) (int, error) { return p.out.Write(b) }
func (p *pipe) Close() error {
	var errs []error
	if c, ok := p.in.(io.Closer); ok {
		errs = append(errs, c.Close())
	}
	if c, ok := p.out.(io.Closer); ok {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

type server struct {
	conn jsonrpc2.Conn

	mu          sync.Mutex
	initialized bool
	shutdown    bool
	exit        bool
	exited      chan struct{}
	docs        map[protocol.DocumentURI]*document
}

// errRequestFailed is the protocol's RequestFailed code: a well-formed
// request that the server refuses, such as a rename to a name that clashes.
const errRequestFailed jsonrpc2.Code = -32803

// handle answers one request or notification. protocol.Handlers runs it
// for one message at a time, in the order they arrive, so that a request
// sees every change sent before it.
func (s *server) handle(ctx context.Context, reply jsonrpc2.Replier, req jsonrpc2.Request) error {
	// Every message gets a reply, which the connection drops for a
	// notification.
	result, err := s.dispatch(ctx, req)
	return reply(ctx, result, err)
}

// dispatch answers one message: a request's result or error, nil for a
// notification.
func (s *server) dispatch(ctx context.Context, req jsonrpc2.Request) (any, error) {
	method := req.Method()
	s.mu.Lock()
	initialized, shutdown := s.initialized, s.shutdown
	s.mu.Unlock()
	switch {
	case method == protocol.MethodExit:
		s.mu.Lock()
		if !s.exit {
			s.exit = true
			close(s.exited)
		}
		s.mu.Unlock()
		return nil, nil
	case method == protocol.MethodInitialize:
		if initialized {
			return nil, jsonrpc2.NewError(jsonrpc2.InvalidRequest, "initialize sent twice")
		}
		s.mu.Lock()
		s.initialized = true
		s.mu.Unlock()
		return initializeResult(), nil
	case !initialized:
		if isNotification(req) {
			return nil, nil
		}
		return nil, jsonrpc2.NewError(jsonrpc2.ServerNotInitialized, "the server is not initialized")
	case shutdown:
		if isNotification(req) {
			return nil, nil
		}
		return nil, jsonrpc2.NewError(jsonrpc2.InvalidRequest, "the server is shutting down")
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
		return nil, s.conn.Notify(ctx, protocol.MethodTextDocumentPublishDiagnostics,
			&protocol.PublishDiagnosticsParams{URI: p.TextDocument.URI, Diagnostics: []protocol.Diagnostic{}})
	case protocol.MethodTextDocumentDidSave:
		return nil, nil
	}

	handler, ok := requests[method]
	if !ok {
		if isNotification(req) {
			return nil, nil
		}
		return nil, jsonrpc2.NewError(jsonrpc2.MethodNotFound, "method not supported: "+method)
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
		return nil, jsonrpc2.NewError(jsonrpc2.InvalidParams, "document not open: "+string(target.TextDocument.URI))
	}
	result, err := handler(doc, req.Params())
	return result, err
}

func isNotification(req jsonrpc2.Request) bool {
	_, ok := req.(*jsonrpc2.Notification)
	return ok
}

func decode(req jsonrpc2.Request, v any) error {
	if err := json.Unmarshal(req.Params(), v); err != nil {
		return jsonrpc2.NewError(jsonrpc2.InvalidParams, fmt.Sprintf("invalid params of %s: %v", req.Method(), err))
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
			return nil, jsonrpc2.NewError(jsonrpc2.InvalidParams, fmt.Sprintf("invalid params: %v", err))
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
	d := newDocument(u, version, text)
	s.mu.Lock()
	s.docs[u] = d
	s.mu.Unlock()
	return s.conn.Notify(ctx, protocol.MethodTextDocumentPublishDiagnostics, &protocol.PublishDiagnosticsParams{
		URI:         u,
		Version:     uint32(max(version, 0)),
		Diagnostics: d.lspDiagnostics(),
	})
}

// filename returns the path that positions and messages use for a
// document: the file's path for a file: URI, else the URI's last element.
func filename(u protocol.DocumentURI) string {
	if strings.HasPrefix(string(u), uri.FileScheme+"://") {
		return u.Filename()
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

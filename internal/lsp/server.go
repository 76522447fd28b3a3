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
	"slices"
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
	q := newQueue()
	s := &server{out: &writer{out: out}, docs: map[protocol.DocumentURI]*document{}, queue: q}
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
			var p didChangeParams
			if json.Unmarshal(m.Params, &p) == nil && p.TextDocument.URI != "" {
				item.change, item.params = p.TextDocument.URI, &p
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
	// arrives before this one is handled is merged into it.
	change protocol.DocumentURI
	// params are the didChange's, when change is set and they were read.
	params *didChangeParams
}

// didChangeParams are the params of textDocument/didChange. A content
// change without a range is the whole text; go.lsp.dev/protocol's type
// cannot tell it from a change of the range 0:0-0:0.
type didChangeParams struct {
	TextDocument   protocol.VersionedTextDocumentIdentifier `json:"textDocument"`
	ContentChanges []contentChange                          `json:"contentChanges"`
}

// contentChange is one change of a document: the text of Range replaced
// by Text, or the whole text when Range is nil.
type contentChange struct {
	Range *protocol.Range `json:"range,omitempty"`
	Text  string          `json:"text"`
}

// queue holds the messages read and not yet handled, in order. A change of
// a document pushed right after another change of the same document is
// merged into it: one change with the later version and both lists of
// content changes, in order, from the last whole text on. An editor that
// types faster than the server checks then costs one check and one
// diagnostics push, not one per keystroke.
type queue struct {
	mu    sync.Mutex
	items []queued
	ready chan struct{}
}

func newQueue() *queue { return &queue{ready: make(chan struct{}, 1)} }

func (q *queue) push(it queued) {
	q.mu.Lock()
	if n := len(q.items); n > 0 && it.change != "" && q.items[n-1].change == it.change {
		q.items[n-1] = merge(q.items[n-1], it)
	} else {
		q.items = append(q.items, it)
	}
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// merge returns the change of a document a and then b make: b's version,
// a's content changes then b's. A list is kept from its last whole text
// on, which replaces what came before.
func merge(a, b queued) queued {
	if a.params == nil || b.params == nil {
		return b
	}
	changes := append(slices.Clip(a.params.ContentChanges), b.params.ContentChanges...)
	for i := len(changes) - 1; i > 0; i-- {
		if changes[i].Range == nil {
			changes = changes[i:]
			break
		}
	}
	p := &didChangeParams{TextDocument: b.params.TextDocument, ContentChanges: changes}
	raw, err := json.Marshal(p)
	if err != nil {
		return b
	}
	m := *b.msg
	m.Params = raw
	return queued{msg: &m, change: b.change, params: p}
}

// changePending reports whether a change of document u waits in the
// queue: the document's current text is stale then.
func (q *queue) changePending(u protocol.DocumentURI) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.ContainsFunc(q.items, func(it queued) bool { return it.change == u })
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
	out   *writer
	queue *queue

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
		var p didChangeParams
		if err := decode(req, &p); err != nil || len(p.ContentChanges) == 0 {
			return nil, err
		}
		s.mu.Lock()
		old := s.docs[p.TextDocument.URI]
		s.mu.Unlock()
		if old == nil {
			if p.ContentChanges[0].Range != nil {
				return nil, rpcError(CodeInvalidParams, "document not open: "+string(p.TextDocument.URI))
			}
			old = newDocument(p.TextDocument.URI, p.TextDocument.Version, "")
		}
		return nil, s.update(ctx, p.TextDocument.URI, p.TextDocument.Version, old.apply(p.ContentChanges))
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
	doc.analyze()
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
				Change:    protocol.TextDocumentSyncKindIncremental,
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
// diagnostics, unless a later change of the document waits in the queue,
// before the check or after it: the version is stale then, and only the
// latest is checked and published.
func (s *server) update(_ context.Context, u protocol.DocumentURI, version int32, text string) error {
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
	if s.queue.changePending(u) {
		return nil
	}
	d.analyze()
	if s.queue.changePending(u) {
		return nil
	}
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

// document is an open .fsm file: its text, and once analyze has run what
// ParsePartial makes of it and the diagnostics of dsl.Load, as fsmgen
// check reports them.
type document struct {
	uri     protocol.DocumentURI
	version int32
	text    string
	// src is the text as the dsl reads it: without a leading byte order
	// mark, which bom records.
	src      []byte
	bom      bool
	lines    []int // offsets in text of each line's first byte
	file     *dsl.File
	diags    dsl.Diagnostics
	analyzed bool
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
	return d
}

// analyze parses and checks the document, once: the server does it only
// for a version it publishes or answers a request on.
func (d *document) analyze() {
	if d.analyzed {
		return
	}
	d.analyzed = true
	name := filename(d.uri)
	d.file, _ = dsl.ParsePartial(name, []byte(d.text))
	_, d.diags = dsl.Load(name, []byte(d.text))
}

// apply returns the document's text after changes, in order: a change
// without a range is the whole text; a change's range, in the protocol's
// positions (UTF-16 code units, see dslPos), is of the text the changes
// before it left. A position past the end of its line stands for the end
// of the line, one past the last line for the end of the text, and a range
// whose end is before its start is empty.
func (d *document) apply(changes []contentChange) string {
	cur := d
	for _, c := range changes {
		text := c.Text
		if c.Range != nil {
			_, _, start := cur.dslPos(c.Range.Start)
			_, _, end := cur.dslPos(c.Range.End)
			end = max(end, start)
			text = cur.text[:start] + c.Text + cur.text[end:]
		}
		cur = newDocument(d.uri, d.version, text)
	}
	return cur.text
}

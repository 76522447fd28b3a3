package lsp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.lsp.dev/protocol"

	"github.com/fsmgen/fsmgen/dsl"
)

// client is an editor's end of a connection to Serve, over two pipes.
type client struct {
	t   *testing.T
	ctx context.Context
	w   *writer
	// raw writes bytes to the server as they are, unframed.
	raw   io.Writer
	diags chan protocol.PublishDiagnosticsParams
	// orphans receives the responses to the id null: the answers to
	// messages the server could not read.
	orphans chan *message
	// served receives what Serve returned.
	served chan error

	mu      sync.Mutex
	nextID  int
	pending map[string]chan *message
}

func startServer(t *testing.T) *client {
	t.Helper()
	ctx := t.Context()
	serverIn, clientOut := io.Pipe()
	clientIn, serverOut := io.Pipe()
	c := &client{t: t, ctx: ctx, w: &writer{out: clientOut}, raw: clientOut, diags: make(chan protocol.PublishDiagnosticsParams, 64),
		orphans: make(chan *message, 64), served: make(chan error, 1), pending: map[string]chan *message{}}
	go func() {
		err := Serve(ctx, serverIn, serverOut)
		serverOut.Close()
		c.served <- err
	}()
	go func() {
		r := bufio.NewReader(clientIn)
		for {
			body, err := readFrame(r)
			if err != nil {
				return
			}
			var m message
			if err := json.Unmarshal(body, &m); err != nil {
				t.Errorf("the server sent %q: %v", body, err)
				return
			}
			switch {
			case m.Method == protocol.MethodTextDocumentPublishDiagnostics:
				var p protocol.PublishDiagnosticsParams
				if err := json.Unmarshal(m.Params, &p); err != nil {
					t.Errorf("publishDiagnostics: %v", err)
				}
				c.diags <- p
			case string(m.ID) == "null":
				c.orphans <- &m
			default:
				c.mu.Lock()
				ch := c.pending[string(m.ID)]
				delete(c.pending, string(m.ID))
				c.mu.Unlock()
				if ch == nil {
					t.Errorf("a response to no request: %s", body)
					continue
				}
				ch <- &m
			}
		}
	}()
	t.Cleanup(func() {
		clientOut.Close()
		clientIn.Close()
	})
	return c
}

// send sends a request with id (a JSON value) and returns where its
// response arrives.
func (c *client) send(id, method string, params any) chan *message {
	ch := make(chan *message, 1)
	c.mu.Lock()
	c.pending[id] = ch
	c.mu.Unlock()
	if err := c.w.write(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  any             `json:"params,omitempty"`
	}{"2.0", json.RawMessage(id), method, params}); err != nil {
		c.t.Fatalf("%s: %v", method, err)
	}
	return ch
}

func (c *client) call(method string, params, result any) error {
	c.t.Helper()
	c.mu.Lock()
	c.nextID++
	id := strconv.Itoa(c.nextID)
	c.mu.Unlock()
	var m *message
	select {
	case m = <-c.send(id, method, params):
	case <-c.ctx.Done():
		c.t.Fatalf("%s: no response", method)
	}
	if m.Error != nil {
		return m.Error
	}
	if result != nil {
		return json.Unmarshal(m.Result, result)
	}
	return nil
}

func (c *client) mustCall(method string, params, result any) {
	c.t.Helper()
	if err := c.call(method, params, result); err != nil {
		c.t.Fatalf("%s: %v", method, err)
	}
}

func (c *client) notify(method string, params any) {
	c.t.Helper()
	if err := c.w.notify(method, params); err != nil {
		c.t.Fatalf("%s: %v", method, err)
	}
}

// waitDiagnostics waits for the diagnostics of version of uri, skipping
// those of earlier versions and other documents.
func (c *client) waitDiagnostics(uri protocol.DocumentURI, version uint32) []protocol.Diagnostic {
	c.t.Helper()
	for {
		select {
		case p := <-c.diags:
			if p.URI == uri && p.Version == version {
				return p.Diagnostics
			}
		case <-c.ctx.Done():
			c.t.Fatalf("no diagnostics for %s version %d", uri, version)
		}
	}
}

func (c *client) initialize() {
	c.t.Helper()
	var res json.RawMessage
	c.mustCall(protocol.MethodInitialize, &protocol.InitializeParams{}, &res)
	c.notify(protocol.MethodInitialized, &protocol.InitializedParams{})
}

func (c *client) open(uri protocol.DocumentURI, text string) []protocol.Diagnostic {
	c.t.Helper()
	c.notify(protocol.MethodTextDocumentDidOpen, &protocol.DidOpenTextDocumentParams{
		TextDocument: protocol.TextDocumentItem{URI: uri, LanguageID: "fsm", Version: 1, Text: text}})
	return c.waitDiagnostics(uri, 1)
}

func (c *client) change(uri protocol.DocumentURI, version int32, text string) []protocol.Diagnostic {
	c.t.Helper()
	c.notify(protocol.MethodTextDocumentDidChange, &didChangeParams{
		TextDocument:   protocol.VersionedTextDocumentIdentifier{TextDocumentIdentifier: protocol.TextDocumentIdentifier{URI: uri}, Version: version},
		ContentChanges: []contentChange{{Text: text}}})
	return c.waitDiagnostics(uri, uint32(version))
}

func pos(line, char uint32) protocol.Position { return protocol.Position{Line: line, Character: char} }

func rng(l1, c1, l2, c2 uint32) protocol.Range {
	return protocol.Range{Start: pos(l1, c1), End: pos(l2, c2)}
}

func at(uri protocol.DocumentURI, line, char uint32) protocol.TextDocumentPositionParams {
	return protocol.TextDocumentPositionParams{TextDocument: protocol.TextDocumentIdentifier{URI: uri}, Position: pos(line, char)}
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func diff(t *testing.T, what string, want, got any) {
	t.Helper()
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("%s (-want +got):\n%s", what, d)
	}
}

const orderURI = protocol.DocumentURI("file:///work/order.fsm")

// TestSession drives one editor session over the protocol: a typo and its
// diagnostic, its quick fix, and every request the server answers, on
// testdata/order.fsm.
func TestSession(t *testing.T) {
	t.Parallel()
	c := startServer(t)

	var initRes json.RawMessage
	c.mustCall(protocol.MethodInitialize, &protocol.InitializeParams{}, &initRes)
	diff(t, "initialize result", `{"capabilities":{"textDocumentSync":{"openClose":true,"change":2},"completionProvider":{"triggerCharacters":["\u003e"," ","!"]},"hoverProvider":true,"definitionProvider":true,"referencesProvider":true,"documentSymbolProvider":true,"codeActionProvider":{"codeActionKinds":["quickfix"]},"documentFormattingProvider":true,"renameProvider":{"prepareProvider":true}},"serverInfo":{"name":"fsmgen"}}`, string(initRes))
	c.notify(protocol.MethodInitialized, &protocol.InitializedParams{})

	order := readFile(t, "testdata/order.fsm")
	diff(t, "diagnostics of order.fsm", []protocol.Diagnostic{}, c.open(orderURI, order))

	// A typo after two characters outside the Basic Multilingual Plane on
	// its line: the checker counts them as one column each, UTF-16 as two.
	typo := strings.Replace(order, "else PaymentFailed", "else PaymentFaild", 1)
	_, checked := dsl.Load("order.fsm", []byte(typo))
	diff(t, "fsmgen check", "order.fsm:8:96: unknown event PaymentFaild; did you mean PaymentFailed?", dsl.ErrorList(checked).Error())
	typoDiag := protocol.Diagnostic{
		Range:    rng(7, 97, 7, 109),
		Severity: protocol.DiagnosticSeverityError,
		Source:   "fsmgen",
		Message:  "unknown event PaymentFaild; did you mean PaymentFailed?",
	}
	diff(t, "diagnostics after the typo", []protocol.Diagnostic{typoDiag}, c.change(orderURI, 2, typo))

	// The quick fix, asked for at a cursor inside the misspelt name.
	var actions []protocol.CodeAction
	c.mustCall(protocol.MethodTextDocumentCodeAction, &protocol.CodeActionParams{
		TextDocument: protocol.TextDocumentIdentifier{URI: orderURI},
		Range:        rng(7, 100, 7, 100),
		Context:      protocol.CodeActionContext{Diagnostics: []protocol.Diagnostic{typoDiag}},
	}, &actions)
	diff(t, "code actions", []protocol.CodeAction{{
		Title:       "Change PaymentFaild to PaymentFailed",
		Kind:        protocol.QuickFix,
		Diagnostics: []protocol.Diagnostic{typoDiag},
		IsPreferred: true,
		Edit: &protocol.WorkspaceEdit{Changes: map[protocol.DocumentURI][]protocol.TextEdit{
			orderURI: {{Range: rng(7, 97, 7, 109), NewText: "PaymentFailed"}},
		}},
	}}, actions)
	// No fix elsewhere.
	c.mustCall(protocol.MethodTextDocumentCodeAction, &protocol.CodeActionParams{
		TextDocument: protocol.TextDocumentIdentifier{URI: orderURI},
		Range:        rng(2, 0, 2, 0),
	}, &actions)
	diff(t, "code actions away from the typo", []protocol.CodeAction{}, actions)
	diff(t, "diagnostics after the fix", []protocol.Diagnostic{}, c.change(orderURI, 3, order))

	// Hover.
	for _, tc := range []struct {
		name       string
		line, char uint32
		want       *protocol.Hover
	}{
		{"state with a retry policy, from a row", 25, 6, &protocol.Hover{
			Contents: protocol.MarkupContent{Kind: protocol.Markdown, Value: "state **PAYING**\n\nPAYING charges the card.\n\n" +
				"- driven: the runtime calls its handler\n" +
				"- retry: 3 attempts, backoff 1s, factor 4, max 16s, non-retryable \"CARTE_REFUSÉE_💳🚫\"; when retries run out, PaymentFailed fires\n"},
			Range: ptr(rng(25, 4, 25, 10)),
		}},
		{"state with a preset", 8, 14, &protocol.Hover{
			Contents: protocol.MarkupContent{Kind: protocol.Markdown, Value: "state **SHIPPING**\n\n" +
				"- driven: the runtime calls its handler\n" +
				"- retry: the runtime's database policy\n"},
			Range: ptr(rng(8, 12, 8, 20)),
		}},
		{"waiting state", 9, 20, &protocol.Hover{
			Contents: protocol.MarkupContent{Kind: protocol.Markdown, Value: "state **AWAITING**\n\n" +
				"- waits: the runtime parks a run here until an event or a timer moves it\n" +
				"- timer: after 7d fires Timeout\n"},
			Range: ptr(rng(9, 12, 9, 20)),
		}},
		{"initial state", 24, 4, &protocol.Hover{
			Contents: protocol.MarkupContent{Kind: protocol.Markdown, Value: "initial state **NEW**\n\nNEW is where every order starts: 🛒 in the cart.\n\n" +
				"- driven: the runtime calls its handler\n" +
				"- retry: none; its handler is tried once\n"},
			Range: ptr(rng(24, 4, 24, 7)),
		}},
		{"final state", 29, 18, &protocol.Hover{
			Contents: protocol.MarkupContent{Kind: protocol.Markdown, Value: "final state **DONE**\n\n- status: succeeded\n- outcome: \"delivered\"\n"},
			Range:    ptr(rng(29, 16, 29, 20)),
		}},
		{"event", 24, 30, &protocol.Hover{
			Contents: protocol.MarkupContent{Kind: protocol.Markdown, Value: "event **Pay**\n\nPay carries the card's token.\n\nFields:\n- `token` string\n- `amount` \"example.com/money\".Amount\n"},
			Range:    ptr(rng(24, 29, 24, 32)),
		}},
		{"event without payload, from a timer", 9, 40, &protocol.Hover{
			Contents: protocol.MarkupContent{Kind: protocol.Markdown, Value: "event **Timeout**\n\nNo payload.\n"},
			Range:    ptr(rng(9, 36, 9, 43)),
		}},
		{"guard", 26, 41, &protocol.Hover{
			Contents: protocol.MarkupContent{Kind: protocol.Markdown, Value: "guard **Paid**\n\nPaid reports whether the payment went through.\n\n" +
				"Used by:\n- line 26: `PAYING -> SHIPPING on Pay when Paid`\n- line 27: `PAYING -> FAILED on Pay unless Paid`\n"},
			Range: ptr(rng(26, 40, 26, 44)),
		}},
		{"keyword", 24, 24, nil},
	} {
		var got *protocol.Hover
		c.mustCall(protocol.MethodTextDocumentHover, &protocol.HoverParams{TextDocumentPositionParams: at(orderURI, tc.line, tc.char)}, &got)
		diff(t, "hover on "+tc.name, tc.want, got)
	}

	// Definition and references.
	var locs []protocol.Location
	c.mustCall(protocol.MethodTextDocumentDefinition, &protocol.DefinitionParams{TextDocumentPositionParams: at(orderURI, 25, 39)}, &locs)
	diff(t, "definition of Paid", []protocol.Location{{URI: orderURI, Range: rng(22, 10, 22, 14)}}, locs)
	c.mustCall(protocol.MethodTextDocumentDefinition, &protocol.DefinitionParams{TextDocumentPositionParams: at(orderURI, 2, 13)}, &locs)
	diff(t, "definition of the cancel event", []protocol.Location{{URI: orderURI, Range: rng(19, 10, 19, 16)}}, locs)
	c.mustCall(protocol.MethodTextDocumentReferences, &protocol.ReferenceParams{
		TextDocumentPositionParams: at(orderURI, 15, 11), Context: protocol.ReferenceContext{IncludeDeclaration: true}}, &locs)
	diff(t, "references of Pay", []protocol.Location{
		{URI: orderURI, Range: rng(15, 10, 15, 13)},
		{URI: orderURI, Range: rng(24, 29, 24, 32)},
		{URI: orderURI, Range: rng(25, 29, 25, 32)},
		{URI: orderURI, Range: rng(26, 29, 26, 32)},
	}, locs)
	c.mustCall(protocol.MethodTextDocumentReferences, &protocol.ReferenceParams{
		TextDocumentPositionParams: at(orderURI, 30, 30), Context: protocol.ReferenceContext{IncludeDeclaration: false}}, &locs)
	diff(t, "references of Timeout without its declaration", []protocol.Location{
		{URI: orderURI, Range: rng(9, 36, 9, 43)},
		{URI: orderURI, Range: rng(30, 29, 30, 36)},
	}, locs)

	// Rename.
	var prep *protocol.Range
	c.mustCall(protocol.MethodTextDocumentPrepareRename, &protocol.PrepareRenameParams{TextDocumentPositionParams: at(orderURI, 17, 12)}, &prep)
	diff(t, "prepareRename", ptr(rng(17, 10, 17, 17)), prep)
	var edit protocol.WorkspaceEdit
	c.mustCall(protocol.MethodTextDocumentRename, &protocol.RenameParams{TextDocumentPositionParams: at(orderURI, 17, 12), NewName: "Delivered"}, &edit)
	diff(t, "rename of Shipped", protocol.WorkspaceEdit{Changes: map[protocol.DocumentURI][]protocol.TextEdit{orderURI: {
		{Range: rng(17, 10, 17, 17), NewText: "Delivered"},
		{Range: rng(28, 29, 28, 36), NewText: "Delivered"},
		{Range: rng(29, 29, 29, 36), NewText: "Delivered"},
	}}}, edit)
	for _, tc := range []struct {
		line, char uint32
		name       string
		want       string
	}{
		{28, 5, "PAYING", "cannot rename state SHIPPING to PAYING: state PAYING declared twice (first at 8:13)"},
		{15, 11, "pay", "cannot rename event Pay to pay: event name pay must start with an upper-case letter"},
		{22, 11, "9Lives", `cannot rename guard Paid to "9Lives": a name is a letter or _ followed by letters, digits and _`},
		{22, 11, "on", "cannot rename guard Paid to on: guard name on must start with an upper-case letter"},
		{5, 13, "Done", "cannot rename state NEW to Done: state DONE would be named StateDone in Go, which is taken by state Done at 6:13"},
		{2, 0, "X", "there is no state, event or guard to rename here"},
	} {
		err := c.call(protocol.MethodTextDocumentRename, &protocol.RenameParams{TextDocumentPositionParams: at(orderURI, tc.line, tc.char), NewName: tc.name}, &edit)
		var rpcErr *Error
		if !errors.As(err, &rpcErr) {
			t.Errorf("rename to %s: error %v, want a refusal", tc.name, err)
			continue
		}
		diff(t, "refused rename to "+tc.name, &Error{Code: CodeRequestFailed, Message: tc.want}, rpcErr)
	}

	// Formatting: fsmgen fmt's output, as one edit of the whole file.
	const messyURI = protocol.DocumentURI("file:///work/messy.fsm")
	messy := readFile(t, "testdata/messy.fsm")
	diff(t, "diagnostics of messy.fsm", []protocol.Diagnostic{}, c.open(messyURI, messy))
	var edits []protocol.TextEdit
	fmtParams := func(u protocol.DocumentURI) *protocol.DocumentFormattingParams {
		return &protocol.DocumentFormattingParams{TextDocument: protocol.TextDocumentIdentifier{URI: u}, Options: protocol.FormattingOptions{TabSize: 4}}
	}
	c.mustCall(protocol.MethodTextDocumentFormatting, fmtParams(messyURI), &edits)
	diff(t, "formatting messy.fsm", []protocol.TextEdit{{Range: rng(0, 0, 33, 0), NewText: order}}, edits)
	c.mustCall(protocol.MethodTextDocumentFormatting, fmtParams(orderURI), &edits)
	diff(t, "formatting order.fsm", []protocol.TextEdit{}, edits)

	// The outline.
	var syms []protocol.DocumentSymbol
	c.mustCall(protocol.MethodTextDocumentDocumentSymbol, &protocol.DocumentSymbolParams{TextDocument: protocol.TextDocumentIdentifier{URI: orderURI}}, &syms)
	sym := func(name, detail string, kind protocol.SymbolKind, r, sel protocol.Range) protocol.DocumentSymbol {
		return protocol.DocumentSymbol{Name: name, Detail: detail, Kind: kind, Range: r, SelectionRange: sel}
	}
	diff(t, "document symbols", []protocol.DocumentSymbol{{
		Name: "Order", Detail: "machine", Kind: protocol.SymbolKindClass,
		Range: rng(1, 0, 32, 1), SelectionRange: rng(1, 8, 1, 13),
		Children: []protocol.DocumentSymbol{
			sym("NEW", "initial", protocol.SymbolKindEnumMember, rng(5, 4, 5, 15), rng(5, 12, 5, 15)),
			sym("PAYING", "state", protocol.SymbolKindEnumMember, rng(7, 4, 7, 110), rng(7, 12, 7, 18)),
			sym("SHIPPING", "state", protocol.SymbolKindEnumMember, rng(8, 4, 8, 36), rng(8, 12, 8, 20)),
			sym("AWAITING", "state, waits", protocol.SymbolKindEnumMember, rng(9, 4, 9, 43), rng(9, 12, 9, 20)),
			sym("DONE", "final succeeded", protocol.SymbolKindEnumMember, rng(10, 4, 10, 51), rng(10, 12, 10, 16)),
			sym("FAILED", "final failed", protocol.SymbolKindEnumMember, rng(11, 4, 11, 28), rng(11, 12, 11, 18)),
			sym("CANCELLED", "final cancelled", protocol.SymbolKindEnumMember, rng(12, 4, 12, 31), rng(12, 12, 12, 21)),
			sym("Pay", `event { token string; amount "example.com/money".Amount }`, protocol.SymbolKindEvent, rng(15, 4, 15, 69), rng(15, 10, 15, 13)),
			sym("PaymentFailed", "event", protocol.SymbolKindEvent, rng(16, 4, 16, 23), rng(16, 10, 16, 23)),
			sym("Shipped", "event { at time.Time }", protocol.SymbolKindEvent, rng(17, 4, 17, 34), rng(17, 10, 17, 17)),
			sym("Timeout", "event", protocol.SymbolKindEvent, rng(18, 4, 18, 17), rng(18, 10, 18, 17)),
			sym("Cancel", "event { userID string }", protocol.SymbolKindEvent, rng(19, 4, 19, 35), rng(19, 10, 19, 16)),
			sym("Paid", "guard", protocol.SymbolKindFunction, rng(22, 4, 22, 14), rng(22, 10, 22, 14)),
		},
	}}, syms)

	// Shutting down.
	c.mustCall(protocol.MethodShutdown, nil, nil)
	c.notify(protocol.MethodExit, nil)
	select {
	case err := <-c.served:
		if err != nil {
			t.Errorf("Serve after shutdown and exit: %v", err)
		}
	case <-c.ctx.Done():
		t.Fatal("Serve did not return after exit")
	}
}

func ptr[T any](v T) *T { return &v }

// TestCompletion types the last line of a machine one way and another, and
// asks for completions at its end: the file does not parse, and the names
// come from what does.
func TestCompletion(t *testing.T) {
	t.Parallel()
	c := startServer(t)
	c.initialize()
	const uri = protocol.DocumentURI("file:///work/half.fsm")
	head := "machine Half {\n" +
		"    initial A\n" +
		"    // B waits for Go.\n" +
		"    state   B wait\n" +
		"    final   DONE succeeded\n" +
		"    event Go { n int }\n" +
		"    event Stop\n" +
		"    guard Ready\n" +
		"    A -> B on Go when Ready\n"
	states := []protocol.CompletionItem{
		{Label: "A", Kind: protocol.CompletionItemKindEnumMember, Detail: "initial"},
		{Label: "B", Kind: protocol.CompletionItemKindEnumMember, Detail: "state, waits", Documentation: "B waits for Go."},
		{Label: "DONE", Kind: protocol.CompletionItemKindEnumMember, Detail: "final succeeded"},
	}
	events := []protocol.CompletionItem{
		{Label: "Go", Kind: protocol.CompletionItemKindEvent, Detail: "event { n int }"},
		{Label: "Stop", Kind: protocol.CompletionItemKindEvent, Detail: "event"},
	}
	guards := []protocol.CompletionItem{{Label: "Ready", Kind: protocol.CompletionItemKindFunction, Detail: "guard"}}
	var presets []protocol.CompletionItem
	for _, p := range []string{"validation", "database", "externalService", "payment", "background"} {
		presets = append(presets, protocol.CompletionItem{Label: p, Kind: protocol.CompletionItemKindConstant, Detail: "retry policy"})
	}
	kw := func(words ...string) []protocol.CompletionItem { return keywords(words...) }

	diag := c.open(uri, head+"    A -> \n}\n")
	_, checked := dsl.Load("half.fsm", []byte(head+"    A -> \n}\n"))
	diff(t, "fsmgen check", "half.fsm:10:9: syntax error: unexpected end of line, expected a state", dsl.ErrorList(checked).Error())
	diff(t, "diagnostics of a half-typed row", []protocol.Diagnostic{{
		Range: rng(9, 8, 9, 8), Severity: protocol.DiagnosticSeverityError, Source: "fsmgen",
		Message: "syntax error: unexpected end of line, expected a state",
	}}, diag)

	for i, tc := range []struct {
		last string // the line typed, the cursor at its end
		want []protocol.CompletionItem
	}{
		{"    A -> ", states},
		{"    A -> D", states},
		{"    A, ", states},
		{"    A -> DONE on ", append(slices.Clone(events), kw("done")...)},
		{"    A -> DONE on St", append(slices.Clone(events), kw("done")...)},
		{"    B -> DONE on Stop when ", append(slices.Clone(guards), kw("In")...)},
		{"    B -> DONE on Stop when !", append(slices.Clone(guards), kw("In")...)},
		{"    B -> DONE on Stop unless ", append(slices.Clone(guards), kw("In")...)},
		{"    B -> DONE on Stop when In(", states},
		{"    B -> DONE on Stop unless In(D", states},
		{"    B -> DONE on Stop when In(A) ", kw("outcome", "internal")},
		{"    cancel ", events},
		{"    state C after 1h ", events},
		{"    state C retry ", presets},
		{"    state C retry db", presets},
		{"    state C retry 3 ", kw("parallel", "wait", "retry", "after", "entry", "exit", "backoff", "factor", "max", "jitter", "nonretryable", "else")},
		{"    state C ", kw("parallel", "wait", "retry", "after", "entry", "exit")},
		{"    state C entry ", []protocol.CompletionItem{}},
		{"    deep ", kw("history")},
		{"    final C ", kw("succeeded", "failed", "cancelled")},
		{"    A -> DONE ", kw("on", "when", "unless", "internal")},
		{"    A -> DONE on Stop ", kw("when", "unless", "outcome", "internal")},
		{"    ", append(kw("type", "version", "package", "cancel", "initial", "state", "final", "history", "event", "guard", "action", "upgrade"), states...)},
		{"    // A -> ", []protocol.CompletionItem{}},
	} {
		text := head + tc.last + "\n}\n"
		c.change(uri, int32(i+2), text)
		var got protocol.CompletionList
		c.mustCall(protocol.MethodTextDocumentCompletion, &protocol.CompletionParams{
			TextDocumentPositionParams: at(uri, 9, uint32(len(tc.last)))}, &got)
		diff(t, "completion after "+strings.TrimSpace(tc.last), protocol.CompletionList{Items: tc.want}, got)
	}

	// Outside any machine: a machine.
	c.change(uri, 100, head+"}\n\n")
	var got protocol.CompletionList
	c.mustCall(protocol.MethodTextDocumentCompletion, &protocol.CompletionParams{TextDocumentPositionParams: at(uri, 11, 0)}, &got)
	diff(t, "completion outside a machine", protocol.CompletionList{Items: kw("machine")}, got)
}

// TestLifecycle holds the server to the protocol's rules on initialize,
// shutdown and exit.
func TestLifecycle(t *testing.T) {
	t.Parallel()
	t.Run("request before initialize", func(t *testing.T) {
		t.Parallel()
		c := startServer(t)
		var got any
		err := c.call(protocol.MethodTextDocumentHover, &protocol.HoverParams{TextDocumentPositionParams: at(orderURI, 0, 0)}, &got)
		var rpcErr *Error
		if !errors.As(err, &rpcErr) {
			t.Fatalf("hover before initialize: %v, want an error", err)
		}
		diff(t, "error", &Error{Code: CodeServerNotInitialized, Message: "the server is not initialized"}, rpcErr)
	})
	t.Run("document not open", func(t *testing.T) {
		t.Parallel()
		c := startServer(t)
		c.initialize()
		var got any
		err := c.call(protocol.MethodTextDocumentHover, &protocol.HoverParams{TextDocumentPositionParams: at(orderURI, 0, 0)}, &got)
		var rpcErr *Error
		if !errors.As(err, &rpcErr) {
			t.Fatalf("hover on a closed document: %v, want an error", err)
		}
		diff(t, "error", &Error{Code: CodeInvalidParams, Message: "document not open: file:///work/order.fsm"}, rpcErr)
	})
	t.Run("close clears diagnostics", func(t *testing.T) {
		t.Parallel()
		c := startServer(t)
		c.initialize()
		if got := c.open(orderURI, "machine M {\n}\n"); len(got) == 0 {
			t.Fatal("no diagnostics for a machine without states")
		}
		c.notify(protocol.MethodTextDocumentDidClose, &protocol.DidCloseTextDocumentParams{TextDocument: protocol.TextDocumentIdentifier{URI: orderURI}})
		diff(t, "diagnostics after close", []protocol.Diagnostic{}, c.waitDiagnostics(orderURI, 0))
	})
	t.Run("exit without shutdown", func(t *testing.T) {
		t.Parallel()
		c := startServer(t)
		c.initialize()
		c.notify(protocol.MethodExit, nil)
		if err := <-c.served; !errors.Is(err, ErrNoShutdown) {
			t.Errorf("Serve = %v, want ErrNoShutdown", err)
		}
	})
	t.Run("requests after shutdown", func(t *testing.T) {
		t.Parallel()
		c := startServer(t)
		c.initialize()
		c.mustCall(protocol.MethodShutdown, nil, nil)
		var got any
		err := c.call(protocol.MethodTextDocumentHover, &protocol.HoverParams{TextDocumentPositionParams: at(orderURI, 0, 0)}, &got)
		var rpcErr *Error
		if !errors.As(err, &rpcErr) {
			t.Fatalf("hover after shutdown: %v, want an error", err)
		}
		diff(t, "error", &Error{Code: CodeInvalidRequest, Message: "the server is shutting down"}, rpcErr)
		c.notify(protocol.MethodExit, nil)
		if err := <-c.served; err != nil {
			t.Errorf("Serve = %v, want nil", err)
		}
	})
}

// TestRenameAcrossVersions renames a state of an older version that a
// upgrade block of the newer one names: the rule's OLD state follows, and
// the newer version's state of the same name does not.
func TestRenameAcrossVersions(t *testing.T) {
	t.Parallel()
	c := startServer(t)
	c.initialize()
	const uri = protocol.DocumentURI("file:///work/versions.fsm")
	src := `machine OrderV1 {
    type "order"
    initial A
    state   B
    final   DONE succeeded
    event Go
    event Fin
    A -> B    on Go
    B -> DONE on Fin
}

machine Order {
    type "order"
    version 2
    upgrade from 1 {
        B -> B when Go
        B -> B
        default Go.n 0
    }
    initial A
    state   B
    final   DONE succeeded
    event Go { n int }
    event Fin
    A -> B    on Go
    B -> DONE on Fin
}
`
	diff(t, "diagnostics", []protocol.Diagnostic{}, c.open(uri, src))
	var edit protocol.WorkspaceEdit
	c.mustCall(protocol.MethodTextDocumentRename, &protocol.RenameParams{TextDocumentPositionParams: at(uri, 15, 8), NewName: "PACKING"}, &edit)
	diff(t, "rename of OrderV1's B from the upgrade block", protocol.WorkspaceEdit{Changes: map[protocol.DocumentURI][]protocol.TextEdit{uri: {
		{Range: rng(3, 12, 3, 13), NewText: "PACKING"},
		{Range: rng(7, 9, 7, 10), NewText: "PACKING"},
		{Range: rng(8, 4, 8, 5), NewText: "PACKING"},
		{Range: rng(15, 8, 15, 9), NewText: "PACKING"},
		{Range: rng(16, 8, 16, 9), NewText: "PACKING"},
	}}}, edit)
	var locs []protocol.Location
	c.mustCall(protocol.MethodTextDocumentDefinition, &protocol.DefinitionParams{TextDocumentPositionParams: at(uri, 15, 13)}, &locs)
	diff(t, "definition of the rule's NEW state", []protocol.Location{{URI: uri, Range: rng(20, 12, 20, 13)}}, locs)
}

// TestCompletionInUpgrade types the rules of an upgrade block: the older
// version's states start a rule and its events follow when, this
// version's states follow -> and its events default.
func TestCompletionInUpgrade(t *testing.T) {
	t.Parallel()
	c := startServer(t)
	c.initialize()
	const uri = protocol.DocumentURI("file:///work/upgrade.fsm")
	head := `machine OrderV1 {
    type "order"
    initial OLD_A
    final   DONE succeeded
    event OldGo
    OLD_A -> DONE on OldGo
}

machine Order {
    type "order"
    version 2
    event Go { n int }
    upgrade from 1 {
`
	tail := "\n    }\n    initial A\n    final   DONE succeeded\n    A -> DONE on Go\n}\n"
	oldStates := []protocol.CompletionItem{
		{Label: "OLD_A", Kind: protocol.CompletionItemKindEnumMember, Detail: "initial"},
		{Label: "DONE", Kind: protocol.CompletionItemKindEnumMember, Detail: "final succeeded"},
	}
	newStates := []protocol.CompletionItem{
		{Label: "A", Kind: protocol.CompletionItemKindEnumMember, Detail: "initial"},
		{Label: "DONE", Kind: protocol.CompletionItemKindEnumMember, Detail: "final succeeded"},
	}
	kw := func(words ...string) []protocol.CompletionItem { return keywords(words...) }
	for i, tc := range []struct {
		last string
		want []protocol.CompletionItem
	}{
		{"        ", append(oldStates, kw("default")...)},
		{"        OLD_A ", kw("->", "drain")},
		{"        OLD_A -> ", newStates},
		{"        OLD_A -> A ", kw("when", "unless", "timers")},
		{"        OLD_A -> A when ", []protocol.CompletionItem{{Label: "OldGo", Kind: protocol.CompletionItemKindEvent, Detail: "event"}}},
		{"        OLD_A -> A when OldGo ", kw("timers")},
		{"        OLD_A -> A timers ", kw("keep", "restart")},
		{"        default ", []protocol.CompletionItem{{Label: "Go", Kind: protocol.CompletionItemKindEvent, Detail: "event { n int }"}}},
	} {
		if i == 0 {
			c.open(uri, head+tc.last+tail)
		} else {
			c.change(uri, int32(i+1), head+tc.last+tail)
		}
		var got protocol.CompletionList
		c.mustCall(protocol.MethodTextDocumentCompletion, &protocol.CompletionParams{
			TextDocumentPositionParams: at(uri, 13, uint32(len(tc.last)))}, &got)
		diff(t, "completion after "+strings.TrimSpace(tc.last), protocol.CompletionList{Items: tc.want}, got)
	}
}

// TestChangesOfADocumentAreCoalesced holds the queue to its rule: a change
// pushed right after a change of the same document replaces it, and any
// other message keeps the changes before it.
func TestChangesOfADocumentAreCoalesced(t *testing.T) {
	t.Parallel()
	q := newQueue()
	msg := func(method string, version int) queued {
		return queued{msg: &message{Method: method, Params: json.RawMessage(strconv.Itoa(version))}}
	}
	change := func(uri protocol.DocumentURI, version int) queued {
		it := msg(protocol.MethodTextDocumentDidChange, version)
		it.change = uri
		return it
	}
	for v := 2; v <= 10000; v++ {
		q.push(change("file:///a.fsm", v))
	}
	q.push(change("file:///b.fsm", 2))
	q.push(change("file:///b.fsm", 3))
	q.push(msg(protocol.MethodTextDocumentHover, 0))
	q.push(change("file:///b.fsm", 4))
	var got []string
	for range 4 {
		it, ok := q.pop(t.Context())
		if !ok {
			t.Fatal("pop: context done")
		}
		got = append(got, string(it.change)+" "+string(it.msg.Params))
	}
	diff(t, "messages handled", []string{"file:///a.fsm 10000", "file:///b.fsm 3", " 0", "file:///b.fsm 4"}, got)
}

// TestStaleVersionsAreDropped sends a change older than the document: it
// is neither checked nor published, and requests see the newer text.
func TestStaleVersionsAreDropped(t *testing.T) {
	t.Parallel()
	c := startServer(t)
	c.initialize()
	c.open(orderURI, "machine M {\n}\n")
	c.change(orderURI, 5, readFile(t, "testdata/order.fsm"))
	c.notify(protocol.MethodTextDocumentDidChange, &didChangeParams{
		TextDocument:   protocol.VersionedTextDocumentIdentifier{TextDocumentIdentifier: protocol.TextDocumentIdentifier{URI: orderURI}, Version: 3},
		ContentChanges: []contentChange{{Text: "machine Stale {\n}\n"}}})
	var symbols []protocol.DocumentSymbol
	c.mustCall(protocol.MethodTextDocumentDocumentSymbol, &protocol.DocumentSymbolParams{TextDocument: protocol.TextDocumentIdentifier{URI: orderURI}}, &symbols)
	if len(symbols) != 1 || symbols[0].Name != "Order" {
		t.Errorf("symbols after a stale change: %+v, want the machine Order", symbols)
	}
	select {
	case p := <-c.diags:
		t.Errorf("diagnostics published for version %d", p.Version)
	default:
	}
}

func TestFilename(t *testing.T) {
	t.Parallel()
	for in, want := range map[protocol.DocumentURI]string{
		"file:///work/order.fsm":         "/work/order.fsm",
		"file:///work/my%20order%23.fsm": "/work/my order#.fsm",
		"untitled:Untitled-1":            "untitled:Untitled-1",
		"inmemory://model/2/door.fsm":    "door.fsm",
	} {
		if got := filename(in); got != want {
			t.Errorf("filename(%s) = %q, want %q", in, got, want)
		}
	}
}

// TestNested renames, defines, hovers and completes the names of a nested
// machine: states declared inside a composite's block, histories and
// actions.
func TestNested(t *testing.T) {
	t.Parallel()
	c := startServer(t)
	c.initialize()
	const uri = protocol.DocumentURI("file:///work/player.fsm")
	src := `machine Player {
    initial STOPPED wait
    state ACTIVE entry StartClock {
        // PLAYING plays.
        initial PLAYING wait
        state   PAUSED  wait
        deep history LAST
    }
    final OFF succeeded
    // StartClock starts the clock.
    action StartClock
    event Play
    event Pause
    event Stop
    STOPPED -> ACTIVE  on Play
    PLAYING -> PAUSED  on Pause
    PAUSED  -> PLAYING on Pause, Play
    ACTIVE  -> STOPPED on Stop
    STOPPED -> LAST    on Pause
    ACTIVE  -> OFF     when Done
    guard Done
}
`
	diff(t, "diagnostics", []protocol.Diagnostic{}, c.open(uri, src))
	var edit protocol.WorkspaceEdit
	c.mustCall(protocol.MethodTextDocumentRename, &protocol.RenameParams{TextDocumentPositionParams: at(uri, 15, 5), NewName: "RUNNING"}, &edit)
	diff(t, "rename of a child state from a row", protocol.WorkspaceEdit{Changes: map[protocol.DocumentURI][]protocol.TextEdit{uri: {
		{Range: rng(4, 16, 4, 23), NewText: "RUNNING"},
		{Range: rng(15, 4, 15, 11), NewText: "RUNNING"},
		{Range: rng(16, 15, 16, 22), NewText: "RUNNING"},
	}}}, edit)
	var locs []protocol.Location
	c.mustCall(protocol.MethodTextDocumentDefinition, &protocol.DefinitionParams{TextDocumentPositionParams: at(uri, 18, 16)}, &locs)
	diff(t, "definition of a history", []protocol.Location{{URI: uri, Range: rng(6, 21, 6, 25)}}, locs)
	c.mustCall(protocol.MethodTextDocumentDefinition, &protocol.DefinitionParams{TextDocumentPositionParams: at(uri, 2, 24)}, &locs)
	diff(t, "definition of an action", []protocol.Location{{URI: uri, Range: rng(10, 11, 10, 21)}}, locs)
	for _, tc := range []struct {
		line, char uint32
		want       string
	}{
		{15, 5, "initial state **PLAYING**\n\nPLAYING plays.\n"},
		{18, 16, "deep history **LAST**\n\nA row to it enters its composite where the run last left it: the leaf state the run was in; the composite's initial state before it was ever left."},
		{2, 24, "action **StartClock**\n\nStartClock starts the clock.\n\nRun when a state that names it in entry or exit is entered or exited, implemented in Go by the generated Actions interface."},
	} {
		var got protocol.Hover
		c.mustCall(protocol.MethodTextDocumentHover, &protocol.HoverParams{TextDocumentPositionParams: at(uri, tc.line, tc.char)}, &got)
		if !strings.HasPrefix(got.Contents.Value, tc.want) {
			t.Errorf("hover at %d:%d = %q, want it to start with %q", tc.line, tc.char, got.Contents.Value, tc.want)
		}
	}
	text := strings.Replace(src, "    guard Done\n", "    state X entry \n    guard Done\n", 1)
	c.change(uri, 2, text)
	var got protocol.CompletionList
	c.mustCall(protocol.MethodTextDocumentCompletion, &protocol.CompletionParams{TextDocumentPositionParams: at(uri, 20, 18)}, &got)
	diff(t, "completion after entry", protocol.CompletionList{Items: []protocol.CompletionItem{
		{Label: "StartClock", Kind: protocol.CompletionItemKindFunction, Detail: "action", Documentation: "StartClock starts the clock."},
	}}, got)
}

// TestParallelInGuard goes to, hovers and renames a state through the
// In(S) guard of a row of a machine with a parallel state.
func TestParallelInGuard(t *testing.T) {
	t.Parallel()
	c := startServer(t)
	c.initialize()
	const uri = protocol.DocumentURI("file:///work/review.fsm")
	src := `machine Review {
    initial Open parallel {
        state Review {
            initial Pending wait
            state   Approved wait
        }
        state Checks {
            initial Queued wait
            state   Passed wait
        }
    }
    event Approve
    event Pass
    Pending -> Approved on Approve when In(Passed)
    Queued  -> Passed   on Pass
    Passed  -> Queued   on Approve
    Approved -> Pending on Pass
}
`
	diff(t, "diagnostics", []protocol.Diagnostic{}, c.open(uri, src))
	var locs []protocol.Location
	c.mustCall(protocol.MethodTextDocumentDefinition, &protocol.DefinitionParams{TextDocumentPositionParams: at(uri, 13, 44)}, &locs)
	diff(t, "definition of In(Passed)", []protocol.Location{{URI: uri, Range: rng(8, 20, 8, 26)}}, locs)
	var items protocol.CompletionList
	c.mustCall(protocol.MethodTextDocumentCompletion, &protocol.CompletionParams{TextDocumentPositionParams: at(uri, 13, 43)}, &items)
	if len(items.Items) == 0 || items.Items[0].Label != "Open" || items.Items[0].Detail != "initial, parallel" {
		t.Errorf("completion in In( = %+v, want Open, \"initial, parallel\", first", items.Items)
	}
	var hover *protocol.Hover
	c.mustCall(protocol.MethodTextDocumentHover, &protocol.HoverParams{TextDocumentPositionParams: at(uri, 13, 44)}, &hover)
	if hover == nil || hover.Range == nil || *hover.Range != rng(13, 43, 13, 49) {
		t.Errorf("hover on In(Passed) = %+v, want one of Passed at 13:43", hover)
	}
	var edit protocol.WorkspaceEdit
	c.mustCall(protocol.MethodTextDocumentRename, &protocol.RenameParams{TextDocumentPositionParams: at(uri, 13, 44), NewName: "Green"}, &edit)
	diff(t, "rename of Passed from In(Passed)", protocol.WorkspaceEdit{Changes: map[protocol.DocumentURI][]protocol.TextEdit{uri: {
		{Range: rng(8, 20, 8, 26), NewText: "Green"},
		{Range: rng(13, 43, 13, 49), NewText: "Green"},
		{Range: rng(14, 15, 14, 21), NewText: "Green"},
		{Range: rng(15, 4, 15, 10), NewText: "Green"},
	}}}, edit)
}

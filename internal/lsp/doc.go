// Package lsp is the language server of .fsm files that `fsmgen lsp`
// runs: an editor starts it, speaks the Language Server Protocol to it on
// its standard input and output, and gets, for every open .fsm file:
//
//   - diagnostics on every change: every error and warning of
//     `fsmgen check`, with the same messages and positions (lines and
//     columns converted to the protocol's 0-based lines and UTF-16
//     characters), each spanning the name or token it is about;
//   - hover: a state's doc comment, kind, status and outcome, retry policy
//     and timers; an event's doc comment and payload fields; a guard's doc
//     comment and the transition rows that use it;
//   - go to definition and find references, for states, events and guards
//     (names are scoped by machine: two machines of a file may both have a
//     state DONE; a migrate rule's OLD state and its condition's event are
//     the older version's, its NEW state and a default's event the newer
//     one's);
//   - rename of a state, event or guard across the file. A rename that
//     the checker would then reject (the name is taken, it would become
//     the same Go identifier as another name, it is not a name) is refused
//     with the checker's message, and nothing is changed;
//   - completion: state names after -> and in a list of source states,
//     event names after on, cancel, else and a timer's duration, guard
//     names after when, unless and !, retry presets after retry, and the
//     keywords of declarations, state options and row clauses; in a
//     migrate block, the older version's states and events where a rule
//     names them and this version's after -> and default;
//   - formatting, as `fsmgen fmt` does (a file that does not parse is left
//     as it is: its diagnostics say why);
//   - document symbols: each machine with its states, events and guards,
//     for the editor's outline;
//   - a quick fix for every diagnostic that says "did you mean X?": it
//     replaces the misspelt name with X.
//
// A file being typed rarely parses. Diagnostics then are the syntax
// errors, as `fsmgen check` reports them; everything else works on what
// does parse (dsl.ParsePartial): the machines and every declaration and
// row without an error, so that the outline, navigation and completion
// keep working on the rest of the file while a row is half written.
//
// The server keeps whole documents (the client sends the full text on each
// change) and answers one message at a time, in order.
//
// # Protocol library
//
// The protocol's types and its JSON-RPC 2.0 transport come from
// go.lsp.dev/protocol and go.lsp.dev/jsonrpc2, a port of gopls's own
// protocol and jsonrpc2 packages (which gopls keeps internal) published
// as importable modules: LSP 3.16 types generated from the specification,
// and Content-Length framing, cancellation and ordered dispatch. They are
// used at the versions that go together, protocol v0.12.0 with jsonrpc2
// v0.10.0; jsonrpc2's v1 line is a rewrite that the protocol package does
// not build against yet. The alternatives were less fit: tliron/glsp
// carries its own logging framework and a websocket server, and
// sourcegraph/jsonrpc2 has no protocol types, which would have to be
// written by hand. The server answers the methods it supports with its
// own dispatch table, so that it needs none of the methods it does not.
package lsp

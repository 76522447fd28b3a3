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
//     state DONE; an upgrade rule's OLD state and its condition's event are
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
//     upgrade block, the older version's states and events where a rule
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
// The server asks for incremental changes (TextDocumentSyncKind
// Incremental): each change replaces a range, its positions in UTF-16 code
// units as the protocol counts them, of the text the changes before it
// left, or the whole text when it has no range. It keeps whole documents
// and answers one message at a time, in order.
//
// # Protocol library
//
// The JSON-RPC 2.0 layer is the package's own (jsonrpc.go): the base
// protocol's Content-Length framing, message validation and replies, in
// about three hundred lines, so that every malformed input has a defined
// answer. go.lsp.dev/jsonrpc2 v0.10.0 ended the connection on a frame it
// could not read; its v1 line is a rewrite that go.lsp.dev/protocol, whose
// last release is v0.12.0 (2022), does not build against. The LSP types
// still come from go.lsp.dev/protocol: plain structs generated from the
// specification, with no behaviour to maintain.
//
// # Hostile input
//
// A frame with bad headers (no or an invalid Content-Length, a line that
// is not a header or is longer than 4096 bytes), a body over MaxMessage
// (skipped unread) or that is not JSON is answered with a parse error
// (-32700) to the id null; a batch, a body that is not an object, an id
// that is neither a number nor a string, a missing method or a jsonrpc
// other than "2.0" with an invalid request (-32600). The server then reads
// the next message. A panic in a handler is answered with an internal
// error (-32603). Documents are checked under the limits of package dsl
// (dsl.MaxFileSize and the others), in time and memory linear in their
// size.
//
// Messages are read ahead of the handler. A change of a document read
// right after another change of it is merged into it (both lists of
// content changes, the later version), and a version is checked and its
// diagnostics published only when no later change of the document waits,
// before the check or once it is done: a burst of keystrokes costs one
// check and one diagnostics push, for its last version, not one per
// keystroke. A request is answered on the text of every change before it;
// a change older than the document's version is dropped.
package lsp

// Package gen is fsmgen's back end: from a checked dsl.Spec it renders, in
// memory, every file of every machine, and the command line writes them.
//
// For each machine, in a directory named after its Go package:
//
//   - fsm.go: the machine. State and its constants (String, ParseState,
//     text encoding, Terminal, Status, Outcome); one struct per event,
//     sealed under Event, with DecodeEvent; the Guards interface, one
//     method per guard typed by the event it reads; Machine with Fire and
//     one method per event, recording through a runtime.Recorder before
//     applying, refusing with a *runtime.TransitionError; typed views (View,
//     InX) whose methods are exactly the transitions of state X; Handlers,
//     one method per driven state returning one of that state's events, and
//     Dispatch; NewDriver for the runtime's engine; Definition, the table,
//     retry policies and timers as data.
//   - fsm_test.go: the machine described to runtime/fsmtest, which checks
//     the code against the definition (every state, event and guard
//     outcome; recording before applying; final states; paths to every
//     state and through every row; payload decoding; the driver), and
//     tests of the names and views.
//   - diagram.mmd and diagram.dot: a Mermaid stateDiagram-v2 and a
//     Graphviz digraph, guards on the edges, final states marked.
//   - README.md: a page with the diagram and the tables of states,
//     transitions, events and guards.
//
// Output is deterministic: sorted, no time stamps, no absolute paths. Go
// files start with the standard "Code generated ... DO NOT EDIT." line and
// are gofmt-clean, with imports grouped as goimports does. A per-event
// method whose row in the current state is unguarded is, without a
// recorder, a table lookup the compiler inlines into its caller.
package gen

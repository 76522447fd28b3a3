// Package fsmtest checks a generated state machine against its own
// definition: the code the generator wrote (a switch per event, guards,
// the recorder hook, views, handlers) against the transition table it
// wrote as data, which the runtime and the database enforce.
//
// Every package fsmgen generates has a test that describes its machine
// with a Machine and calls Run:
//
//	func TestFSM(t *testing.T) { fsmtest.Run(t, fsmgenMachine()) }
//
// Run fires every event in every state under every combination of the
// outcomes of the guards involved and compares the state after, the error
// and the recorded transition with what the table says; checks that a
// transition whose recording fails is not applied; that final states
// accept nothing (a machine without final states, which never ends, has
// none to check); replays a shortest path from the initial state to every
// state and paths that together take every row; decodes every event from
// its JSON; and fires every row through the machine's runtime.Driver.
// Check does the same and returns the failures, for callers that are not
// tests.
//
// Traces records what the real machine does on event sequences that take
// every row and meet every refusal: a shortest path to each state, then
// each event under each outcome of its guards there, or the state's
// earliest timer. With FSMGEN_TRACES=DIR in the environment (TracesEnv),
// Run writes them to DIR/TYPE.vVERSION.traces.json; fsmgen's export tests
// replay them through XState and an SCXML interpreter, so that an exported
// machine is shown to behave as the generated Go code does.
//
// Clock is a settable clock for tests of code that takes one (the
// WithClock options of the store and the engines): a test moves time with
// Advance instead of sleeping.
package fsmtest

package dsl

import "slices"

// reservedNames are the exported top-level identifiers that the generated
// files of every machine declare whatever its declarations: the package's
// own API (fsm.go) and the generated tests (fsm_test.go). A state, an event
// or a state's event set whose Go name is one of them is an error.
var reservedNames = []string{
	// fsm.go
	"Type", "Version", "State", "Event", "Guards", "Handlers", "Machine", "New",
	"Option", "WithRecorder", "WithState", "ParseState", "States", "Events",
	"Definition", "DecodeEvent", "View", "Fire", "NewDriver",
	// fsm.go of a nested machine (its Machine's methods included)
	"Actions", "Composites", "Settle", "History", "SetHistory", "Enter",
	// runs.go
	"Handle", "Runs", "Snapshot", "Started",
	// fsm_test.go
	"TestFSM", "TestFSMStateNames", "TestFSMViews", "TestFSMSenders", "TestFSMNested",
}

// ReservedNames returns the exported top-level Go identifiers that every
// generated package declares whatever the machine declares; no state, event
// or event set may be named after one of them in Go.
func ReservedNames() []string { return slices.Clone(reservedNames) }

// StateGoNames returns the top-level Go identifiers that the generated
// package declares for state s: its constant (StateX), its typed view (InX)
// and, when the runtime drives s, the interface of the events its handler
// may return (XEvent).
func StateGoNames(s *State) []string {
	names := []string{"State" + s.GoName, "In" + s.GoName}
	if s.Driven() {
		names = append(names, s.GoName+"Event")
	}
	return names
}

// GoNames returns every exported top-level Go identifier that the generated
// package of m declares, and every exported method of its Machine: the
// reserved names, then those of its states and its events, in declaration
// order. The checker rejects a machine in which two of them coincide.
func GoNames(m *Machine) []string {
	names := ReservedNames()
	for _, s := range m.States {
		names = append(names, StateGoNames(s)...)
	}
	for _, s := range m.Composites {
		// A composite has a constant and a view, and no handler.
		names = append(names, StateGoNames(s)[:2]...)
	}
	for _, e := range m.Events {
		names = append(names, e.GoName)
	}
	return names
}

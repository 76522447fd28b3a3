// Package consumer holds no code: its test uses fsmgen the way a service
// in another module does, to prove that the README's instructions work.
//
// The test makes a scratch module outside the repository whose go.mod
// replaces github.com/fsmgen/fsmgen with this checkout, adds fsmgen as a Go
// tool (go get -tool github.com/fsmgen/fsmgen/cmd/fsmgen), writes a .fsm
// file and a //go:generate go tool fsmgen line next to it, runs go
// generate, builds, vets and tests the module, and its test drives the
// generated machine on runtime/store against a real PostgreSQL database
// (one of runtime/pgtest's). It runs with make test, as every test does.
package consumer

// Package podlifecycle holds the machine of machines/specs/podlifecycle and the replay of its
// traces on the generated code and the engine.
package podlifecycle

//go:generate go tool fsmgen podlifecycle.fsm

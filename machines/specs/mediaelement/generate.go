// Package mediaelement holds the machine of machines/specs/mediaelement and the replay of its
// traces on the generated code and the engine.
package mediaelement

//go:generate go tool fsmgen mediaelement.fsm

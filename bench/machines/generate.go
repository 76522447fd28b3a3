// Package machines holds the machines the benchmarks of this directory run:
// the Cycle machine of cycle.fsm, whose generated package is machines/cycle.
package machines

//go:generate go tool fsmgen cycle.fsm

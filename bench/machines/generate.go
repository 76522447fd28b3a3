// Package machines holds the machines the benchmarks of this directory run:
// the Cycle machine of cycle.fsm, whose generated package is machines/cycle,
// and the nested Nest of nest.fsm, machines/nest.
package machines

//go:generate go tool fsmgen cycle.fsm
//go:generate go tool fsmgen nest.fsm

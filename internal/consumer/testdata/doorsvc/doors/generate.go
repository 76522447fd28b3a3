// Package doors keeps the doors of a building.
package doors

//go:generate go tool fsmgen door.fsm

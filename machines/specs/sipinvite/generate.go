// Package sipinvite holds the InviteClient machine of machines/specs and the replay of its
// traces on the generated code and the engine.
package sipinvite

//go:generate go tool fsmgen sipinvite.fsm

// Package deviceauth holds the DeviceAuthorization machine of machines/specs and the replay of its
// traces on the generated code and the engine.
package deviceauth

//go:generate go tool fsmgen deviceauth.fsm

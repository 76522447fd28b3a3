// Package dhcpclient holds the Client machine of machines/specs and the replay of its
// traces on the generated code and the engine.
package dhcpclient

//go:generate go tool fsmgen dhcpclient.fsm

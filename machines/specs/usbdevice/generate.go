// Package usbdevice holds the Device machine of machines/specs and the replay of its
// traces on the generated code and the engine.
package usbdevice

//go:generate go tool fsmgen usbdevice.fsm

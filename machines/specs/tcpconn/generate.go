// Package tcpconn holds the Connection machine of machines/specs and the replay of its
// traces on the generated code and the engine.
package tcpconn

//go:generate go tool fsmgen tcpconn.fsm

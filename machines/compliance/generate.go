// Package compliance is the NYC Application Compliance workflow, which
// enforces the NYC Fair Chance Housing Act (FCHA) state machine on a rental
// application: prequalification, conditional offer, background check
// authorization (a signal awaited for 7 days), background check,
// individualized assessment, and the decision.
//
// The state machine is declared in fcha.fsm; its generated package is fcha.
// This package will hold the workflow built on it: the activities of each
// state with their retry policies and results cached by idempotency key,
// the authorization signal, the evidence recorded at each transition, and
// queries by criteria.
package compliance

//go:generate go tool fsmgen fcha.fsm

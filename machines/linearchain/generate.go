// Package linearchain is the strictly linear workflow engine: instances
// whose steps are fully pre-inserted at start and run one after another in
// step_seq order, claimed by workers with database leases (claim first,
// then execute), moved by their handlers' results (Completed, Waiting,
// Retry, Dead) and woken up by external events.
//
// The two state machines are declared in linear_chain.fsm; their generated
// packages are instance (the workflow instance's status) and step (each
// step's status). This package will hold the engine built on them: start
// with full step pre-insert, the runner's tick (lease recovery, claim,
// execute), result handling, wake-up, and the inbox and outbox.
package linearchain

//go:generate go tool fsmgen linear_chain.fsm

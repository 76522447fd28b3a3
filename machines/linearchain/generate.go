// Package linearchain is the strictly linear workflow engine: instances
// whose steps are fully pre-inserted at start and run one after another in
// step_seq order, claimed by workers with database leases (claim first,
// then execute), moved by their handlers' results (Completed, Waiting,
// Retry, Dead) and woken up by external events.
//
// The two state machines are declared in linear_chain.fsm; their generated
// packages are instance (the workflow instance's status) and step (each
// step's status); fsmgen sql generates from them the guards of the
// workflow_instance and workflow_step status columns (chain/migrations).
// The engine built on them is package chain. This package holds the
// example workflow, order.process (OrderProcess: VALIDATE -> RESERVE ->
// WAIT_PAYMENT -> SHIP -> NOTIFY, waiting for payment.captured), and Demo,
// which the demo (machines/cmd/demo, make demo) runs.
package linearchain

//go:generate go tool fsmgen linear_chain.fsm
//go:generate go tool fsmgen sql -table workflow_instance -column status -machine Instance -o chain/migrations/0002_workflow_instance_status.sql linear_chain.fsm
//go:generate go tool fsmgen sql -table workflow_step -column status -key instance_id,step_seq -machine Step -o chain/migrations/0003_workflow_step_status.sql linear_chain.fsm

// Package stepengine is the step engine: it runs a workflow, an ordered
// list of steps with a name, executing each step at most once, in order,
// and stopping at the first failure.
//
// The state machines are declared in step_engine.fsm; their generated
// packages are step (each step's lifecycle: PENDING, RUNNING, OK, FAILED)
// and run (the run's status: OK or FAILED). This package will hold the
// engine built on them: step execution and StepResult handling, the run
// context and its persistence, the run artifacts on disk (logs.jsonl,
// context.json, run.json, steps.json, error artifacts, the artifact index)
// and the audit export as JSON and CSV.
package stepengine

//go:generate go tool fsmgen step_engine.fsm

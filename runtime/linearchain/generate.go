package linearchain

//go:generate go tool fsmgen linear_chain.fsm
//go:generate go tool fsmgen sql -table workflow_instance -column status -machine Instance -o migrations/0002_workflow_instance_status.sql linear_chain.fsm
//go:generate go tool fsmgen sql -table workflow_step -column status -key instance_id,step_seq -machine Step -o migrations/0003_workflow_step_status.sql linear_chain.fsm

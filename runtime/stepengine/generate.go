package stepengine

//go:generate go tool fsmgen step_engine.fsm

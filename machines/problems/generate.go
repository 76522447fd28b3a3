package problems

//go:generate go tool fsmgen retrieve_or_generate.fsm
//go:generate go tool fsmgen background.fsm

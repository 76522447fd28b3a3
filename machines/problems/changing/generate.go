package changing

//go:generate go tool fsmgen retrieve_or_generate.fsm

package problems

//go:generate go run github.com/fsmgen/fsmgen/cmd/fsmgen retrieve_or_generate.fsm
//go:generate go run github.com/fsmgen/fsmgen/cmd/fsmgen background.fsm

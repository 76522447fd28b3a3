package shop

//go:generate go run github.com/fsmgen/fsmgen/cmd/fsmgen shop.fsm

package subscription

//go:generate go run github.com/fsmgen/fsmgen/cmd/fsmgen subscription.fsm

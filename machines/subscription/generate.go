package subscription

//go:generate go tool fsmgen subscription.fsm

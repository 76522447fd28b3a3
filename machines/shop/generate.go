package shop

//go:generate go tool fsmgen shop.fsm

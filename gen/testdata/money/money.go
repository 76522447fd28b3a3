// Package money is a stand-in for a money package that a machine's events
// may name: gen's tests build the golden packages of everything.fsm
// against it.
package money

// Amount is an amount of money in a currency's smallest unit.
type Amount struct {
	Cents    int64  `json:"cents"`
	Currency string `json:"currency"`
}

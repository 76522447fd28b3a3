// Package problems runs the problem-solving pipeline: the RetrieveOrGenerate
// machine of retrieve_or_generate.fsm, whose generated package is
// problems/retrieveorgenerate.
package problems

//go:generate go run github.com/fsmgen/fsmgen/cmd/fsmgen retrieve_or_generate.fsm

// Command fsmgen generates typed Go state machines from .fsm files.
//
// Usage:
//
//	fsmgen [generate] FILE.fsm...          generate each machine's package, tests and diagrams
//	fsmgen check FILE.fsm...               report errors and warnings, write nothing
//	fsmgen fmt [-l] [-w] [PATH...]         format .fsm files (stdin when no PATH)
//	fsmgen diagram [-format mermaid|dot] [-machine NAME] FILE.fsm
//
// Each machine of FILE.fsm becomes a package in the directory named after
// it, next to FILE.fsm: the machine (fsm.go), its exhaustive tests
// (fsm_test.go), a Mermaid and a Graphviz diagram, and a README.md page. A
// //go:generate line next to the .fsm file runs it:
//
//	//go:generate go run github.com/fsmgen/fsmgen/cmd/fsmgen machine.fsm
//
// Errors are printed as path:line:col: message, every one of them, and
// nothing is written when any input has an error. Warnings (path:line:col:
// warning: message) are printed too, but neither stop generation nor
// change the exit code. Files are written
// atomically and only when their content changes. fsmgen exits with 0 on
// success, 1 when an input has errors and 2 on a usage error.
//
// The files of one run are also checked against each other, by check as by
// generate: two machines may not generate the same package directory, nor
// share a persisted type name and version. A file named twice is read once.
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

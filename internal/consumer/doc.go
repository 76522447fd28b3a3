// Package consumer holds no code: its test uses fsmgen the way a service
// in another module does once fsmgen is published, through go get -tool.
// (The way from a clone, today's, is docs/getting-started.md's, which the
// docs package's TestGettingStarted follows.)
//
// The test makes a scratch module outside the repository, from the files
// of testdata/doorsvc, whose go.mod replaces github.com/fsmgen/fsmgen with
// this checkout. It adds fsmgen as a Go tool (go get -tool
// github.com/fsmgen/fsmgen/cmd/fsmgen), runs go generate on the module's
// //go:generate go tool fsmgen line, builds, vets and tests the module, and
// the module's test drives the generated machine on runtime/store against a
// real PostgreSQL database (one of runtime/pgtest's). Another scratch
// module requires a contrib module alone and builds it, resolving the main
// module through the version the contrib module requires. They run with
// make test, as every test does.
package consumer

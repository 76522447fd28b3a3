//go:build tools

// The code generators this repository runs, and where each one's version
// is pinned. Both are Go tools (go.mod tool directives, Go 1.24 and later),
// and make generate runs both.
//
//   - fsmgen, this module's own command (cmd/fsmgen), is a tool of this
//     module: go.mod's tool directive. The //go:generate lines next to the
//     .fsm files run it as go tool fsmgen, exactly as a module that uses
//     fsmgen does after go get -tool github.com/fsmgen/fsmgen/cmd/fsmgen;
//     bench/go.mod does the same.
//   - sqlc, which writes runtime/internal/dbsqlc from the queries of db/,
//     is pinned in tools/go.mod, a module of its own, by its tool
//     directive; make sqlc runs it as cd tools && go tool sqlc.
//
// sqlc is deliberately not imported here. go mod tidy reads files of every
// build tag, tools included, so a blank import of sqlc in this module would
// list sqlc and its dependencies in go.mod, and every module that requires
// fsmgen would load them into its module graph. Measured on a module that
// imports runtime/store (go list -m all, go mod graph, go.sum after go mod
// tidy, and a fresh module cache after go build and go mod tidy):
//
//	                      list -m all  graph edges  go.sum  go.mod files  download
//	sqlc in tools/go.mod           20           51      34            23    9.5 MB
//	sqlc imported here             56           89      70            59     12 MB
//
// The same 11 module zips are downloaded either way (sqlc's code is never
// built by importers), but their module graph, go.sum and vulnerability
// reports would carry sqlc's 36 modules.
package tools

// Package dbsqlc holds the Go code that sqlc generates from the queries in
// ../queries against the schema in ../migrations. It is for the runtime's own
// use and is not a stable API: its names and types change whenever a query
// does. Regenerate it with `make generate`; do not edit the generated files.
package dbsqlc

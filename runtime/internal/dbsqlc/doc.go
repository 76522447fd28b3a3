// Package dbsqlc holds the Go code that sqlc generates from the queries in
// db/queries against the schema in db/migrations. It is internal to the
// runtime: its names and types change whenever a query does. Regenerate it
// with `make generate`; do not edit the generated files.
package dbsqlc

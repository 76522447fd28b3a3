// Package changing is RetrieveOrGenerate in the middle of the change that
// docs/changing-a-machine.md walks through: version 2 splits
// INDEXING into EMBEDDING (compute the solution's embedding) and INDEXING
// (upsert it), and detects the language of normalized media; version 1 is
// kept beside it in the same retrieve_or_generate.fsm, as
// RetrieveOrGenerateV1, while runs of it live, and version 2 declares how
// they move ("upgrade from 1 { ... }"). The generated packages are
// retrieveorgenerate (version 2) and retrieveorgeneratev1; the demo keeps
// running machines/problems, version 1. The test runs the change from the
// first v1 run to the drained version 1 on a real PostgreSQL.
package changing

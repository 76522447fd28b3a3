// Package version holds the version of fsmgen, the one place it is written:
// fsmgen writes it in the header of every Go and SQL file it generates, and
// fsmgen -version and fsmctl version print it.
package version

// Version is the version of the module github.com/fsmgen/fsmgen, as it is
// tagged (vX.Y.Z, see docs/releasing.md). It is the version of the latest
// release section of CHANGELOG.md; a test holds the two together.
const Version = "v0.2.0"

// Package repocheck holds no code: its tests check what the repository
// tracks, as make test runs them. No tracked file is larger than 1 MB
// (MaxFileSize) or a built executable (ELF, Mach-O, PE or a #! script is
// fine, a binary is not), and the VS Code extension ships the repository's
// LICENSE. They need a git checkout and are skipped outside one (a module
// downloaded from a proxy).
package repocheck

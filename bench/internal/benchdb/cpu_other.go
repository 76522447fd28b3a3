//go:build !linux

package benchdb

// serverCPU reports false: the server's processor time is read from
// Linux's /proc only.
func serverCPU(int) (float64, bool) { return 0, false }

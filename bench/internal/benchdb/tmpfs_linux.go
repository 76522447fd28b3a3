package benchdb

import "syscall"

// onTmpFS reports whether dir is on a tmpfs, where fsync is free.
func onTmpFS(dir string) bool {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return false
	}
	return st.Type == 0x01021994 // TMPFS_MAGIC
}

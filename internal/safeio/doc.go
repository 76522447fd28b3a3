// Package safeio reads and writes the files the commands are pointed at,
// which may be anything: a device, a FIFO, a symbolic link, a file of any
// size.
//
// ReadFile reads regular files only (a FIFO, a device or a directory is
// refused without blocking on it) and at most a given number of bytes:
// more is ErrTooLarge, so /dev/zero or a huge file cannot exhaust memory.
//
// WriteFile replaces a file whole: it writes a temporary file in the same
// directory, syncs it, gives it the mode of the file it replaces (or the
// mode asked for a new file) and renames it over the target, then syncs
// the directory. A reader sees the old content or the new, never part of
// it. A target that exists and is not a regular file (a symbolic link, a
// device, a FIFO, a directory) is refused with ErrNotRegular rather than
// replaced.
package safeio

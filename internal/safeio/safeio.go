package safeio

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// ErrNotRegular is the error of a path that is not a regular file.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is the error of a file larger than the limit it is read with.
var ErrTooLarge = errors.New("file too large")

// ReadFile reads the regular file name, at most limit bytes. Anything else
// than a regular file (after following symbolic links) is ErrNotRegular,
// found without reading from it; a larger file is ErrTooLarge.
func ReadFile(name string, limit int64) ([]byte, error) {
	// O_NONBLOCK: opening a FIFO with no writer must not block; the file
	// is refused below anyway.
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: name, Err: ErrNotRegular}
	}
	return ReadAll(name, f, limit)
}

// ReadAll reads r (a file or standard input named name) to its end, at most
// limit bytes; more is ErrTooLarge.
func ReadAll(name string, r io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit)}
	}
	return data, nil
}

// WriteFile replaces name with data crash-safely: through a temporary file
// in the same directory, synced and renamed over name, the directory synced
// after. An existing name keeps its mode; a new one gets perm. An existing
// name that is not a regular file is ErrNotRegular, and left as it is.
func WriteFile(name string, data []byte, perm fs.FileMode) error {
	info, err := os.Lstat(name)
	switch {
	case err == nil && !info.Mode().IsRegular():
		return &fs.PathError{Op: "write", Path: name, Err: ErrNotRegular}
	case err == nil:
		perm = info.Mode().Perm()
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	dir := filepath.Dir(name)
	f, err := os.CreateTemp(dir, "."+filepath.Base(name)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Chmod(perm); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, name); err != nil {
		return err
	}
	ok = true
	return SyncDir(dir)
}

// SyncDir fsyncs a directory, so that the entries created, renamed or
// removed in it survive a crash of the machine.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

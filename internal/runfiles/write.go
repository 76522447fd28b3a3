package runfiles

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFile writes data to name crash-safely: to a temporary file in the
// same directory, synced, then renamed over name, and the directory synced.
// A reader sees the previous content or data, never part of data; after a
// crash at any point, name is whole (old or new) and at most a temporary
// file named .name.tmp-* is left behind, which the next write of name
// does not trip on.
func WriteFile(name string, data []byte) error {
	dir := filepath.Dir(name)
	f, err := os.CreateTemp(dir, "."+filepath.Base(name)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
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
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := f.Chmod(0o644); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("write %s: sync: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := os.Rename(tmp, name); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
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

// WriteJSON encodes v with EncodeJSON and writes it to name with WriteFile.
func WriteJSON(name string, v any) error {
	data, err := EncodeJSON(v)
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return WriteFile(name, data)
}

// AppendArtifact adds rec to the artifact index of the run directory
// runDir (artifacts/index.json), creating it when absent. The index only
// grows: records already there are kept as they are, and rec goes last; a
// record with the same name as an earlier one is appended too (the index is
// a log of what was produced). The index is rewritten crash-safely, so it
// is always a whole JSON array. Callers serialise their appends to one run.
func AppendArtifact(runDir string, rec ArtifactRecord) error {
	name := filepath.Join(runDir, filepath.FromSlash(IndexFile))
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return fmt.Errorf("artifact index: %w", err)
	}
	var index []ArtifactRecord
	data, err := os.ReadFile(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("artifact index: %w", err)
	default:
		if err := json.Unmarshal(data, &index); err != nil {
			return fmt.Errorf("artifact index %s: corrupt: %w", name, err)
		}
	}
	if rec.Metadata == nil {
		rec.Metadata = map[string]any{}
	}
	index = append(index, rec)
	return WriteJSON(name, index)
}

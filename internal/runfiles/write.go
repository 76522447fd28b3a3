package runfiles

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/fsmgen/fsmgen/internal/safeio"
)

// WriteFile writes data to name crash-safely with safeio.WriteFile: to a
// temporary file in the same directory, synced, then renamed over name,
// and the directory synced. A reader sees the previous content or data,
// never part of data; after a crash at any point, name is whole (old or
// new) and at most a temporary file named .name.tmp-* is left behind,
// which the next write of name does not trip on. An existing name keeps
// its mode; one that is not a regular file (a symbolic link, a device) is
// refused with safeio.ErrNotRegular.
func WriteFile(name string, data []byte) error {
	if err := safeio.WriteFile(name, data, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", name, cause(err))
	}
	return nil
}

// cause strips the operation and path an *fs.PathError repeats.
func cause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
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
	data, err := safeio.ReadFile(name, MaxFileSize)
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

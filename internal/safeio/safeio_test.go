package safeio_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/fsmgen/fsmgen/internal/safeio"
)

func TestWriteFileRefusesWhatIsNotARegularFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("kept"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// The FIFO stands for a device: a test must never risk replacing a
	// real one, such as /dev/null, of the machine it runs on.
	for _, name := range []string{link, fifo, dir} {
		err := safeio.WriteFile(name, []byte("new"), 0o644)
		if want := "write " + name + ": not a regular file"; err == nil || err.Error() != want || !errors.Is(err, safeio.ErrNotRegular) {
			t.Errorf("WriteFile(%s) = %v, want %s", name, err, want)
		}
	}
	if info, err := os.Lstat(link); err != nil || info.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v %v", info, err)
	}
	if info, err := os.Lstat(fifo); err != nil || info.Mode()&fs.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced: %v %v", info, err)
	}
	if b, _ := os.ReadFile(target); string(b) != "kept" {
		t.Errorf("the link's target holds %q", b)
	}
}

func TestWriteFileKeepsTheMode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	name := filepath.Join(dir, "secret")
	if err := os.WriteFile(name, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := safeio.WriteFile(name, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(name); string(b) != "new" || info.Mode().Perm() != 0o600 {
		t.Errorf("after WriteFile: %q, mode %v; want new, -rw-------", b, info.Mode().Perm())
	}
	fresh := filepath.Join(dir, "fresh")
	if err := safeio.WriteFile(fresh, []byte("x"), 0o640); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(fresh); err != nil || info.Mode().Perm() != 0o640 {
		t.Errorf("a new file: %v %v, want -rw-r-----", info, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("%d entries in the directory, want 2 (no temporary file left)", len(entries))
	}
}

func TestReadFileRefusesDevicesFIFOsAndLargeFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, []byte(strings.Repeat("x", 11)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, want string }{
		{"/dev/zero", "read /dev/zero: not a regular file"},
		{fifo, "read " + fifo + ": not a regular file"}, // no writer: it must not block
		{dir, "read " + dir + ": not a regular file"},
		{big, "read " + big + ": file too large: more than 10 bytes"},
	} {
		_, err := safeio.ReadFile(tc.name, 10)
		if err == nil || err.Error() != tc.want {
			t.Errorf("ReadFile(%s) = %v, want %s", tc.name, err, tc.want)
		}
	}
	if b, err := safeio.ReadFile(big, 11); err != nil || len(b) != 11 {
		t.Errorf("ReadFile at the limit = %d bytes, %v", len(b), err)
	}
}

package repocheck

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// MaxFileSize is the largest file the repository may track: 1 MB.
const MaxFileSize = 1 << 20

// problems lists the tracked files of the git work tree at root that are
// larger than limit bytes or are built executables, one line each, in
// git's order. It returns errNotGit outside a git work tree.
func problems(root string, limit int64) ([]string, error) {
	cmd := exec.Command("git", "ls-files", "-z", "--cached")
	cmd.Dir = root
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if strings.Contains(stderr.String(), "not a git repository") {
			return nil, errNotGit
		}
		return nil, fmt.Errorf("git ls-files in %s: %w: %s", root, err, stderr.Bytes())
	}
	var out []string
	for _, name := range strings.Split(strings.TrimSuffix(stdout.String(), "\x00"), "\x00") {
		if name == "" {
			continue
		}
		p := filepath.Join(root, filepath.FromSlash(name))
		fi, err := os.Lstat(p)
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted in the work tree, not yet in the index
		}
		if err != nil {
			return nil, err
		}
		if !fi.Mode().IsRegular() {
			continue
		}
		if fi.Size() > limit {
			out = append(out, fmt.Sprintf("%s: %d bytes, over the limit of %d", name, fi.Size(), limit))
		}
		if kind, err := executable(p); err != nil {
			return nil, err
		} else if kind != "" {
			out = append(out, fmt.Sprintf("%s: a built %s executable", name, kind))
		}
	}
	return out, nil
}

var errNotGit = errors.New("not a git work tree")

// executable names the format of the built executable at p by its magic
// number, or returns "" when it is not one.
func executable(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	head := make([]byte, 4)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return "", err
	}
	head = head[:n]
	switch {
	case bytes.HasPrefix(head, []byte("\x7fELF")):
		return "ELF", nil
	case bytes.Equal(head, []byte{0xcf, 0xfa, 0xed, 0xfe}), bytes.Equal(head, []byte{0xce, 0xfa, 0xed, 0xfe}), bytes.Equal(head, []byte{0xca, 0xfe, 0xba, 0xbe}):
		return "Mach-O", nil
	case bytes.HasPrefix(head, []byte("MZ")):
		return "PE", nil
	}
	return "", nil
}

// root is the repository's root, two directories up.
func root(t *testing.T) string {
	t.Helper()
	r, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestTrackedFiles fails on any tracked file over 1 MB or built
// executable: build outputs belong in .gitignore, data in a release.
func TestTrackedFiles(t *testing.T) {
	got, err := problems(root(t), MaxFileSize)
	if errors.Is(err, errNotGit) {
		t.Skip("not a git checkout")
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(got) > 0 {
		t.Errorf("the repository tracks files it should not (remove them with git rm --cached and ignore them):\n%s", strings.Join(got, "\n"))
	}
}

// The check finds a file one byte over the limit and a built executable
// (this test's own binary) in a repository of its own, and neither a file
// at the limit nor a script.
func TestProblemsFindsBigFilesAndExecutables(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"big.bin":      bytes.Repeat([]byte("x"), MaxFileSize+1),
		"limit.txt":    bytes.Repeat([]byte("x"), MaxFileSize),
		"cmd/tool":     bin[:64],
		"run.sh":       []byte("#!/bin/sh\necho ok\n"),
		"dir/small.go": []byte("package dir\n"),
	}
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	got, err := problems(dir, MaxFileSize)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"big.bin: 1048577 bytes, over the limit of 1048576",
		"cmd/tool: a built ELF executable",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}

	if _, err := problems(t.TempDir(), MaxFileSize); !errors.Is(err, errNotGit) {
		t.Errorf("problems outside a git work tree: %v, want errNotGit", err)
	}
}

// The VS Code extension is packaged with its license (vsce reads the
// LICENSE beside its package.json): the repository's.
func TestVSCodeExtensionLicense(t *testing.T) {
	want, err := os.ReadFile(filepath.Join(root(t), "LICENSE"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(root(t), "editors", "vscode", "LICENSE"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("editors/vscode/LICENSE differs from LICENSE: cp LICENSE editors/vscode/ (-want +got):\n%s", diff)
	}
}

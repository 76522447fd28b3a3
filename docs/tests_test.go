package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// testName is a test's name as a page gives it, alone or as the start of a
// go test -run pattern.
var testName = regexp.MustCompile(`\bTest[A-Z][A-Za-z0-9_]*`)

// testFunc is a test function's declaration.
var testFunc = regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]*)\(`)

// tests returns the names of the test functions of every module of the
// repository.
func tests(t *testing.T) []string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && (d.Name() == "node_modules" || d.Name() == ".git"):
			return filepath.SkipDir
		case d.IsDir() || !strings.HasSuffix(p, "_test.go"):
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range testFunc.FindAllStringSubmatch(string(src), -1) {
			names = append(names, m[1])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestNamedTestsExist holds the documentation's claims to their evidence:
// every test a page names (a claim's proof, a go test -run pattern) is a
// test function of the repository, or the start of one's name.
func TestNamedTestsExist(t *testing.T) {
	have := tests(t)
	if len(have) < 100 {
		t.Fatalf("found %d test functions; the walk no longer finds them", len(have))
	}
	for _, name := range pages(t) {
		src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range testName.FindAllString(string(src), -1) {
			if !slices.ContainsFunc(have, func(h string) bool { return strings.HasPrefix(h, n) }) {
				t.Errorf("%s names %s, which no test of the repository is (or starts with)", name, n)
			}
		}
	}
}

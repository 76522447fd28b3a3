package dsl

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzFormat checks, for every input that parses, that Format does not
// panic, that its output parses to the same tree and keeps every comment,
// that it is laid out by the rules, and that formatting it again changes
// nothing. The corpus starts with the .fsm files of testdata and machines
// and the inputs of TestFormat.
func FuzzFormat(f *testing.F) {
	for _, tc := range formatCases {
		f.Add([]byte(tc.src))
	}
	for _, root := range []string{"testdata", filepath.Join("..", "machines")} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".fsm") {
				return err
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			f.Add(src)
			return nil
		})
		if err != nil && !os.IsNotExist(err) {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		if _, err := Parse("fuzz.fsm", src); err != nil {
			return
		}
		checkFormat(t, "fuzz.fsm", src)
	})
}

// FuzzLoad checks that checking any input, and parsing it for an editor,
// neither panics nor reports a nil Spec without an error.
func FuzzLoad(f *testing.F) {
	for _, tc := range formatCases {
		f.Add([]byte(tc.src))
	}
	f.Add([]byte(nestedPlayer))
	f.Fuzz(func(t *testing.T, src []byte) {
		spec, diags := Load("fuzz.fsm", src)
		if (spec == nil) != diags.HasErrors() {
			t.Fatalf("spec nil = %v, HasErrors = %v", spec == nil, diags.HasErrors())
		}
		if f, _ := ParsePartial("fuzz.fsm", src); f != nil {
			Refs(f)
		}
	})
}

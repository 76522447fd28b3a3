package dsl

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// grammarKeywords returns the words the grammar reserves: the quoted
// literals of its EBNF that are words, sorted.
func grammarKeywords() []string {
	var words []string
	for _, m := range regexp.MustCompile(`"([A-Za-z]+)"`).FindAllStringSubmatch(fsmParser.String(), -1) {
		words = append(words, m[1])
	}
	slices.Sort(words)
	return slices.Compact(words)
}

// TestLanguageReference holds the language's two documents to the
// grammar: the keyword table of docs/language.md has a row for every word
// the grammar reserves, and none for a word it does not; and the package
// documentation (doc.go) names each of them.
func TestLanguageReference(t *testing.T) {
	want := grammarKeywords()
	if len(want) < 30 {
		t.Fatalf("the grammar reserves %d words: %v; the EBNF is no longer read right", len(want), want)
	}

	ref, err := os.ReadFile(filepath.Join("..", "docs", "language.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(ref), "\n## Keywords\n")
	table, _, _ = strings.Cut(table, "\n## ")
	if !ok {
		t.Fatal("docs/language.md has no ## Keywords section")
	}
	var got []string
	for line := range strings.SplitSeq(table, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || !strings.Contains(cells[1], "`") {
			continue
		}
		for _, m := range regexp.MustCompile("`([A-Za-z]+)`").FindAllStringSubmatch(cells[1], -1) {
			got = append(got, m[1])
		}
	}
	slices.Sort(got)
	if diff := cmp.Diff(want, slices.Compact(got)); diff != "" {
		t.Errorf("docs/language.md's keyword table against the grammar's words (-grammar +table):\n%s", diff)
	}

	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		if !regexp.MustCompile(`\b` + w + `\b`).Match(doc) {
			t.Errorf("doc.go does not name the keyword %s", w)
		}
	}
}

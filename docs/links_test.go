package docs

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// link is a Markdown link's target: ](TARGET).
var link = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// heading is a Markdown heading line.
var heading = regexp.MustCompile(`(?m)^#{1,6}\s+(.+?)\s*$`)

// anchor returns the anchor GitHub gives a heading: lower case, without
// punctuation but hyphens and underscores, spaces turned into hyphens.
func anchor(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// inlineCode is a code span of one line.
var inlineCode = regexp.MustCompile("`[^`\n]*`")

// prose returns a Markdown page without its code blocks, their lines
// blank.
func prose(name string, src []byte) (string, error) {
	bs, err := parseBlocks(name, src)
	if err != nil {
		return "", err
	}
	lines := strings.Split(string(src), "\n")
	for _, b := range bs {
		for i := b.line; i < b.line+strings.Count(b.text, "\n") && i < len(lines); i++ {
			lines[i] = ""
		}
	}
	return strings.Join(lines, "\n"), nil
}

// anchors returns the anchors of a Markdown page's headings.
func anchors(name string, src []byte) (map[string]bool, error) {
	text, err := prose(name, src)
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool)
	for _, m := range heading.FindAllStringSubmatch(text, -1) {
		out[anchor(m[1])] = true
	}
	return out, nil
}

// TestLinks checks every relative link of the documentation: the file or
// directory it names exists, and so does the heading its #anchor names in
// a Markdown page.
func TestLinks(t *testing.T) {
	for _, name := range pages(t) {
		src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
		if err != nil {
			t.Fatal(err)
		}
		text, err := prose(name, src)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(inlineCode.ReplaceAllString(text, ""), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			p := name
			if file != "" {
				p = path.Join(path.Dir(name), file)
			}
			data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
			if err != nil {
				if _, serr := os.Stat(filepath.Join(root, filepath.FromSlash(p))); serr == nil && frag == "" {
					continue // a directory
				}
				t.Errorf("%s: link %s: %s does not exist", name, target, p)
				continue
			}
			if frag == "" || path.Ext(p) != ".md" {
				continue
			}
			as, err := anchors(p, data)
			if err != nil {
				t.Fatal(err)
			}
			if !as[frag] {
				t.Errorf("%s: link %s: %s has no heading #%s", name, target, p, frag)
			}
		}
	}
}

func TestAnchor(t *testing.T) {
	for h, want := range map[string]string{
		"1. A module that uses fsmgen":             "1-a-module-that-uses-fsmgen",
		"The language server: `fsmgen lsp`":        "the-language-server-fsmgen-lsp",
		"Guards of your own tables (`fsmgen sql`)": "guards-of-your-own-tables-fsmgen-sql",
	} {
		if got := anchor(h); got != want {
			t.Errorf("anchor(%q) = %q, want %q", h, got, want)
		}
	}
}

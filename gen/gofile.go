package gen

import (
	"bytes"
	"fmt"
	"go/format"
	"go/token"
	"go/types"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/fsmgen/fsmgen/internal/version"
)

// goFile is one generated Go file, written as text a line at a time and
// formatted once, whole, by source. It is the generator's only way of
// writing Go: every generated .go file is a goFile.
//
// Code names another package through use (or useNamed), which records the
// import; the import block is written from what was used, the standard
// library first, then the rest, as goimports lays it out.
type goFile struct {
	// header is the comment above the package clause: the canonical
	// "Code generated" line and the versions (see newGoFile).
	header []string
	// doc is the package's doc comment, a line per element.
	doc []string
	pkg string
	// imports maps each used import path to the name the code uses;
	// named holds those imported under a name written out (useNamed).
	imports map[string]string
	named   map[string]bool
	b       bytes.Buffer
}

// newGoFile starts the file of package pkg generated from source.
func newGoFile(source, pkg string) *goFile {
	return &goFile{
		header:  []string{header(source), "versions:", "\tfsmgen " + version.Version},
		pkg:     pkg,
		imports: map[string]string{},
		named:   map[string]bool{},
	}
}

// use records that the file imports the package at importPath and returns
// the name the code calls it by: the path's last element, or its next to
// last when the last is a major version (v2, v3, ...), followed by a
// number when another import has that name already.
func (f *goFile) use(importPath string) string {
	if name, ok := f.imports[importPath]; ok {
		return name
	}
	return f.add(importPath, lastElem(importPath))
}

// useNamed is use for a package whose name the generator cannot know: the
// package of a type the .fsm file names, which need not be its path's last
// element. Outside the standard library, the package is imported under a
// name written in the import block: the path's last element (as use
// takes it) lower-cased, without what is not a letter or a digit, "pkg"
// when nothing is left.
func (f *goFile) useNamed(importPath string) string {
	if name, ok := f.imports[importPath]; ok {
		return name
	}
	if stdPath(importPath) {
		return f.use(importPath)
	}
	name := strings.TrimLeft(strings.Map(func(r rune) rune {
		if 'a' <= r && r <= 'z' || '0' <= r && r <= '9' {
			return r
		}
		return -1
	}, strings.ToLower(lastElem(importPath))), "0123456789")
	if name == "" {
		name = "pkg"
	}
	f.named[importPath] = true
	return f.add(importPath, name)
}

// lastElem is the last element of importPath, or the next to last when
// the last is a major version (v2, v3, ...).
func lastElem(importPath string) string {
	name := path.Base(importPath)
	if len(name) > 1 && name[0] == 'v' && strings.Trim(name[1:], "0123456789") == "" {
		name = path.Base(path.Dir(importPath))
	}
	return name
}

// add records that the code calls the package at importPath name, or name
// followed by the first number that makes it a name no other import has,
// no keyword and no predeclared identifier, and returns it.
func (f *goFile) add(importPath, name string) string {
	taken := func(n string) bool {
		return token.IsKeyword(n) || types.Universe.Lookup(n) != nil || slices.Contains(slices.Collect(maps.Values(f.imports)), n)
	}
	unique := name
	for i := 1; taken(unique); i++ {
		unique = name + strconv.Itoa(i)
	}
	f.imports[importPath] = unique
	return unique
}

// stdPath reports whether importPath is a package of the standard library:
// one whose first element has no dot.
func stdPath(importPath string) bool {
	return !strings.Contains(strings.SplitN(importPath, "/", 2)[0], ".")
}

// line writes one line, indented by indent tabs.
func (f *goFile) line(indent int, parts ...string) {
	writeTabs(&f.b, indent)
	for _, p := range parts {
		f.b.WriteString(p)
	}
	f.b.WriteByte('\n')
}

// linef writes one line, indented by indent tabs, as fmt.Sprintf formats it.
func (f *goFile) linef(indent int, format string, args ...any) {
	writeTabs(&f.b, indent)
	fmt.Fprintf(&f.b, format, args...)
	f.b.WriteByte('\n')
}

// comment writes text as a comment wrapped to fit 80 columns at indent.
func (f *goFile) comment(indent int, text string) {
	for _, l := range wrap(text, 76-4*indent) {
		f.line(indent, "// ", l)
	}
}

// commentLines writes lines as comment lines at indent, as they are: an
// empty one is a bare //, which separates paragraphs.
func (f *goFile) commentLines(indent int, lines []string) {
	for _, l := range lines {
		if l == "" {
			f.line(indent, "//")
		} else {
			f.line(indent, "// ", l)
		}
	}
}

// list writes a composite literal that opens with open (its type, or
// what comes before the brace), an element per line, and closes with
// close after the brace; without elements it is open{}close, on one line.
func (f *goFile) list(indent int, open string, elems []string, close string) {
	if len(elems) == 0 {
		f.line(indent, open, "{}", close)
		return
	}
	f.line(indent, open, "{")
	for _, e := range elems {
		f.line(indent+1, e, ",")
	}
	f.line(indent, "}", close)
}

// text writes s as it is: a block of code in Go's own layout.
func (f *goFile) text(s string) { f.b.WriteString(s) }

// source returns the file: header, package clause, imports and what was
// written, formatted once by go/format. A defect that writes code gofmt
// cannot parse is an error matching ErrInternal.
func (f *goFile) source() ([]byte, error) {
	var out bytes.Buffer
	for _, l := range f.header {
		out.WriteString("// " + l + "\n")
	}
	out.WriteString("\n")
	for _, l := range f.doc {
		if l == "" {
			out.WriteString("//\n")
		} else {
			out.WriteString("// " + l + "\n")
		}
	}
	out.WriteString("package " + f.pkg + "\n")
	var std, other []string
	for _, p := range slices.Sorted(maps.Keys(f.imports)) {
		name, l := f.imports[p], strconv.Quote(p)
		if f.named[p] || name != path.Base(p) {
			l = name + " " + l
		}
		if stdPath(p) {
			std = append(std, l)
		} else {
			other = append(other, l)
		}
	}
	if len(std)+len(other) > 0 {
		out.WriteString("\nimport (\n")
		for _, l := range std {
			out.WriteString("\t" + l + "\n")
		}
		if len(std) > 0 && len(other) > 0 {
			out.WriteString("\n")
		}
		for _, l := range other {
			out.WriteString("\t" + l + "\n")
		}
		out.WriteString(")\n")
	}
	out.WriteString("\n")
	out.Write(f.b.Bytes())
	b, err := format.Source(out.Bytes())
	if err != nil {
		return nil, fmt.Errorf("%w: generated %s code does not parse: %v", ErrInternal, f.pkg, err)
	}
	return b, nil
}

// writeTabs writes n tabs to b.
func writeTabs(b *bytes.Buffer, n int) {
	for range n {
		b.WriteByte('\t')
	}
}

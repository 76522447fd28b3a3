package gen

import (
	"bytes"
	"fmt"
	"go/format"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
)

// goFile is one generated Go file, written as text a line at a time and
// formatted once, whole, by source. It is the generator's only way of
// writing Go: every generated .go file is a goFile.
//
// Code names another package through use, which records the import; the
// import block is written from what was used, the standard library first,
// then the rest, as goimports lays it out.
type goFile struct {
	// header is the comment above the package clause: the canonical
	// "Code generated" line and the versions (see newGoFile).
	header []string
	// doc is the package's doc comment, a line per element.
	doc []string
	pkg string
	// imports maps each used import path to the name the code uses.
	imports map[string]string
	b       bytes.Buffer
}

// newGoFile starts the file of package pkg generated from source.
func newGoFile(source, pkg string) *goFile {
	return &goFile{
		header:  []string{header(source), "versions:", "\tfsmgen " + Version},
		pkg:     pkg,
		imports: map[string]string{},
	}
}

// use records that the file imports the package at importPath and returns
// the name the code calls it by: the path's last element, or its next to
// last when the last is a major version (v2, v3, ...).
func (f *goFile) use(importPath string) string {
	if name, ok := f.imports[importPath]; ok {
		return name
	}
	name := path.Base(importPath)
	if len(name) > 1 && name[0] == 'v' && strings.Trim(name[1:], "0123456789") == "" {
		name = path.Base(path.Dir(importPath))
	}
	f.imports[importPath] = name
	return name
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
		if name != path.Base(p) {
			l = name + " " + l
		}
		if strings.Contains(strings.SplitN(p, "/", 2)[0], ".") {
			other = append(other, l)
		} else {
			std = append(std, l)
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

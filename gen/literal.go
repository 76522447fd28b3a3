package gen

import (
	"bytes"
	"fmt"
	"strings"
)

// lit is a Go expression written as text already laid out the way gofmt
// lays it out, for the machine's definition table: thousands of rows that
// go/printer would otherwise measure again at every level of nesting. It is
// either a single-line expression (expr), or a composite literal of
// optional type typ whose elements are on one line or, when multi is set,
// one per line. Only the shapes the table uses are supported: a
// single-line composite holds single-line elements only, and the keys of
// a multi-line composite are short identifiers.
type lit struct {
	expr  string
	typ   string
	elems []litElem
	comp  bool
	multi bool
}

// litElem is one element of a composite literal, keyed when key is set.
type litElem struct {
	key string
	val *lit
}

// expr is a single-line expression.
func expr(s string) *lit { return &lit{expr: s} }

// literal is the Go literal of v as jennifer's Lit writes it.
func literal(v any) *lit {
	switch v := v.(type) {
	case bool, string, int:
		return expr(fmt.Sprintf("%#v", v))
	case float64:
		s := fmt.Sprintf("%#v", v)
		if !strings.Contains(s, ".") && !strings.Contains(s, "e") {
			s += ".0"
		}
		return expr(s)
	default:
		return expr(fmt.Sprintf("%T(%#v)", v, v))
	}
}

// composite is a composite literal of type typ ("" when elided) on one
// line.
func composite(typ string, elems ...litElem) *lit {
	return &lit{typ: typ, elems: elems, comp: true}
}

// compositeLines is a composite literal of type typ ("" when elided) with
// each element on its own line.
func compositeLines(typ string, elems ...litElem) *lit {
	return &lit{typ: typ, elems: elems, comp: true, multi: true}
}

// field is the keyed element key: v.
func field(key string, v *lit) litElem { return litElem{key: key, val: v} }

// elem is the unkeyed element v.
func elem(v *lit) litElem { return litElem{val: v} }

// write appends l to b as gofmt prints it at the given indentation (in
// tabs) of the line it starts on: single-line composites with ", "
// between elements, multi-line ones with each element on a line of its
// own followed by a comma, and the keys of consecutive keyed elements
// whose values fit on one line aligned in a column, as go/printer's
// tabwriter aligns them (the column ends at an element spanning lines).
func (l *lit) write(b *bytes.Buffer, indent int) {
	if !l.comp {
		b.WriteString(l.expr)
		return
	}
	b.WriteString(l.typ)
	b.WriteByte('{')
	if len(l.elems) == 0 {
		b.WriteByte('}')
		return
	}
	if !l.multi {
		for i, e := range l.elems {
			if e.val.multi {
				panic("gen: a multi-line literal inside a single-line one")
			}
			if i > 0 {
				b.WriteString(", ")
			}
			if e.key != "" {
				b.WriteString(e.key)
				b.WriteString(": ")
			}
			e.val.write(b, indent)
		}
		b.WriteByte('}')
		return
	}
	b.WriteByte('\n')
	for i := 0; i < len(l.elems); {
		// The run of keyed single-line elements from i shares a column.
		j, width := i, 0
		for j < len(l.elems) && l.elems[j].key != "" && !l.elems[j].val.multi {
			width = max(width, len(l.elems[j].key)+1)
			j++
		}
		if j == i {
			e := l.elems[i]
			writeTabs(b, indent+1)
			if e.key != "" {
				b.WriteString(e.key)
				b.WriteString(": ")
			}
			e.val.write(b, indent+1)
			b.WriteString(",\n")
			i++
			continue
		}
		for ; i < j; i++ {
			e := l.elems[i]
			writeTabs(b, indent+1)
			b.WriteString(e.key)
			b.WriteByte(':')
			b.WriteString(strings.Repeat(" ", width-len(e.key)))
			e.val.write(b, indent+1)
			b.WriteString(",\n")
		}
	}
	writeTabs(b, indent)
	b.WriteByte('}')
}

func writeTabs(b *bytes.Buffer, n int) {
	for range n {
		b.WriteByte('\t')
	}
}

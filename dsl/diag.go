package dsl

import (
	"fmt"
	"sort"
	"strings"

	"github.com/alecthomas/participle/v2/lexer"
)

// Severity tells an error from a warning.
type Severity int

// The severities. Errors stop generation; warnings are printed only.
const (
	Error Severity = iota
	Warning
)

// Diagnostic is one message about a position in a .fsm file.
type Diagnostic struct {
	Pos      lexer.Position
	Severity Severity
	Message  string
}

// String formats the diagnostic the way the Go compiler does:
// path:line:col: message, with "warning: " before the message of a warning.
func (d Diagnostic) String() string {
	prefix := ""
	if d.Severity == Warning {
		prefix = "warning: "
	}
	return fmt.Sprintf("%s:%d:%d: %s%s", d.Pos.Filename, d.Pos.Line, d.Pos.Column, prefix, d.Message)
}

// Diagnostics is a list of diagnostics, sorted by position once complete.
type Diagnostics []Diagnostic

// HasErrors reports whether any diagnostic is an error.
func (ds Diagnostics) HasErrors() bool {
	for _, d := range ds {
		if d.Severity == Error {
			return true
		}
	}
	return false
}

// Err returns the errors among ds as an error, or nil when there are none.
func (ds Diagnostics) Err() error {
	var errs ErrorList
	for _, d := range ds {
		if d.Severity == Error {
			errs = append(errs, d)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}

func (ds Diagnostics) sort() {
	sort.SliceStable(ds, func(i, j int) bool {
		a, b := ds[i].Pos, ds[j].Pos
		if a.Filename != b.Filename {
			return a.Filename < b.Filename
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})
}

// ErrorList is the error returned for a file with errors: one line per
// error, each positioned.
type ErrorList []Diagnostic

// Error implements error.
func (l ErrorList) Error() string {
	lines := make([]string, len(l))
	for i, d := range l {
		lines[i] = d.String()
	}
	return strings.Join(lines, "\n")
}

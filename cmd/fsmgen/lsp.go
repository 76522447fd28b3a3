package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/fsmgen/fsmgen/dsl"
	"github.com/fsmgen/fsmgen/internal/lsp"
)

// serveLSP runs the language server on standard input and output until
// the editor exits it.
func serveLSP(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fl := newFlags("lsp", stderr)
	// Editors' clients (vscode-languageclient among them) pass --stdio to
	// say which transport they speak; it is the only one.
	fl.Bool("stdio", true, "speak the protocol on standard input and output (the default and only transport)")
	if err := fl.Parse(args); err != nil {
		return exitUsage
	}
	if fl.NArg() > 0 {
		fmt.Fprintf(stderr, "fsmgen lsp: unexpected argument %s\n%s", fl.Arg(0), usage)
		return exitUsage
	}
	if err := lsp.Serve(context.Background(), stdin, stdout); err != nil {
		if !errors.Is(err, lsp.ErrNoShutdown) {
			fmt.Fprintf(stderr, "fsmgen lsp: %v\n", err)
		}
		return exitInput
	}
	return exitOK
}

// jsonDiagnostic is one diagnostic as check -json prints it. Lines and
// columns count from 1, columns in characters, as in path:line:col; the
// end is just after the text the diagnostic is about.
type jsonDiagnostic struct {
	File       string `json:"file"`
	Line       int    `json:"line"`
	Column     int    `json:"column"`
	EndLine    int    `json:"endLine"`
	EndColumn  int    `json:"endColumn"`
	Severity   string `json:"severity"`
	Message    string `json:"message"`
	Suggestion string `json:"suggestion,omitempty"`
}

// checkJSON checks paths as check does, and prints every diagnostic as
// one JSON list on stdout, [] when there is none. The exit code is
// check's.
func checkJSON(paths []string, stdout, stderr io.Writer) int {
	list := []jsonDiagnostic{}
	_, ok := loadWith(paths, stderr, func(d dsl.Diagnostic, src []byte) {
		end := d.End(src)
		sev := "error"
		if d.Severity == dsl.Warning {
			sev = "warning"
		}
		list = append(list, jsonDiagnostic{
			File: d.Pos.Filename, Line: d.Pos.Line, Column: d.Pos.Column,
			EndLine: end.Line, EndColumn: end.Column,
			Severity: sev, Message: d.Message, Suggestion: d.Suggestion(),
		})
	})
	out, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		fmt.Fprintf(stderr, "fsmgen: %v\n", err)
		return exitInput
	}
	if _, err := fmt.Fprintf(stdout, "%s\n", out); err != nil {
		fmt.Fprintf(stderr, "fsmgen: %v\n", err)
		return exitInput
	}
	if !ok {
		return exitInput
	}
	return exitOK
}

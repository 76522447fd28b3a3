package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/fsmgen/fsmgen/dsl"
	"github.com/fsmgen/fsmgen/gen"
)

// export is fsmgen export: one machine as a document another tool opens
// (see gen.XState and gen.SCXML).
func export(args []string, stdout, stderr io.Writer) int {
	fl := newFlags("export", stderr)
	formatName := fl.String("format", "", "export format: xstate or scxml")
	machine := fl.String("machine", "", "the machine to export, when the file holds several")
	out := fl.String("o", "", "write the export to this file instead of standard output")
	if err := fl.Parse(args); err != nil {
		return exitUsage
	}
	render, ok := exporters[*formatName]
	if !ok {
		if *formatName == "" {
			fmt.Fprintf(stderr, "fsmgen export: -format is required: xstate or scxml\n%s", usage)
		} else {
			fmt.Fprintf(stderr, "fsmgen export: unknown format %q, want xstate or scxml\n", *formatName)
		}
		return exitUsage
	}
	if fl.NArg() != 1 || !strings.HasSuffix(fl.Arg(0), ".fsm") {
		fmt.Fprintf(stderr, "fsmgen export: want exactly one .fsm file\n%s", usage)
		return exitUsage
	}
	inputs, ok := loadAll(fl.Args(), stderr)
	if !ok {
		return exitInput
	}
	pick, code := pickMachine("export", fl.Arg(0), inputs[0].spec.Machines, *machine, stderr)
	if pick == nil {
		return code
	}
	src, err := render(pick)
	if errors.Is(err, gen.ErrInternal) {
		fmt.Fprintf(stderr, "fsmgen: internal error exporting %s: %s\n", fl.Arg(0), strings.Replace(err.Error(), gen.ErrInternal.Error()+": ", "", 1))
		return exitInput
	}
	if err != nil {
		fmt.Fprintf(stderr, "fsmgen export: %v\n", err)
		return exitInput
	}
	if *out == "" {
		if _, err := stdout.Write(src); err != nil {
			fmt.Fprintf(stderr, "fsmgen export: %v\n", err)
			return exitInput
		}
		return exitOK
	}
	if err := writeIfChanged(*out, src); err != nil {
		fmt.Fprintf(stderr, "fsmgen export: %v\n", err)
		return exitInput
	}
	return exitOK
}

// exporters are the formats of fsmgen export.
var exporters = map[string]func(*dsl.Machine) ([]byte, error){
	"xstate": gen.XState,
	"scxml":  gen.SCXML,
}

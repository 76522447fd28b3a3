package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/fsmgen/fsmgen/gen"
	"github.com/fsmgen/fsmgen/internal/safeio"
)

// maxImportSize is the largest XState file imported (16 MiB).
const maxImportSize = 16 << 20

// importMachine is fsmgen import: a flat XState machine config as a .fsm
// file (see gen.ImportXState).
func importMachine(args []string, stdout, stderr io.Writer) int {
	fl := newFlags("import", stderr)
	formatName := fl.String("format", "", "import format: xstate")
	out := fl.String("o", "", "write the .fsm file here instead of standard output")
	if err := fl.Parse(args); err != nil {
		return exitUsage
	}
	switch {
	case *formatName == "":
		fmt.Fprintf(stderr, "fsmgen import: -format is required: xstate\n%s", usage)
		return exitUsage
	case *formatName != "xstate":
		fmt.Fprintf(stderr, "fsmgen import: unknown format %q, want xstate\n", *formatName)
		return exitUsage
	case fl.NArg() != 1:
		fmt.Fprintf(stderr, "fsmgen import: want exactly one XState JSON file\n%s", usage)
		return exitUsage
	case *out != "" && !strings.HasSuffix(*out, ".fsm"):
		fmt.Fprintf(stderr, "fsmgen import: -o %s is not a .fsm file\n", *out)
		return exitUsage
	}
	in := fl.Arg(0)
	data, err := safeio.ReadFile(in, maxImportSize)
	if err != nil {
		fmt.Fprintf(stderr, "fsmgen import: %v\n", err)
		return exitInput
	}
	name := *out
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(in), filepath.Ext(in)) + ".fsm"
	}
	src, notes, err := gen.ImportXState(name, data)
	for _, n := range notes {
		fmt.Fprintf(stderr, "fsmgen import: %s: note: %s\n", in, n)
	}
	if errors.Is(err, gen.ErrInternal) {
		fmt.Fprintf(stderr, "fsmgen: internal error importing %s: %s\n", in, strings.Replace(err.Error(), gen.ErrInternal.Error()+": ", "", 1))
		return exitInput
	}
	if err != nil {
		fmt.Fprintf(stderr, "fsmgen import: %v\n", err)
		return exitInput
	}
	if *out == "" {
		if _, err := stdout.Write(src); err != nil {
			fmt.Fprintf(stderr, "fsmgen import: %v\n", err)
			return exitInput
		}
		return exitOK
	}
	if err := writeIfChanged(*out, src); err != nil {
		fmt.Fprintf(stderr, "fsmgen import: %v\n", err)
		return exitInput
	}
	return exitOK
}

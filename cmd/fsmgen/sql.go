package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/fsmgen/fsmgen/dsl"
	"github.com/fsmgen/fsmgen/gen"
)

// sqlGuard is fsmgen sql: the migration that guards a column of a user's
// table with a machine's table (see gen.SQL).
func sqlGuard(args []string, stdout, stderr io.Writer) int {
	fl := newFlags("sql", stderr)
	table := fl.String("table", "", "the table whose column holds the state (schema.table or table)")
	column := fl.String("column", "", "the column that holds the state's name")
	key := fl.String("key", "id", "comma-separated columns identifying a row, copied into the log")
	logTable := fl.String("log", "", "the log table (default TABLE_COLUMN_log)")
	machine := fl.String("machine", "", "the machine, when the file holds several")
	out := fl.String("o", "", "write the migration to this file instead of standard output")
	if err := fl.Parse(args); err != nil {
		return exitUsage
	}
	switch {
	case *table == "":
		fmt.Fprintf(stderr, "fsmgen sql: -table is required\n%s", usage)
		return exitUsage
	case *column == "":
		fmt.Fprintf(stderr, "fsmgen sql: -column is required\n%s", usage)
		return exitUsage
	case fl.NArg() != 1 || !strings.HasSuffix(fl.Arg(0), ".fsm"):
		fmt.Fprintf(stderr, "fsmgen sql: want exactly one .fsm file\n%s", usage)
		return exitUsage
	}
	g := gen.SQLGuard{Table: *table, Column: *column, Log: *logTable}
	for _, k := range strings.Split(*key, ",") {
		g.Key = append(g.Key, strings.TrimSpace(k))
	}
	inputs, ok := loadAll(fl.Args(), stderr)
	if !ok {
		return exitInput
	}
	pick, code := pickMachine("sql", fl.Arg(0), inputs[0].spec.Machines, *machine, stderr)
	if pick == nil {
		return code
	}
	src, err := gen.SQL(pick, g)
	if errors.Is(err, gen.ErrNotGenerated) {
		fmt.Fprintf(stderr, "fsmgen sql: %s: %v\n", fl.Arg(0), err)
		return exitInput
	}
	if err != nil {
		fmt.Fprintf(stderr, "fsmgen sql: %v\n", err)
		return exitUsage
	}
	if *out == "" {
		if _, err := stdout.Write(src); err != nil {
			fmt.Fprintf(stderr, "fsmgen sql: %v\n", err)
			return exitInput
		}
		return exitOK
	}
	if err := writeIfChanged(*out, src); err != nil {
		fmt.Fprintf(stderr, "fsmgen sql: %v\n", err)
		return exitInput
	}
	return exitOK
}

// pickMachine returns the machine named name among machines of file, or
// the only one when name is empty; else it prints why not and returns nil
// and the exit code.
func pickMachine(cmd, file string, machines []*dsl.Machine, name string, stderr io.Writer) (*dsl.Machine, int) {
	if name != "" {
		names := make([]string, len(machines))
		for i, m := range machines {
			if m.Name == name {
				return m, exitOK
			}
			names[i] = m.Name
		}
		fmt.Fprintf(stderr, "fsmgen %s: %s has no machine %s (it has %s)\n", cmd, file, name, strings.Join(names, ", "))
		return nil, exitInput
	}
	if len(machines) == 1 {
		return machines[0], exitOK
	}
	fmt.Fprintf(stderr, "fsmgen %s: %s holds %d machines; choose one with -machine\n", cmd, file, len(machines))
	return nil, exitUsage
}

package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/fsmgen/fsmgen/internal/cliout"
	"github.com/fsmgen/fsmgen/internal/defdiagram"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/admin"
)

func definitionsListCommand() *command {
	return &command{
		name:     "definitions list",
		synopsis: "[-database URL] [-o json]",
		summary:  "list the registered machine definitions",
		details: `List prints every registered definition (type and version) with its machine's
Go name, its initial state, how many states, events and transitions it has, and
when it was registered, by type and version. -o json prints them as an array.`,
		flags: func(fs *flag.FlagSet) { addDatabaseFlag(fs); addOutputFlag(fs) },
		run:   definitionsList,
	}
}

func definitionsShowCommand() *command {
	return &command{
		name:     "definitions show",
		synopsis: "[-database URL] [-mermaid] [-o json] TYPE [VERSION]",
		summary:  "show a registered definition: states, events, transition table, Mermaid diagram",
		details: `Show prints the registered definition of TYPE at VERSION (the latest version
when left out), as the process that runs the machine registered it: its states
with their status, outcome, retry policy and timers, its events with their
payload fields, its transition table in the order the machine tries the rows,
and a Mermaid stateDiagram-v2 drawn from it (the same diagram fsmgen generates
from the .fsm file). -mermaid prints the diagram alone, to paste into docs.
-o json prints {"type", "version", "definition", "mermaid"}.`,
		flags: func(fs *flag.FlagSet) {
			addDatabaseFlag(fs)
			fs.Bool("mermaid", false, "print only the Mermaid diagram")
			addOutputFlag(fs)
		},
		run: definitionsShow,
	}
}

type jsonDefinition struct {
	Type         string     `json:"type"`
	Version      int        `json:"version"`
	Machine      string     `json:"machine"`
	Initial      string     `json:"initial_state"`
	States       int        `json:"states"`
	Events       int        `json:"events"`
	Transitions  int        `json:"transitions"`
	Digest       string     `json:"digest"`
	RegisteredAt *time.Time `json:"registered_at"`
}

func definitionsList(ctx context.Context, c *cli, fs *flag.FlagSet, args []string) error {
	if len(args) > 0 {
		return usagef(nil, "unexpected arguments %q", args)
	}
	return c.withAdmin(ctx, fs, func(a *admin.Admin) error {
		defs, err := a.Definitions(ctx)
		if err != nil {
			return fmt.Errorf("list definitions: %w", operatorError(err))
		}
		if wantJSON(fs) {
			out := make([]jsonDefinition, len(defs))
			for i, d := range defs {
				out[i] = jsonDefinition{Type: d.Type, Version: d.Version, Machine: d.Machine, Initial: d.Initial,
					States: d.States, Events: d.Events, Transitions: d.Transitions, Digest: d.Digest, RegisteredAt: jsonTime(d.RegisteredAt)}
			}
			return cliout.WriteJSON(c.stdout, out)
		}
		if len(defs) == 0 {
			fmt.Fprintln(c.stdout, "no definitions registered")
			return nil
		}
		tw := newTable(c.stdout)
		fmt.Fprintln(tw, "TYPE\tVERSION\tMACHINE\tINITIAL\tSTATES\tEVENTS\tTRANSITIONS\tREGISTERED")
		for _, d := range defs {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\t%d\t%d\t%s\n", d.Type, d.Version, d.Machine, d.Initial, d.States, d.Events, d.Transitions, formatTime(d.RegisteredAt))
		}
		return tw.Flush()
	})
}

func definitionsShow(ctx context.Context, c *cli, fs *flag.FlagSet, args []string) error {
	if len(args) == 0 || len(args) > 2 {
		return usagef(nil, "want TYPE [VERSION], got %d arguments", len(args))
	}
	typ, version := args[0], 0
	if len(args) == 2 {
		v, err := strconv.Atoi(args[1])
		if err != nil || v < 1 {
			return usagef(nil, "version %q is not a number from 1", args[1])
		}
		version = v
	}
	return c.withAdmin(ctx, fs, func(a *admin.Admin) error {
		def, err := a.Definition(ctx, typ, version)
		if err != nil {
			return fmt.Errorf("definition %s: %w", typ, operatorError(err))
		}
		mermaid := string(defdiagram.Mermaid(def))
		switch {
		case wantJSON(fs):
			return cliout.WriteJSON(c.stdout, struct {
				Type       string             `json:"type"`
				Version    int                `json:"version"`
				Definition runtime.Definition `json:"definition"`
				Mermaid    string             `json:"mermaid"`
			}{def.Type, def.Version, def, mermaid})
		case fs.Lookup("mermaid").Value.String() == "true":
			_, err := fmt.Fprint(c.stdout, mermaid)
			return err
		}
		return printDefinition(c, def, mermaid)
	})
}

func printDefinition(c *cli, def runtime.Definition, mermaid string) error {
	w := c.stdout
	tw := newTable(w)
	fmt.Fprintf(tw, "type\t%s v%d\n", def.Type, def.Version)
	fmt.Fprintf(tw, "machine\t%s\n", def.Machine)
	fmt.Fprintf(tw, "initial\t%s\n", def.Initial)
	fmt.Fprintf(tw, "cancel\t%s\n", orDash(def.Cancel))
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = newTable(w)
	fmt.Fprintln(tw, "STATE\tSTATUS\tOUTCOME\tKIND\tRETRY\tTIMERS")
	for _, s := range def.States {
		kind := "handler"
		switch {
		case s.Terminal():
			kind = "final"
		case s.Wait:
			kind = "wait"
		}
		if s.Initial {
			kind = "initial, " + kind
		}
		retry := "-"
		if p := s.Retry; p != nil {
			retry = fmt.Sprintf("%d tries from %s x%g", p.MaxAttempts, defdiagram.Duration(p.InitialInterval), p.Coefficient)
			if p.MaxInterval > 0 {
				retry += " max " + defdiagram.Duration(p.MaxInterval)
			}
		}
		if s.OnExhausted != "" {
			retry += ", else " + s.OnExhausted
		}
		var timers []string
		for _, tm := range s.Timers {
			timers = append(timers, tm.Event+" after "+defdiagram.Duration(tm.After))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, s.Status, orDash(s.Outcome), kind, retry, orDash(strings.Join(timers, ", ")))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = newTable(w)
	fmt.Fprintln(tw, "EVENT\tFIELDS")
	for _, e := range defdiagram.Events(def) {
		fmt.Fprintf(tw, "%s\t%s\n", e.Name, orDash(e.Fields))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if err := defdiagram.Table(w, def); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n```mermaid\n%s```\n", mermaid)
	return nil
}

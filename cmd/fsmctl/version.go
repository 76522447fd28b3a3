package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/fsmgen/fsmgen/internal/version"
)

func versionCommand() *command {
	return &command{
		name:    "version",
		summary: "print fsmctl's version, the release of fsmgen it was built from",
		details: `Version prints "fsmctl vX.Y.Z", the version of the fsmgen release fsmctl was
built from, which fsmgen -version prints too and generated code names in its
header.`,
		run: func(_ context.Context, c *cli, _ *flag.FlagSet, args []string) error {
			if len(args) != 0 {
				return usagef(nil, "unexpected arguments %q", args)
			}
			_, err := fmt.Fprintf(c.stdout, "fsmctl %s\n", version.Version)
			return err
		},
	}
}

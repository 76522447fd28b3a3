// Package cliout is how fsmctl's read commands print: as aligned text for
// a person, or as JSON for a script, chosen with the -o flag every read
// command declares.
//
//	func flags(fs *flag.FlagSet) { cliout.AddFlag(fs) }
//
//	func run(ctx context.Context, c *cli, fs *flag.FlagSet, args []string) error {
//		...
//		if cliout.FromFlags(fs) == cliout.JSON {
//			return cliout.WriteJSON(c.stdout, rows)
//		}
//		// the text form
//	}
//
// -o takes text (the default) or json; any other value is a usage error
// that the flag package reports ("invalid value "yaml" for flag -o: want
// text or json"), so a command exits with status 2 before it connects.
//
// WriteJSON writes one JSON value, indented by two spaces, followed by a
// newline, with HTML characters (<, >, &) left as they are. A command that
// lists things writes an array, empty rather than null when nothing
// matches; a command that shows one thing writes an object. Field names
// are snake_case and times are RFC 3339 in UTC; a field a script may rely
// on is never dropped because it is empty: it is "", 0, false or null.
package cliout

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/fsmgen/fsmgen/internal/cliout"
)

// completeCommand is the hidden command the completion scripts call with
// the words of the command line so far, the one being typed last; it
// prints the words that may complete it, one a line.
const completeCommand = "__complete"

// shells are the shells completion writes a script for.
var shells = []string{"bash", "zsh", "fish"}

func completionCommand() *command {
	return &command{
		name:     "completion",
		synopsis: "bash|zsh|fish",
		summary:  "print the shell completion script of bash, zsh or fish",
		details: `Completion prints a script that completes fsmctl's commands, subcommands, flags
and the values of flags that take one of a few (-o, -status, --format) in the
shell named. Load it in the current shell, or once for every new one:

  bash  source <(fsmctl completion bash)
        fsmctl completion bash > /etc/bash_completion.d/fsmctl
  zsh   source <(fsmctl completion zsh)             (after compinit)
        fsmctl completion zsh > "${fpath[1]}/_fsmctl"
  fish  fsmctl completion fish | source
        fsmctl completion fish > ~/.config/fish/completions/fsmctl.fish

The scripts ask fsmctl itself what completes a word (fsmctl ` + completeCommand + ` WORDS...),
so they stay right as commands and flags change; fsmctl must be on PATH.`,
		run: runCompletion,
	}
}

func runCompletion(_ context.Context, c *cli, _ *flag.FlagSet, args []string) error {
	if len(args) != 1 {
		return usagef(nil, "want one shell (%s), got %d arguments", strings.Join(shells, ", "), len(args))
	}
	script, ok := completionScripts[args[0]]
	if !ok {
		return usagef(nil, "unknown shell %q: want %s", args[0], strings.Join(shells, ", "))
	}
	_, err := io.WriteString(c.stdout, script)
	return err
}

// completionScripts are the scripts of completion, by shell.
var completionScripts = map[string]string{
	"bash": `# bash completion of fsmctl: source <(fsmctl completion bash)
_fsmctl() {
	local IFS=$'\n'
	COMPREPLY=($(fsmctl ` + completeCommand + ` "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null))
}
complete -o default -F _fsmctl fsmctl
`,
	"zsh": `#compdef fsmctl
# zsh completion of fsmctl: source <(fsmctl completion zsh), after compinit.
_fsmctl() {
	local -a candidates
	candidates=("${(@f)$(fsmctl ` + completeCommand + ` "${(@)words[2,CURRENT]}" 2>/dev/null)}")
	candidates=(${candidates:#})
	if (( ${#candidates} )); then
		compadd -Q -- "${candidates[@]}"
	else
		_files
	fi
}
if [ "$funcstack[1]" = "_fsmctl" ]; then
	_fsmctl "$@"
else
	compdef _fsmctl fsmctl
fi
`,
	"fish": `# fish completion of fsmctl: fsmctl completion fish | source
function __fsmctl_complete
	set -l words (commandline -opc) (commandline -ct)
	fsmctl ` + completeCommand + ` $words[2..-1] 2>/dev/null
end
complete -c fsmctl -f -a '(__fsmctl_complete)'
`,
}

// complete prints the words that complete the last of words, a command
// line without the program's name, one a line.
func (c *cli) complete(words []string) error {
	for _, w := range c.completions(words) {
		fmt.Fprintln(c.stdout, w)
	}
	return nil
}

// completions returns the words that complete the last of words (the
// word being typed, maybe empty) after the others, sorted.
func (c *cli) completions(words []string) []string {
	if len(words) == 0 {
		words = []string{""}
	}
	before, cur := words[:len(words)-1], words[len(words)-1]
	var cands []string
	if len(before) > 0 && before[0] == "help" {
		before = before[1:] // help completes a command's name
		if len(before) > 0 && len(groupCommands(before[0])) == 0 {
			return nil // help takes one command
		}
	}
	switch {
	case len(before) == 0:
		seen := map[string]bool{}
		for _, cmd := range commands() {
			name, _, _ := strings.Cut(cmd.name, " ")
			if !seen[name] {
				seen[name] = true
				cands = append(cands, name)
			}
		}
		if len(words) == 1 {
			cands = append(cands, "help")
		}
	case len(before) == 1 && len(groupCommands(before[0])) > 0:
		for _, cmd := range groupCommands(before[0]) {
			_, sub, _ := strings.Cut(cmd.name, " ")
			cands = append(cands, sub)
		}
	default:
		cmd, rest, err := lookup(before)
		if err != nil {
			return nil
		}
		if words[0] == "help" {
			return nil
		}
		fs := c.flagSet(cmd)
		if n := len(rest); n > 0 && takesValue(fs, rest, n-1) {
			// The value of a flag.
			cands = flagValues(cmd, strings.TrimLeft(rest[n-1], "-"))
			break
		}
		if strings.HasPrefix(cur, "-") {
			dashes := "-"
			if strings.HasPrefix(cur, "--") {
				dashes = "--"
			}
			fs.VisitAll(func(f *flag.Flag) { cands = append(cands, dashes+f.Name) })
			cands = append(cands, dashes+"help")
			break
		}
		if cmd.name == "completion" && len(rest) == 0 {
			cands = shells
		}
	}
	var out []string
	for _, w := range cands {
		if strings.HasPrefix(w, cur) {
			out = append(out, w)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// flagValues returns the values flag name of cmd takes, when they are a
// few known ones.
func flagValues(cmd *command, name string) []string {
	switch {
	case name == cliout.FlagName:
		return []string{string(cliout.Text), string(cliout.JSON)}
	case name == "format" && cmd.name == "export":
		return []string{"json", "csv"}
	case name == "status" && cmd.name == "runs list":
		return statuses
	case name == "status" && cmd.name == "chains list":
		return chainStatuses
	}
	return nil
}

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fsmgen/fsmgen/internal/cliout"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/relay"
	"github.com/fsmgen/fsmgen/runtime/store"
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
shell named; with a database (-database on the line, DATABASE_URL or PG*), also
the run a runs command acts on (the 100 newest that it applies to: running runs
for signal, cancel and terminate, parked for resume, failed for retry) and the
dead letters of outbox requeue, when the database answers within 2 seconds. Load it in the current shell, or once for every new one:

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
func (c *cli) complete(ctx context.Context, words []string) error {
	for _, w := range c.completions(ctx, words) {
		fmt.Fprintln(c.stdout, w)
	}
	return nil
}

// completions returns the words that complete the last of words (the
// word being typed, maybe empty) after the others, sorted.
func (c *cli) completions(ctx context.Context, words []string) []string {
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
		if args := positional(fs, rest); len(args) == 0 || cmd.name == "outbox requeue" {
			cands = append(cands, c.argValues(ctx, cmd, fs, rest, cur)...)
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

// positional returns the arguments of words that are neither flags nor
// their values.
func positional(fs *flag.FlagSet, words []string) []string {
	var out []string
	for i, w := range words {
		if !strings.HasPrefix(w, "-") && !takesValue(fs, words, i-1) {
			out = append(out, w)
		}
	}
	return out
}

// completionTimeout bounds the database's answer to a completion: a shell
// waits for it.
const completionTimeout = 2 * time.Second

// maxCompletions is the most run ids or messages a completion lists.
const maxCompletions = 100

// argValues returns, from the command's database (its -database among
// words, else the environment), the arguments that may complete cur for
// cmd: the ids of the runs it acts on (the newest first, those starting
// with cur), the dead letters and all for outbox requeue. None without a
// database, or when it does not answer within completionTimeout.
func (c *cli) argValues(ctx context.Context, cmd *command, fs *flag.FlagSet, words []string, cur string) []string {
	f := store.Filter{Filter: runtime.Filter{Limit: maxCompletions}, Newest: true}
	switch cmd.name {
	case "runs show":
	case "runs signal", "runs cancel", "runs terminate":
		f.Status = runtime.StatusRunning
	case "runs resume":
		f.Status, f.Parked = runtime.StatusRunning, true
	case "runs retry":
		f.Status = runtime.StatusFailed
	case "outbox requeue":
	default:
		return nil
	}
	for i, w := range words {
		if name, value, ok := strings.Cut(strings.TrimLeft(w, "-"), "="); ok && name == "database" && strings.HasPrefix(w, "-") {
			_ = fs.Set("database", value)
		} else if takesValue(fs, words, i-1) && strings.TrimLeft(words[i-1], "-") == "database" {
			_ = fs.Set("database", w)
		}
	}
	conn, source := c.databaseURL(fs)
	if conn == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, completionTimeout)
	defer cancel()
	pool, err := connect(ctx, source, conn)
	if err != nil {
		return nil
	}
	defer pool.Close()
	if cmd.name == "outbox requeue" {
		st, err := relay.ReadStatus(ctx, pool)
		if err != nil {
			return nil
		}
		out := []string{"all"}
		for _, d := range st.DeadLetters {
			out = append(out, strconv.FormatInt(d.ID, 10))
		}
		return out
	}
	if strings.Trim(cur, "0123456789abcdef-") == "" {
		f.Search = cur
	}
	runs, err := store.New(pool).List(ctx, f)
	if err != nil {
		return nil
	}
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = r.ID
	}
	return out
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

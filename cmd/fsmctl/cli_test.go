package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Flags may follow the arguments, as in runs show ID -o json; after --,
// everything is an argument.
func TestFlagsAfterArguments(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.ids["a"]
	got := withDB(t, f.url, "runs", "show", id, "-o", "json")
	var out struct {
		Run jsonRun `json:"run"`
	}
	if err := json.Unmarshal([]byte(got.Stdout), &out); err != nil || got.Code != exitOK || out.Run.ID != id {
		t.Fatalf("runs show ID -o json: exit %d, %v, stdout %q, stderr %q", got.Code, err, got.Stdout, got.Stderr)
	}
	// The same with --flag=value between and after the arguments.
	if again := withDB(t, f.url, "runs", "show", "--o=json", id); again.Stdout != got.Stdout {
		t.Errorf("runs show --o=json ID:\n%s\nwant\n%s", again.Stdout, got.Stdout)
	}
	tests := []struct {
		args   []string
		stderr string // the first line
	}{
		{[]string{"runs", "resume", "1b4e28ba-2fa1-4d2b-883f-0016d3cca427", "-lock-timeout", "0s"}, "fsmctl runs resume: -lock-timeout 0s: want more than 0"},
		{[]string{"runs", "show", "--", "-payloads"}, `fsmctl runs show: run "-payloads": malformed id: want a UUID such as 1b4e28ba-2fa1-4d2b-883f-0016d3cca427`},
		{[]string{"runs", "signal", "x", "-reason", "--", "Pay"}, `fsmctl runs signal: run "x": malformed id: want a UUID such as 1b4e28ba-2fa1-4d2b-883f-0016d3cca427`},
		{[]string{"runs", "signal", "x", "-payloads"}, "flag provided but not defined: -payloads"},
		{[]string{"definitions", "list", "-o", "json", "extra"}, `fsmctl definitions list: unexpected arguments ["extra"]`},
	}
	for _, tt := range tests {
		got := fsmctl(t, nil, tt.args...)
		first, _, _ := strings.Cut(got.Stderr, "\n")
		if diff := cmp.Diff(result{Code: exitUsage, Stderr: tt.stderr}, result{Code: got.Code, Stdout: got.Stdout, Stderr: first}); diff != "" {
			t.Errorf("fsmctl %s (-want +got):\n%s", strings.Join(tt.args, " "), diff)
		}
	}
}

// Help is there at every level, as help CMD, CMD -h and CMD --help, on
// standard output with exit status 0.
func TestHelpAtEveryLevel(t *testing.T) {
	t.Parallel()
	const versions = `usage: fsmctl versions <command> [flags] [arguments]

Commands:
  versions status   show the registered versions of a type and the runs left on each
  versions plan     count the live runs each rule of an upgrade would move, and list those it cannot
  versions upgrade  move the live runs of a type from one version to another, as its upgrade says

Run 'fsmctl help versions <command>' for a command's flags and details.
`
	for _, args := range [][]string{{"help", "versions"}, {"versions", "-h"}, {"versions", "--help"}, {"versions", "-help"}} {
		if diff := cmp.Diff(result{Code: exitOK, Stdout: versions}, fsmctl(t, nil, args...)); diff != "" {
			t.Errorf("fsmctl %s (-want +got):\n%s", strings.Join(args, " "), diff)
		}
	}
	show := fsmctl(t, nil, "help", "runs", "show")
	if show.Code != exitOK || !strings.HasPrefix(show.Stdout, "usage: fsmctl runs show ") {
		t.Fatalf("help runs show: %+v", show)
	}
	for _, args := range [][]string{
		{"runs", "show", "-h"}, {"runs", "show", "--help"}, {"runs", "show", "1b4e28ba-2fa1-4d2b-883f-0016d3cca427", "-h"},
		{"runs", "show", "-o", "json", "--help"},
	} {
		if diff := cmp.Diff(show, fsmctl(t, nil, args...)); diff != "" {
			t.Errorf("fsmctl %s (-want +got):\n%s", strings.Join(args, " "), diff)
		}
	}
	top := fsmctl(t, nil, "help")
	for _, args := range [][]string{{"-h"}, {"--help"}} {
		if diff := cmp.Diff(top, fsmctl(t, nil, args...)); diff != "" {
			t.Errorf("fsmctl %s (-want +got):\n%s", strings.Join(args, " "), diff)
		}
	}
	if got := fsmctl(t, nil, "help", "completion"); got.Code != exitOK || !strings.HasPrefix(got.Stdout, "usage: fsmctl completion bash|zsh|fish\n") {
		t.Errorf("help completion: %+v", got)
	}
	// A bad flag still prints the command's help on stderr, exit 2.
	got := fsmctl(t, nil, "runs", "show", "-verbose")
	if got.Code != exitUsage || got.Stdout != "" || !strings.HasPrefix(got.Stderr, "flag provided but not defined: -verbose\nusage: fsmctl runs show ") {
		t.Errorf("runs show -verbose: %+v", got)
	}
}

func TestCompletions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		words []string
		want  []string
	}{
		{[]string{""}, []string{"chains", "cleanup", "completion", "definitions", "evidence", "export", "help", "migrate", "outbox", "retention", "runs", "serve", "version", "versions"}},
		{[]string{"r"}, []string{"retention", "runs"}},
		{[]string{"runs", ""}, []string{"cancel", "list", "resume", "retry", "show", "signal", "terminate"}},
		{[]string{"runs", "terminate", "ID", "-"}, []string{"-by", "-database", "-help", "-lock-timeout", "-o", "-reason"}},
		{[]string{"outbox", ""}, []string{"requeue", "status"}},
		{[]string{"runs", "re"}, []string{"resume", "retry"}},
		{[]string{"help", "ver"}, []string{"version", "versions"}},
		{[]string{"help", "versions", "p"}, []string{"plan"}},
		{[]string{"help", "runs", "show", ""}, nil},
		{[]string{"runs", "show", "-"}, []string{"-database", "-help", "-o", "-payloads"}},
		{[]string{"runs", "show", "ID", "--p"}, []string{"--payloads"}},
		{[]string{"runs", "list", "-status", ""}, []string{"cancelled", "failed", "running", "succeeded"}},
		{[]string{"chains", "list", "-status", "C"}, []string{"CANCELED", "COMPLETED"}},
		{[]string{"runs", "show", "-o", ""}, []string{"json", "text"}},
		{[]string{"export", "ID", "--format", ""}, []string{"csv", "json"}},
		{[]string{"runs", "show", "-payloads", ""}, nil},
		{[]string{"completion", ""}, []string{"bash", "fish", "zsh"}},
		{[]string{"frobnicate", ""}, nil},
	}
	for _, tt := range tests {
		got := fsmctl(t, nil, append([]string{completeCommand}, tt.words...)...)
		want := result{Code: exitOK}
		if tt.want != nil {
			want.Stdout = strings.Join(tt.want, "\n") + "\n"
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("complete %q (-want +got):\n%s", tt.words, diff)
		}
	}
	got := fsmctl(t, nil, "completion", "tcsh")
	want := "fsmctl completion: unknown shell \"tcsh\": want bash, zsh, fish\nusage: fsmctl completion bash|zsh|fish\nRun 'fsmctl help completion' for details.\n"
	if diff := cmp.Diff(result{Code: exitUsage, Stderr: want}, got); diff != "" {
		t.Errorf("completion tcsh (-want +got):\n%s", diff)
	}
}

// buildFsmctl builds fsmctl into a directory of its own and returns it.
func buildFsmctl(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "fsmctl"), ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return dir
}

// The scripts completion prints complete in the shells themselves: bash's
// with COMP_WORDS as bash sets them at a Tab, zsh's and fish's when those
// shells are installed (.ci/run installs them).
func TestCompletionScripts(t *testing.T) {
	t.Parallel()
	bin := buildFsmctl(t)
	env := append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	script := func(shell string) string {
		out, err := exec.Command(filepath.Join(bin, "fsmctl"), "completion", shell).Output()
		if err != nil {
			t.Fatalf("completion %s: %v", shell, err)
		}
		return string(out)
	}
	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
		return string(out)
	}
	bashScript := script("bash") + `
COMP_WORDS=(fsmctl runs sh); COMP_CWORD=2; _fsmctl; printf '%s\n' "${COMPREPLY[@]}"
COMP_WORDS=(fsmctl runs list -status ""); COMP_CWORD=4; _fsmctl; printf '%s\n' "${COMPREPLY[@]}"
complete -p fsmctl
`
	want := "show\ncancelled\nfailed\nrunning\nsucceeded\ncomplete -o default -F _fsmctl fsmctl\n"
	if diff := cmp.Diff(want, run("bash", "-c", bashScript)); diff != "" {
		t.Errorf("bash (-want +got):\n%s", diff)
	}
	for _, shell := range []string{"zsh", "fish"} {
		if _, err := exec.LookPath(shell); err != nil {
			if os.Getenv("CI") != "" {
				t.Errorf("%s is not installed: .ci/run installs it", shell)
			}
			continue
		}
		f := filepath.Join(t.TempDir(), "fsmctl."+shell)
		if err := os.WriteFile(f, []byte(script(shell)), 0o644); err != nil {
			t.Fatal(err)
		}
		var got string
		switch shell {
		case "zsh":
			// compadd only works inside completion widgets: a stand-in
			// prints what the function adds.
			got = run("zsh", "-f", "-c", `autoload -Uz compinit && compinit -u -D
source `+f+`
compadd() { shift 2; printf '%s\n' "$@" }
words=(fsmctl runs sh); CURRENT=3; _fsmctl`)
		case "fish":
			got = run("fish", "-N", "-c", "source "+f+"; complete -C 'fsmctl runs sh'")
		}
		if diff := cmp.Diff("show\n", got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", shell, diff)
		}
	}
}

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// neovimSnippets returns the Lua blocks of the Neovim section of
// docs/editors.md, in order: the one for 0.11 and later, then the one
// for 0.7 and later.
func neovimSnippets(t *testing.T) []string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(repoRoot, "docs", "editors.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## Neovim\n")
	section, _, _ = strings.Cut(section, "\n## ")
	blocks := regexp.MustCompile("(?s)```lua\n(.*?)```").FindAllStringSubmatch(section, -1)
	if !ok || len(blocks) != 2 {
		t.Fatalf("docs/editors.md: want a Neovim section with two Lua blocks, found %d", len(blocks))
	}
	return []string{blocks[0][1], blocks[1][1]}
}

// nvimVersion returns the major and minor version of nvim.
func nvimVersion(t *testing.T, nvim string) (int, int) {
	t.Helper()
	out, err := exec.Command(nvim, "--version").Output()
	if err != nil {
		t.Fatalf("nvim --version: %v", err)
	}
	m := regexp.MustCompile(`NVIM v(\d+)\.(\d+)`).FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("nvim --version: %q", out)
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	return major, minor
}

// TestNeovim starts a headless Neovim with the documentation's snippet
// for its version as its whole configuration, on a .fsm file with two
// errors: a client named fsmgen attaches to the buffer and the file's
// diagnostics arrive. .ci/run installs Debian's neovim (0.7).
func TestNeovim(t *testing.T) {
	t.Parallel()
	nvim, err := exec.LookPath("nvim")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("nvim is not installed: .ci/run installs it")
		}
		t.Skip("nvim is not installed (apt-get install neovim)")
	}
	snippets := neovimSnippets(t)
	snippet := snippets[1] // 0.7 to 0.10
	if major, minor := nvimVersion(t, nvim); major > 0 || minor >= 11 {
		snippet = snippets[0]
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if out, err := exec.Command("go", "build", "-o", filepath.Join(bin, "fsmgen"), ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	write := func(name, text string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	init := write("init.lua", snippet)
	door := write("door.fsm", bad)
	out := filepath.Join(dir, "out.txt")
	check := write("check.lua", `
local function clients()
  if vim.lsp.get_clients then return vim.lsp.get_clients({ bufnr = 0 }) end
  return vim.lsp.buf_get_clients(0)
end
vim.wait(30000, function() return #vim.diagnostic.get(0) >= 2 end, 20)
local lines = {}
for _, c in pairs(clients()) do table.insert(lines, "client " .. c.name) end
local diags = vim.diagnostic.get(0)
table.sort(diags, function(a, b) return a.lnum < b.lnum end)
for _, d in ipairs(diags) do
  table.insert(lines, string.format("%d:%d %s", d.lnum, d.col, d.message))
end
vim.fn.writefile(lines, "`+out+`")
vim.cmd("qa!")
`)
	cmd := exec.Command(nvim, "--headless", "-n", "-i", "NONE", "-u", init, "-c", "luafile "+check, door)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HOME="+dir, "XDG_CONFIG_HOME="+filepath.Join(dir, "config"), "XDG_DATA_HOME="+filepath.Join(dir, "data"),
		"XDG_STATE_HOME="+filepath.Join(dir, "state"), "XDG_CACHE_HOME="+filepath.Join(dir, "cache"))
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nvim: %v\n%s", err, b)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("nvim wrote no result: %v", err)
	}
	want := "client fsmgen\n4:10 event Slam is never used\n6:4 unknown state CLOSD; did you mean CLOSED?\n"
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("nvim (-want +got):\n%s", diff)
	}
}

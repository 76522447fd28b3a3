package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// vscodeDir is the VS Code extension.
var vscodeDir = filepath.Join(repoRoot, "editors", "vscode")

// TestVSCodeExtension runs the extension's Node tests with a freshly built
// fsmgen: the grammar on every .fsm file of the repository and its golden
// scopes, the diagram preview, and the language server it starts.
func TestVSCodeExtension(t *testing.T) {
	t.Parallel()
	node := needNode(t, vscodeDir)
	bin := filepath.Join(t.TempDir(), "fsmgen")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(node, "--test")
	cmd.Dir = vscodeDir
	cmd.Env = append(os.Environ(), "FSMGEN_BIN="+bin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("node --test in %s: %v\n%s", vscodeDir, err, tail(out.String(), 200))
	}
	t.Logf("node --test:\n%s", tail(out.String(), 10))
}

// TestVSIX packages the extension with vsce, as make vsix does, and checks
// the package: the manifest, the license, the code, the grammar, the bundled Mermaid,
// and every module vscode-languageclient needs at run time.
func TestVSIX(t *testing.T) {
	t.Parallel()
	node := needNode(t, vscodeDir)
	vsix := filepath.Join(t.TempDir(), "fsmgen.vsix")
	cmd := exec.Command(node, filepath.Join("node_modules", "@vscode", "vsce", "vsce"), "package", "-o", vsix)
	cmd.Dir = vscodeDir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("vsce package: %v\n%s", err, out)
	}
	zr, err := zip.OpenReader(vsix)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	have := map[string]bool{}
	for _, f := range zr.File {
		have[f.Name] = true
	}
	want := []string{
		"extension.vsixmanifest",
		"extension/LICENSE.txt",
		"extension/package.json",
		"extension/extension.js",
		"extension/lib.js",
		"extension/language-configuration.json",
		"extension/syntaxes/fsm.tmLanguage.json",
		"extension/node_modules/mermaid/dist/mermaid.min.js",
	}
	for _, p := range runtimeModules(t, "vscode-languageclient") {
		want = append(want, "extension/"+p+"/package.json")
	}
	for _, p := range want {
		if !have[p] {
			t.Errorf("%s is not in the .vsix", p)
		}
	}
	for name := range have {
		if strings.HasPrefix(name, "extension/test/") || strings.Contains(name, "/vscode-textmate/") || strings.Contains(name, "/@vscode/vsce/") {
			t.Errorf("%s is in the .vsix, which ships no tests or build tools", name)
		}
	}
}

// runtimeModules returns the node_modules paths of module and everything
// it depends on, resolved through the extension's package-lock.json as
// Node resolves them (the nearest node_modules up the tree).
func runtimeModules(t *testing.T, module string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(vscodeDir, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	var lock struct {
		Packages map[string]struct {
			Dependencies map[string]string `json:"dependencies"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(data, &lock); err != nil {
		t.Fatal(err)
	}
	resolve := func(from, dep string) string {
		for dir := from; ; {
			p := path.Join(dir, "node_modules", dep)
			if dir == "" {
				p = "node_modules/" + dep
			}
			if _, ok := lock.Packages[p]; ok {
				return p
			}
			if dir == "" {
				t.Fatalf("package-lock.json does not resolve %s from %s", dep, from)
			}
			i := strings.LastIndex(dir, "/node_modules/")
			if i < 0 {
				dir = ""
			} else {
				dir = dir[:i]
			}
		}
	}
	seen := map[string]bool{}
	var out []string
	var walk func(p string)
	walk = func(p string) {
		if seen[p] {
			return
		}
		seen[p] = true
		out = append(out, p)
		for dep := range lock.Packages[p].Dependencies {
			walk(resolve(p, dep))
		}
	}
	walk(resolve("", module))
	return out
}

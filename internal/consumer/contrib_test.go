package consumer_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsmgen/fsmgen/internal/version"
)

// TestContribFromAnotherModule requires a contrib module, and nothing
// else, from a scratch module outside the repository, as a service that
// uses it does once it is published. Go ignores the replace directives of
// a dependency's go.mod: what resolves the main module is the version the
// contrib module requires. The scratch module replaces only that version
// of each unpublished module with the checkout, so a contrib module
// requiring any other version (v0.0.0, which no proxy has) fails go mod
// tidy.
func TestContribFromAnotherModule(t *testing.T) {
	t.Parallel()
	checkout, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ contrib, imp, use string }{
		{"nats", `natsrelay "github.com/fsmgen/fsmgen/contrib/nats"`, `natsrelay.Config{}.MsgIDPrefix == ""`},
		{"otel", `"github.com/fsmgen/fsmgen/contrib/otel/otelfsm"`, `otelfsm.ErrorType(nil) == ""`},
	} {
		t.Run(tc.contrib, func(t *testing.T) {
			t.Parallel()
			contribDir := filepath.Join(checkout, "contrib", tc.contrib)
			contribPath := "github.com/fsmgen/fsmgen/contrib/" + tc.contrib
			mod := "module example.com/contribsvc\n\ngo 1.26\n\nrequire " + contribPath + " " + version.Version + "\n\n" +
				"replace github.com/fsmgen/fsmgen " + version.Version + " => " + checkout + "\n\n" +
				"replace " + contribPath + " " + version.Version + " => " + contribDir + "\n"
			var sum []byte
			for _, d := range []string{checkout, contribDir} {
				b, err := os.ReadFile(filepath.Join(d, "go.sum"))
				if err != nil {
					t.Fatal(err)
				}
				sum = append(sum, b...)
			}
			main := "package main\n\nimport (\n\t\"fmt\"\n\n\t" + tc.imp + "\n)\n\nfunc main() { fmt.Println(" + tc.use + ") }\n"
			dir := t.TempDir()
			for name, content := range map[string]string{"go.mod": mod, "go.sum": string(sum), "main.go": main} {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			gocmd := goIn(t, dir, append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY="+proxies(t), "GOWORK=off"))
			gocmd("mod", "tidy")
			tidy, err := os.ReadFile(filepath.Join(dir, "go.mod"))
			if err != nil {
				t.Fatal(err)
			}
			if want := "\tgithub.com/fsmgen/fsmgen " + version.Version + " // indirect\n"; !strings.Contains(string(tidy), want) {
				t.Errorf("go.mod after go mod tidy lacks %q:\n%s", want, tidy)
			}
			if got := gocmd("run", "."); got != "true\n" {
				t.Errorf("go run . printed %q, want %q", got, "true\n")
			}
		})
	}
}

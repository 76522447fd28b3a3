package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsmgen/fsmgen/runtime/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestDemo(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	runsDir := t.TempDir()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-runs-dir", runsDir, "-database", url}, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{
		"attempt 1: OK after 2 API requests",
		"attempt 1: FAILED after 4 API requests",
		"  step 2 summarize:    PENDING\n",
		`"error_type": "APIRetryExhausted",`,
		"attempt 2: OK after 1 API requests",
		"    north,130.50\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the demo's output lacks %q:\n%s", want, out.String())
		}
	}
	entries, err := os.ReadDir(runsDir)
	if err != nil || len(entries) != 2 {
		t.Fatalf("%d run directories, want 2: %v", len(entries), err)
	}
	for _, e := range entries {
		for _, f := range []string{"run.json", "steps.json", "audit.json", "audit.csv", "report.csv", "artifacts/index.json"} {
			if _, err := os.Stat(filepath.Join(runsDir, e.Name(), f)); err != nil {
				t.Errorf("run %s: %v", e.Name(), err)
			}
		}
	}
}

package main

import (
	"context"
	"strings"
	"testing"

	"github.com/fsmgen/fsmgen/runtime"
)

// TestRunsPrintEscapesControlCharacters stores a run whose tenant and key
// hold terminal escape sequences and a bidirectional override: runs list
// and runs show print them escaped, never raw.
func TestRunsPrintEscapesControlCharacters(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const tenant = "acme\x1b]0;owned\x07\x1b[2J"
	res, err := f.st.Start(context.Background(), runtime.StartRequest{Type: "retrieve_or_generate", Version: 1,
		IdempotencyKey: "key\u202egnp.exe\r\n", Owner: runtime.Owner{TenantID: tenant}})
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"runs", "list", "-tenant", tenant},
		{"runs", "show", "-payloads", res.Run.ID},
	} {
		r := withDB(t, f.url, args...)
		if r.Code != exitOK {
			t.Fatalf("fsmctl %s: %+v", args[:2], r)
		}
		if i := strings.IndexFunc(r.Stdout, func(c rune) bool { return c < 0x20 && c != '\n' || c == 0x7f || c == '\u202e' }); i >= 0 {
			t.Errorf("fsmctl %s printed a control character %q:\n%s", strings.Join(args[:2], " "), r.Stdout[i:i+1], r.Stdout)
		}
		if !strings.Contains(r.Stdout, `acme\x1b]0;owned\x07\x1b[2J`) {
			t.Errorf("fsmctl %s does not show the tenant escaped:\n%s", strings.Join(args[:2], " "), r.Stdout)
		}
	}
	if r := withDB(t, f.url, "runs", "show", res.Run.ID); !strings.Contains(r.Stdout, `key\u202egnp.exe\r\n`) {
		t.Errorf("runs show does not show the key escaped:\n%s", r.Stdout)
	}
}

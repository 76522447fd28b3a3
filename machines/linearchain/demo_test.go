package linearchain_test

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/fsmgen/fsmgen/machines/linearchain"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// The demo drives the three orders to their dictated ends and prints
// their steps and histories.
func TestDemo(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	var out bytes.Buffer
	if err := linearchain.Demo(context.Background(), pool, &out); err != nil {
		t.Fatalf("Demo: %v\n%s", err, out.String())
	}
	text := out.String()
	for _, want := range []string{
		"-> applied\n",
		"-> duplicate (first delivery: applied)\n",
		"WAIT_PAYMENT WAITING_TIMEOUT -> Dead {\"lastError\":\"payment not captured before the deadline\"} -> DEAD, FAILED",
		"VALIDATE RUN -> Dead {\"lastError\":\"invalid order: quantity 0\"} -> DEAD, FAILED",
		"NOTIFY RUN -> Completed -> DONE, COMPLETED",
		"RESERVE RUN -> Retry {\"backoff\":100000000,\"lastError\":\"warehouse busy\"} -> READY, RUNNING",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the demo's output lacks %q:\n%s", want, text)
		}
	}
	ends := regexp.MustCompile(`(?m)^-- \d\. .*: instance \d+ (\w+),`).FindAllStringSubmatch(text, -1)
	var got []string
	for _, m := range ends {
		got = append(got, m[1])
	}
	if strings.Join(got, ",") != "COMPLETED,FAILED,FAILED" {
		t.Errorf("instances ended %v, want COMPLETED, FAILED, FAILED:\n%s", got, text)
	}
	t.Log(text)
}

package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/fsmgen/fsmgen/runtime/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// The demo relays its runs' messages through a nats-server it starts: the
// message whose acknowledgement it drops is published again and reported a
// duplicate, the consumer receives every message once, and the outbox ends
// empty.
func TestDemo(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	var out, errOut bytes.Buffer
	env := map[string]string{}
	code := run(context.Background(), []string{"-database", url, "-runs", "2", "-messages", "3"}, &out, &errOut, func(k string) string { return env[k] })
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	got := out.String()
	for _, want := range []string{
		"NATS_URL is not set: starting nats-server -js on a free port.\n",
		"2 runs emitted 6 messages into the outbox; relaying them to stream FSMGEN_OUTBOX_DEMO on nats://127.0.0.1:",
		"relay:    message 1 stored as stream seq 1, acknowledgement dropped\n",
		"relay:    message 1 published again: JetStream says duplicate of stream seq 1, stores nothing\n",
		"The consumer received 6 messages, each once (the stream stored 6), every run's in order: true.\n",
		"The outbox (fsmctl outbox status): 0 pending, 6 published.\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if n := len(regexp.MustCompile(`(?m)^consumer: seq `).FindAllString(got, -1)); n != 6 {
		t.Errorf("%d messages consumed, want 6:\n%s", n, got)
	}
}

func TestUsage(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"-runs", "0"}, &out, &errOut, func(string) string { return "" })
	if code != 2 || errOut.String() != "outboxdemo: want -runs and -messages in 1..100 and no arguments\n" {
		t.Errorf("exit %d, stderr %q", code, errOut.String())
	}
}

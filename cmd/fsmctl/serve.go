package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/fsmgen/fsmgen/internal/console"
	"github.com/fsmgen/fsmgen/runtime/admin"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// defaultServeAddr is where fsmctl serve listens unless told otherwise:
// the loopback only.
const defaultServeAddr = "127.0.0.1:8080"

func serveCommand() *command {
	return &command{
		name:     "serve",
		synopsis: "[-database URL] [-addr HOST:PORT] [-actions]",
		summary:  "serve the web console: runs, their diagrams and history, per-machine heatmaps",
		details: `Serve serves a web console for the database's runs until interrupted: the runs
with filters (type, state, status, tenant, age), a run's page (its diagram
with the current state highlighted, history with payloads, attempts, errors,
children, outbox and evidence) and, per registered machine, a live heatmap
(runs per state, median time in each state from the log, stuck and parked
runs).

It listens on 127.0.0.1:8080 unless -addr says otherwise, and on the
loopback answers only to the host names localhost, 127.0.0.1 and ::1. The
console is read-only unless -actions is given: then a run's page can
signal an event, cancel the run and resume a parked run, with POST forms
that carry a CSRF token. They act as runs signal, runs cancel and runs
resume do: as an operator, from the registered table, a guarded row fired
only when its target state is named, each action logged. The console has no
login: keep it on the loopback or behind an authenticating proxy.`,
		flags: func(fs *flag.FlagSet) {
			addDatabaseFlag(fs)
			fs.String("addr", defaultServeAddr, "the address to listen on (host:port; port 0 picks a free one)")
			fs.Bool("actions", false, "allow signal, cancel and resume from the console (POST with a CSRF token)")
			fs.Duration("stuck-after", time.Minute, "a due run no worker has claimed for this long is stuck on the heatmap")
			fs.Duration("refresh", 5*time.Second, "how often a heatmap refreshes itself")
		},
		run: serve,
	}
}

func serve(ctx context.Context, c *cli, fs *flag.FlagSet, args []string) error {
	if len(args) > 0 {
		return usagef(nil, "unexpected arguments %q (flags go before arguments)", args)
	}
	addr := flagString(fs, "addr")
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usagef(nil, "-addr %q: want host:port, such as %s", addr, defaultServeAddr)
	}
	stuckAfter := fs.Lookup("stuck-after").Value.(flag.Getter).Get().(time.Duration)
	refresh := fs.Lookup("refresh").Value.(flag.Getter).Get().(time.Duration)
	if stuckAfter <= 0 {
		return usagef(nil, "-stuck-after %s: want a positive duration", stuckAfter)
	}
	if refresh < 100*time.Millisecond {
		return usagef(nil, "-refresh %s: want at least 100ms", refresh)
	}
	actions := fs.Lookup("actions").Value.String() == "true"
	pool, err := c.openPool(ctx, fs)
	if err != nil {
		return err
	}
	defer pool.Close()
	st := store.New(pool)
	cfg := console.Config{Store: st, StuckAfter: stuckAfter, Refresh: refresh}
	if actions {
		cfg.Actions = admin.New(st)
	}
	loopback := isLoopback(host)
	if loopback {
		cfg.Hosts = []string{"localhost", "127.0.0.1", "::1"}
	}
	srv, err := console.New(cfg)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	mode := "read-only"
	if actions {
		mode = "actions on"
	}
	if !loopback {
		fmt.Fprintf(c.stderr, "fsmctl serve: warning: listening on %s, beyond the loopback; the console has no login\n", ln.Addr())
	}
	fmt.Fprintf(c.stdout, "fsmctl serve: console on http://%s/ (%s); interrupt to stop\n", ln.Addr(), mode)
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutdown); err != nil {
		return fmt.Errorf("serve: shut down: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	fmt.Fprintln(c.stdout, "fsmctl serve: stopped")
	return nil
}

// isLoopback reports whether host names the loopback only.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/fsmgen/fsmgen/internal/console"
	"github.com/fsmgen/fsmgen/internal/safeio"
	"github.com/fsmgen/fsmgen/runtime/admin"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// defaultServeAddr is where fsmctl serve listens unless told otherwise:
// the loopback only.
const defaultServeAddr = "127.0.0.1:8080"

func serveCommand() *command {
	return &command{
		name:     "serve",
		synopsis: "[-database URL] [-addr HOST:PORT] [-hosts NAMES] [-password-file FILE] [-actions]",
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
only when its target state is named, each action logged.

-hosts lists the host names (comma-separated) the console answers to;
requests for any other Host get 421, which defeats DNS rebinding.
-password-file names a file of "user:bcrypt-hash" lines (as htpasswd -nB
USER prints them): every request must then carry the HTTP Basic
credentials of one of its users. -actions on an address beyond the
loopback (0.0.0.0, [::], a LAN address, or no host) is refused unless both
are given; serve the console over TLS (a reverse proxy) when it leaves the
machine, since Basic credentials travel in every request.`,
		flags: func(fs *flag.FlagSet) {
			addDatabaseFlag(fs)
			fs.String("addr", defaultServeAddr, "the address to listen on (host:port; port 0 picks a free one)")
			fs.Bool("actions", false, "allow signal, cancel and resume from the console (POST with a CSRF token)")
			fs.String("hosts", "", "the host names the console answers to, comma-separated (default on the loopback: localhost,127.0.0.1,::1)")
			fs.String("password-file", "", `a file of "user:bcrypt-hash" lines; every request must then log in as one of them (HTTP Basic)`)
			fs.Duration("stuck-after", time.Minute, "a due run no worker has claimed for this long is stuck on the heatmap")
			fs.Duration("refresh", 5*time.Second, "how often a heatmap refreshes itself")
		},
		run: serve,
	}
}

func serve(ctx context.Context, c *cli, fs *flag.FlagSet, args []string) error {
	if len(args) > 0 {
		return usagef(nil, "unexpected arguments %q", args)
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
	var hosts []string
	for _, h := range strings.Split(flagString(fs, "hosts"), ",") {
		if h = strings.TrimSpace(h); h != "" {
			hosts = append(hosts, h)
		}
	}
	var passwords *console.Passwords
	if file := flagString(fs, "password-file"); file != "" {
		data, err := safeio.ReadFile(file, 1<<20)
		if err != nil {
			return usagef(nil, "-password-file: %v", err)
		}
		if passwords, err = console.ParsePasswords(data); err != nil {
			return usagef(nil, "-password-file %s: %v", file, err)
		}
	}
	loopback := isLoopback(host)
	if actions && !loopback && (len(hosts) == 0 || passwords == nil) {
		return usagef(nil, "-actions on %s, beyond the loopback, needs -hosts and -password-file", addr)
	}
	pool, err := c.openPool(ctx, fs)
	if err != nil {
		return err
	}
	defer pool.Close()
	st := store.New(pool)
	cfg := console.Config{Store: st, StuckAfter: stuckAfter, Refresh: refresh, Hosts: hosts, Passwords: passwords}
	if actions {
		cfg.Actions = admin.New(st)
	}
	if loopback && len(hosts) == 0 {
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
	if !loopback && passwords == nil {
		fmt.Fprintf(c.stderr, "fsmctl serve: warning: listening on %s, beyond the loopback, with no -password-file\n", ln.Addr())
	}
	fmt.Fprintf(c.stdout, "fsmctl serve: console on http://%s/ (%s); interrupt to stop\n", ln.Addr(), mode)
	hs := newHTTPServer(srv)
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

// newHTTPServer is the server of the console: a slow client cannot hold a
// connection open, whether it sends its headers or body slowly, reads the
// response slowly or idles between requests.
func newHTTPServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
}

// isLoopback reports whether host names the loopback only.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

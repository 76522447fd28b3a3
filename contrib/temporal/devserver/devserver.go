// Package devserver starts a local Temporal server with the Temporal CLI
// (temporal server start-dev --headless) on free ports, for tests and
// demos.
package devserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/fsmgen/fsmgen/contrib/temporal"
)

// ErrNoCLI is returned when the Temporal CLI is not installed.
var ErrNoCLI = errors.New("the Temporal CLI is not installed: go install github.com/temporalio/cli/cmd/temporal@v1.5.1 (or set TEMPORAL_CLI)")

// CLI finds the Temporal CLI: $TEMPORAL_CLI, PATH, or $HOME/go/bin/temporal.
func CLI() (string, error) {
	if p := os.Getenv("TEMPORAL_CLI"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("temporal"); err == nil {
		return p, nil
	}
	if home, err := os.UserHomeDir(); err == nil {
		p := filepath.Join(home, "go", "bin", "temporal")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", ErrNoCLI
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Server is a running dev server.
type Server struct {
	// Client is a client on the server.
	Client client.Client
	// HostPort is the server's frontend address, for other clients.
	HostPort string
	cmd      *exec.Cmd
	exited   chan error
}

// Start starts a dev server and returns once it answers a health check,
// or ctx is done. It registers, in every namespace it creates, the search
// attributes that the workflows of contrib/temporal upsert and its Runner
// lists by (--search-attribute NAME=Keyword for each of
// temporal.SearchAttributes). args are added to the
// CLI's command line: by default the dev server keeps its state in memory;
// "--db-filename", FILE keeps it in a SQLite file.
func Start(ctx context.Context, args ...string) (*Server, error) {
	cli, err := CLI()
	if err != nil {
		return nil, err
	}
	var ports [3]int
	for i := range ports {
		if ports[i], err = freePort(); err != nil {
			return nil, err
		}
	}
	cmdline := []string{"server", "start-dev", "--headless", "--ip", "127.0.0.1",
		"--port", fmt.Sprint(ports[0]), "--http-port", fmt.Sprint(ports[1]), "--metrics-port", fmt.Sprint(ports[2]), "--log-level", "error"}
	for _, k := range temporal.SearchAttributes() {
		cmdline = append(cmdline, "--search-attribute", k.GetName()+"=Keyword")
	}
	cmd := exec.Command(cli, append(cmdline, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("devserver: %w", err)
	}
	s := &Server{cmd: cmd, exited: make(chan error, 1), HostPort: fmt.Sprintf("127.0.0.1:%d", ports[0])}
	go func() { s.exited <- cmd.Wait() }()
	for {
		c, err := client.DialContext(ctx, client.Options{HostPort: s.HostPort})
		if err == nil {
			if _, err = c.CheckHealth(ctx, &client.CheckHealthRequest{}); err == nil {
				s.Client = c
				return s, nil
			}
			c.Close()
		}
		select {
		case e := <-s.exited:
			return nil, fmt.Errorf("devserver: temporal server start-dev exited: %v\n%s", e, out.String())
		case <-ctx.Done():
			s.Stop()
			return nil, fmt.Errorf("devserver: not ready: %w (last: %v)\n%s", ctx.Err(), err, out.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Stop closes the client and kills the server.
func (s *Server) Stop() {
	if s.Client != nil {
		s.Client.Close()
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
}

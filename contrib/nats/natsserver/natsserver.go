// Package natsserver starts a local NATS server with JetStream (the
// nats-server binary, -js, a store directory of its own) on a free port,
// for tests and demos. It never uses a server that is already running.
package natsserver

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
)

// EnvBinary names the environment variable that points at the nats-server
// binary when it is not on PATH.
const EnvBinary = "NATS_SERVER"

// ErrNoBinary is returned when no nats-server binary is found.
var ErrNoBinary = errors.New("nats-server is not installed: apt-get install nats-server (Debian, Ubuntu), " +
	"go install github.com/nats-io/nats-server/v2@latest, or set " + EnvBinary + " to the binary")

// Binary finds nats-server: $NATS_SERVER, PATH, then /usr/sbin/nats-server
// (where Debian's package puts it, outside a normal user's PATH).
func Binary() (string, error) {
	if p := os.Getenv(EnvBinary); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("natsserver: %s=%s: %w", EnvBinary, p, err)
		}
		return p, nil
	}
	if p, err := exec.LookPath("nats-server"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/sbin/nats-server"); err == nil {
		return "/usr/sbin/nats-server", nil
	}
	return "", ErrNoBinary
}

// Server is a nats-server process.
type Server struct {
	// Port is the client port; StoreDir the JetStream store directory.
	Port     int
	StoreDir string

	bin    string
	cmd    *exec.Cmd
	exited chan struct{}
	mu     sync.Mutex
	out    bytes.Buffer
}

// URL is the server's client URL.
func (s *Server) URL() string { return fmt.Sprintf("nats://127.0.0.1:%d", s.Port) }

// Start starts a server with JetStream on a port the system picks, its
// store in a new directory under dir, and returns once it reports that it
// is ready, or when ctx is done.
func Start(ctx context.Context, dir string) (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	store, err := os.MkdirTemp(dir, "jetstream-")
	if err != nil {
		return nil, fmt.Errorf("natsserver: %w", err)
	}
	s := &Server{StoreDir: store, bin: bin, Port: -1}
	if err := s.start(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

var listening = regexp.MustCompile(`Listening for client connections on [^\s]*:(\d+)`)

func (s *Server) start(ctx context.Context) error {
	cmd := exec.Command(s.bin, "-a", "127.0.0.1", "-p", strconv.Itoa(s.Port), "-js", "-sd", s.StoreDir, "-n", "fsmgen-test")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return fmt.Errorf("natsserver: %w", err)
	}
	cmd.Stdout = cmd.Stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("natsserver: start %s: %w", s.bin, err)
	}
	s.cmd, s.exited = cmd, make(chan struct{})
	ready := make(chan int, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		port, sent := 0, false
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			s.out.WriteString(line + "\n")
			s.mu.Unlock()
			if m := listening.FindStringSubmatch(line); m != nil {
				port, _ = strconv.Atoi(m[1])
			}
			if !sent && port != 0 && bytes.Contains([]byte(line), []byte("Server is ready")) {
				ready <- port
				sent = true
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		_ = cmd.Wait()
		close(s.exited)
	}()
	select {
	case port := <-ready:
		s.Port = port
		return nil
	case <-s.exited:
		return fmt.Errorf("natsserver: %s exited before it was ready:\n%s", s.bin, s.Output())
	case <-ctx.Done():
		s.Stop()
		return fmt.Errorf("natsserver: not ready: %w\n%s", ctx.Err(), s.Output())
	}
}

// Output is what the server has logged.
func (s *Server) Output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String()
}

// Stop kills the server (SIGKILL, as a crash) and waits for it to exit.
// The store directory stays, for Restart.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}

// Restart starts the server again on the same port with the same store,
// after Stop, and returns once it is ready.
func (s *Server) Restart(ctx context.Context) error {
	if s.cmd != nil {
		return errors.New("natsserver: restart of a running server")
	}
	return s.start(ctx)
}

// Close stops the server and removes its store.
func (s *Server) Close() error {
	s.Stop()
	return os.RemoveAll(filepath.Clean(s.StoreDir))
}

package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Cluster is a throwaway PostgreSQL cluster in a temporary directory,
// reachable only through a unix socket in that directory.
type Cluster struct {
	dir    string
	port   int
	proc   *os.Process
	exited chan struct{} // closed when the server process has exited
	logf   string
}

// ErrNoServerBinaries is matched by errors.Is on the error Start
// returns when it finds no PostgreSQL server binaries to run.
var ErrNoServerBinaries = errors.New("no PostgreSQL server binaries were found")

// findBinDir returns the directory holding initdb and postgres: the one on
// PATH, else the one `pg_config --bindir` names, else the newest
// /usr/lib/postgresql/*/bin.
func findBinDir() (string, error) {
	var looked []string
	has := func(dir string) bool {
		for _, b := range []string{"initdb", "postgres"} {
			if fi, err := os.Stat(filepath.Join(dir, b)); err != nil || fi.IsDir() {
				return false
			}
		}
		return true
	}
	if p, err := exec.LookPath("initdb"); err == nil && has(filepath.Dir(p)) {
		return filepath.Dir(p), nil
	}
	looked = append(looked, "initdb on PATH: not found")
	if p, err := exec.LookPath("pg_config"); err == nil {
		out, err := exec.Command(p, "--bindir").Output()
		dir := strings.TrimSpace(string(out))
		if err == nil && has(dir) {
			return dir, nil
		}
		looked = append(looked, fmt.Sprintf("`pg_config --bindir`: %q has no initdb and postgres", dir))
	} else {
		looked = append(looked, "pg_config on PATH: not found")
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return pgMajor(dirs[i]) > pgMajor(dirs[j]) })
	for _, d := range dirs {
		if has(d) {
			return d, nil
		}
	}
	looked = append(looked, "/usr/lib/postgresql/*/bin: no initdb and postgres")
	return "", fmt.Errorf("%w (looked at %s)", ErrNoServerBinaries, strings.Join(looked, "; "))
}

func pgMajor(bindir string) float64 {
	v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(bindir)), 64)
	return v
}

// Option changes how Start sets the cluster up.
type Option func(*config)

type config struct {
	durable  bool
	settings [][2]string
}

// Durable makes the cluster durable: initdb syncs the new data directory,
// and the server runs with fsync, synchronous_commit and full_page_writes
// on, PostgreSQL's defaults, so that a committed transaction survives a
// crash of the machine. Without it the three are off, which is faster and
// loses committed data on such a crash; tests want that, benchmarks want
// Durable.
func Durable() Option { return func(c *config) { c.durable = true } }

// Setting passes a server setting on postgres's command line (-c
// name=value), after the ones Start sets itself, so that it wins over them;
// for example Setting("shared_preload_libraries", "pg_stat_statements").
func Setting(name, value string) Option {
	return func(c *config) { c.settings = append(c.settings, [2]string{name, value}) }
}

// Start starts a throwaway cluster: it finds
// the server binaries (initdb on PATH, then `pg_config --bindir`, then the
// newest /usr/lib/postgresql/*/bin), runs initdb in a new temporary
// directory, as the postgres system user when the process runs as root, and
// starts postgres on a unix socket in that directory, without fsync unless
// [Durable] is given. It returns once the server accepts connections. The
// caller must call Stop, which also removes the directory; if the process
// dies first, the server follows it. Without binaries the error matches
// ErrNoServerBinaries.
func Start(ctx context.Context, opts ...Option) (*Cluster, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	bindir, err := findBinDir()
	if err != nil {
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	return start(ctx, bindir, cfg)
}

// URL returns the connection URL of the cluster's postgres database, as
// user postgres over the cluster's unix socket.
func (c *Cluster) URL() string {
	return fmt.Sprintf("postgres://postgres@/postgres?host=%s&port=%d&sslmode=disable", url.QueryEscape(c.dir), c.port)
}

// Dir returns the directory the cluster lives in: its data directory,
// socket and log.
func (c *Cluster) Dir() string { return c.dir }

// Stop shuts the server down (a fast shutdown, then a kill after 30 s) and
// removes its directory.
func (c *Cluster) Stop() error {
	if err := c.stop(); err != nil {
		return fmt.Errorf("pgcluster: stop cluster: %w", err)
	}
	return nil
}

// start runs initdb and starts postgres in a new temporary directory,
// as the postgres system user when the process runs as root.
func start(ctx context.Context, bindir string, cfg config) (c *Cluster, err error) {
	sweepStale()
	dir, err := os.MkdirTemp("", "fsmgen-pgcluster-")
	if err != nil {
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("pgcluster: %w: the process runs as root, which initdb refuses, and there is no postgres system user to run the server as (%v)", ErrNoServerBinaries, err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, fmt.Errorf("pgcluster: hand %s to the postgres user: %w", dir, err)
		}
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	data := filepath.Join(dir, "data")
	logf := filepath.Join(dir, "postgres.log")
	c = &Cluster{dir: dir, port: 5432, exited: make(chan struct{}), logf: logf}

	initArgs := []string{"-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-locale"}
	if !cfg.durable {
		initArgs = append(initArgs, "--no-sync")
	}
	initdb := exec.CommandContext(ctx, filepath.Join(bindir, "initdb"), initArgs...)
	initdb.Dir = dir
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("pgcluster: initdb: %w", ctx.Err())
		}
		return nil, fmt.Errorf("pgcluster: %s: %w\n%s", strings.Join(initdb.Args, " "), err, out)
	}

	logFile, err := os.Create(logf)
	if err != nil {
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	defer logFile.Close()
	durability := "off"
	if cfg.durable {
		durability = "on"
	}
	args := []string{"-D", data,
		"-k", dir, "-p", strconv.Itoa(c.port),
		"-c", "listen_addresses=",
		"-c", "fsync=" + durability, "-c", "synchronous_commit=" + durability, "-c", "full_page_writes=" + durability,
		"-c", "max_connections=300",
		"-c", "log_min_messages=warning",
	}
	for _, s := range cfg.settings {
		args = append(args, "-c", s[0]+"="+s[1])
	}
	cmd := exec.Command(filepath.Join(bindir, "postgres"), args...)
	cmd.Dir = dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	// Pdeathsig stops the server if this process dies without running
	// teardown (a panic in a test, a kill). It is tied to the thread that
	// started the child, so that thread stays locked until the child exits.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGQUIT, Setpgid: true}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			runtime.UnlockOSThread()
			started <- err
			close(c.exited)
			return
		}
		started <- nil
		_ = cmd.Wait()
		close(c.exited)
		runtime.UnlockOSThread()
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("pgcluster: start postgres: %w", err)
	}
	c.proc = cmd.Process
	if err := c.waitReady(ctx, 60*time.Second); err != nil {
		_ = c.stop()
		return nil, err
	}
	return c, nil
}

// DSN returns the connection string of database name on the cluster, as
// user postgres over its unix socket.
func (c *Cluster) DSN(name string) string {
	return fmt.Sprintf("host=%s port=%d user=postgres dbname=%s sslmode=disable", c.dir, c.port, name)
}

func (c *Cluster) waitReady(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		conn, err := pgx.Connect(cctx, c.DSN("postgres"))
		if err == nil {
			conn.Close(cctx)
			cancel()
			return nil
		}
		cancel()
		select {
		case <-c.exited:
			return fmt.Errorf("pgcluster: postgres exited during start-up:\n%s", c.logTail())
		case <-ctx.Done():
			return fmt.Errorf("pgcluster: wait for postgres: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pgcluster: postgres not ready after %v: %v\n%s", limit, err, c.logTail())
		}
	}
}

func (c *Cluster) logTail() string {
	b, _ := os.ReadFile(c.logf)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// stop shuts the server down (fast shutdown, then a kill after 30 s) and
// removes the directory.
func (c *Cluster) stop() error {
	var errs []error
	if c.proc != nil {
		_ = c.proc.Signal(syscall.SIGINT)
		select {
		case <-c.exited:
		case <-time.After(30 * time.Second):
			_ = c.proc.Kill()
			<-c.exited
			errs = append(errs, fmt.Errorf("postgres in %s ignored the fast shutdown and was killed", c.dir))
		}
	}
	if err := os.RemoveAll(c.dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// sweepStale removes the directories of clusters whose test binary died
// without stopping them (a panic, a kill): older than ten minutes, and with
// no live server in them.
func sweepStale() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "fsmgen-pgcluster-*"))
	for _, d := range dirs {
		fi, err := os.Stat(d)
		if err != nil || time.Since(fi.ModTime()) < 10*time.Minute {
			continue
		}
		if pid, err := os.ReadFile(filepath.Join(d, "data", "postmaster.pid")); err == nil {
			first, _, _ := strings.Cut(string(pid), "\n")
			if n, err := strconv.Atoi(strings.TrimSpace(first)); err == nil && syscall.Kill(n, 0) == nil {
				continue // still running
			}
		}
		_ = os.RemoveAll(d)
	}
}

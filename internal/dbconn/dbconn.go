package dbconn

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ConnectTimeout bounds the first connection to the database.
const ConnectTimeout = 15 * time.Second

// sslModes are the values libpq and pgx accept for sslmode.
var sslModes = []string{"disable", "allow", "prefer", "require", "verify-ca", "verify-full"}

// Check reports what is wrong with a connection string, naming
// the part at fault and never echoing a password; source names where the
// string came from (DATABASE_URL or -database).
func Check(source, conn string) error {
	scheme, _, isURL := strings.Cut(conn, "://")
	if !isURL {
		return nil // a key=value string: pgx's parser reports its errors
	}
	if scheme != "postgres" && scheme != "postgresql" {
		return fmt.Errorf("%s: unsupported scheme %q: want postgres:// or postgresql://", source, scheme)
	}
	u, err := url.Parse(conn)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // url.Error repeats the whole string, password included
		}
		return fmt.Errorf("%s is not a valid URL: %v", source, err)
	}
	for _, host := range strings.Split(u.Host, ",") {
		if i := strings.LastIndex(host, ":"); i >= 0 && !strings.HasSuffix(host, "]") {
			port := host[i+1:]
			n, err := strconv.Atoi(port)
			switch {
			case port == "":
				return fmt.Errorf("%s: empty port after host %q", source, host[:i])
			case err != nil:
				return fmt.Errorf("%s: port %q is not a number", source, port)
			case n < 1 || n > 65535:
				return fmt.Errorf("%s: port %d is out of range 1..65535", source, n)
			}
		}
	}
	if strings.Count(strings.Trim(u.Path, "/"), "/") > 0 {
		return fmt.Errorf("%s: database name %q has a slash: the path is one database name", source, strings.TrimPrefix(u.Path, "/"))
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return fmt.Errorf("%s: malformed query parameters: %v", source, err)
	}
	if m := q.Get("sslmode"); m != "" && !contains(sslModes, m) {
		return fmt.Errorf("%s: sslmode %q is not one of %s", source, m, strings.Join(sslModes, ", "))
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// ParseConfig parses a connection string into a pool configuration, with
// errors that name the part at fault and never the password.
func ParseConfig(source, conn string) (*pgxpool.Config, error) {
	if err := Check(source, conn); err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(conn)
	if err != nil {
		var pe *pgconn.ParseConfigError
		if errors.As(err, &pe) {
			// The message after the (redacted) connection string says what is
			// wrong; leave the string out altogether.
			msg := pe.Error()
			if i := strings.LastIndex(msg, "`: "); i >= 0 {
				msg = msg[i+3:]
			}
			return nil, fmt.Errorf("%s: %s", source, msg)
		}
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	return cfg, nil
}

// Describe names the server and database of cfg for messages, without the
// password.
func Describe(cfg *pgxpool.Config) string {
	cc := cfg.ConnConfig
	host := cc.Host
	if strings.HasPrefix(host, "/") {
		host = "socket in " + host
	}
	return fmt.Sprintf("database %q on %s port %d as user %q", cc.Database, host, cc.Port, cc.User)
}

// Connect opens a pool on the database conn names and checks that it
// answers. Each of opts may change the pool's configuration first (set a
// session parameter such as lock_timeout in ConnConfig.RuntimeParams).
func Connect(ctx context.Context, source, conn string, opts ...func(*pgxpool.Config)) (*pgxpool.Pool, error) {
	cfg, err := ParseConfig(source, conn)
	if err != nil {
		return nil, err
	}
	if cfg.MaxConns > 8 {
		cfg.MaxConns = 8
	}
	for _, opt := range opts {
		opt(cfg)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to the %s that %s names: %w", Describe(cfg), source, err)
	}
	pctx, cancel := context.WithTimeout(ctx, ConnectTimeout)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("connect to the %s that %s names: %w", Describe(cfg), source, err)
	}
	return pool, nil
}

// PGEnv lists the libpq environment variables FromPGEnv reads, each with
// the connection parameter it sets, in the order they are written.
var PGEnv = [][2]string{
	{"PGHOST", "host"}, {"PGHOSTADDR", "hostaddr"}, {"PGPORT", "port"}, {"PGDATABASE", "dbname"},
	{"PGUSER", "user"}, {"PGPASSWORD", "password"}, {"PGPASSFILE", "passfile"},
	{"PGSERVICE", "service"}, {"PGSERVICEFILE", "servicefile"},
	{"PGSSLMODE", "sslmode"}, {"PGSSLCERT", "sslcert"}, {"PGSSLKEY", "sslkey"},
	{"PGSSLROOTCERT", "sslrootcert"}, {"PGSSLPASSWORD", "sslpassword"},
	{"PGAPPNAME", "application_name"}, {"PGCONNECT_TIMEOUT", "connect_timeout"},
	{"PGTARGETSESSIONATTRS", "target_session_attrs"},
}

// FromPGEnv builds a key=value connection string from the libpq
// environment variables (PGHOST, PGPORT, PGUSER, PGDATABASE, PGPASSWORD,
// PGSSLMODE and the others of PGEnv) that getenv returns non-empty, and
// names them as the source: "PGHOST, PGUSER". Both are empty when none is
// set. Values are quoted, so that spaces and quotes in them survive.
func FromPGEnv(getenv func(string) string) (conn, source string) {
	var parts, names []string
	for _, kv := range PGEnv {
		v := getenv(kv[0])
		if v == "" {
			continue
		}
		names = append(names, kv[0])
		parts = append(parts, kv[1]+"='"+strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v)+"'")
	}
	if len(parts) == 0 {
		return "", ""
	}
	return strings.Join(parts, " "), strings.Join(names, ", ")
}

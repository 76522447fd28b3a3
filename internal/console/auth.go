package console

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"golang.org/x/crypto/bcrypt"
)

// ErrPasswordFile reports a password file the console cannot use.
var ErrPasswordFile = errors.New("console: password file")

// Passwords are the operators a console admits: user names with bcrypt
// hashes of their passwords, as in a file of htpasswd -B lines
// ("user:$2y$..."). A console with Passwords asks every request for HTTP
// Basic credentials.
type Passwords struct {
	hashes map[string][]byte
	// verified holds, per user, the SHA-256 of the password last checked
	// against the hash, so that bcrypt runs once per user and password
	// rather than once per request.
	mu       sync.Mutex
	verified map[string][sha256.Size]byte
}

// dummyHash is what a user name not in the file is checked against, so
// that an unknown user costs what a known one does.
var dummyHash, _ = bcrypt.GenerateFromPassword([]byte("no such user"), bcrypt.MinCost)

// ParsePasswords reads a password file: one "user:bcrypt-hash" a line,
// blank lines and lines starting with # ignored. Only bcrypt hashes are
// accepted ($2a$, $2b$, $2y$), as htpasswd -B writes them.
func ParsePasswords(data []byte) (*Passwords, error) {
	p := &Passwords{hashes: map[string][]byte{}, verified: map[string][sha256.Size]byte{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		user, hash, ok := strings.Cut(line, ":")
		if !ok || user == "" {
			return nil, fmt.Errorf("%w: line %d: want user:bcrypt-hash", ErrPasswordFile, n)
		}
		if _, err := bcrypt.Cost([]byte(hash)); err != nil {
			return nil, fmt.Errorf("%w: line %d: user %q: not a bcrypt hash (make one with htpasswd -nB %s)", ErrPasswordFile, n, user, user)
		}
		if _, dup := p.hashes[user]; dup {
			return nil, fmt.Errorf("%w: line %d: user %q twice", ErrPasswordFile, n, user)
		}
		p.hashes[user] = []byte(hash)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPasswordFile, err)
	}
	if len(p.hashes) == 0 {
		return nil, fmt.Errorf("%w: no user", ErrPasswordFile)
	}
	return p, nil
}

// admits reports whether r carries the Basic credentials of a user.
func (p *Passwords) admits(r *http.Request) bool {
	user, pass, ok := r.BasicAuth()
	if !ok {
		return false
	}
	sum := sha256.Sum256([]byte(pass))
	p.mu.Lock()
	last, seen := p.verified[user]
	p.mu.Unlock()
	if seen && subtle.ConstantTimeCompare(last[:], sum[:]) == 1 {
		return true
	}
	hash, known := p.hashes[user]
	if !known {
		_ = bcrypt.CompareHashAndPassword(dummyHash, []byte(pass))
		return false
	}
	if bcrypt.CompareHashAndPassword(hash, []byte(pass)) != nil {
		return false
	}
	p.mu.Lock()
	p.verified[user] = sum
	p.mu.Unlock()
	return true
}

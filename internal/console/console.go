package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/runtime/store"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// ContentSecurityPolicy is the policy every response of the console
// carries: scripts, styles and images from the console itself only, no
// inline script or style, no plugin, no framing, forms posted back to it.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// csrfCookie names the cookie that holds a browser's CSRF secret.
const csrfCookie = "fsmctl_console_csrf"

// Config configures a console.
type Config struct {
	// Store reads runs; its pool serves the console's own queries.
	Store *store.Store
	// Actions performs signal, cancel and resume. Nil makes the console
	// read-only: it offers no action and refuses every POST with 403.
	Actions Actions
	// Hosts, when not empty, are the only host names (without port) the
	// console answers to; other Host headers get 421. fsmctl serve sets
	// localhost, 127.0.0.1 and ::1 when it listens on the loopback, so that
	// a page of another site cannot reach it through DNS rebinding.
	Hosts []string
	// Passwords, when set, are the operators the console admits: every
	// request must carry the HTTP Basic credentials of one of them, or
	// gets 401.
	Passwords *Passwords
	// StuckAfter is how long a due run may wait for a worker before the
	// heatmap calls it stuck; default one minute.
	StuckAfter time.Duration
	// Refresh is how often a machine's heatmap refreshes itself; default
	// five seconds.
	Refresh time.Duration
	// PageSize is the number of runs per page of the list; default 50, at
	// most 9999.
	PageSize int
	// HistoryPageSize is the number of log rows, and of evidence records,
	// per page of a run's page; default 500.
	HistoryPageSize int
}

// Server is the console: an http.Handler.
type Server struct {
	cfg    Config
	st     *store.Store
	pool   *pgxpool.Pool
	secret []byte
	pages  map[string]*template.Template
	mux    *http.ServeMux
}

// New returns the console of cfg.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, errors.New("console: no store")
	}
	if cfg.StuckAfter <= 0 {
		cfg.StuckAfter = time.Minute
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = 5 * time.Second
	}
	if cfg.PageSize <= 0 {
		cfg.PageSize = 50
	}
	if cfg.HistoryPageSize <= 0 {
		cfg.HistoryPageSize = 500
	}
	// A page of the list reads one run more than it shows, to know
	// whether there is another page; the store reads at most 10000.
	if cfg.PageSize > 9999 || cfg.HistoryPageSize > 10000 {
		return nil, fmt.Errorf("console: page size %d, history page size %d: want at most 9999 and 10000", cfg.PageSize, cfg.HistoryPageSize)
	}
	s := &Server{cfg: cfg, st: cfg.Store, pool: cfg.Store.Pool(), secret: make([]byte, 32), pages: map[string]*template.Template{}}
	if _, err := rand.Read(s.secret); err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	for _, page := range []string{"runs", "run", "machines", "machine", "error", "bulk"} {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+page+".html")
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", page, err)
		}
		s.pages[page] = t
	}
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/runs", http.StatusSeeOther)
	})
	mux.HandleFunc("GET /runs", s.listRuns)
	mux.HandleFunc("GET /runs/{id}", s.showRun)
	mux.HandleFunc("POST /runs/{id}/{action}", s.act)
	mux.HandleFunc("GET /runs/bulk/{action}", s.confirmBulk)
	mux.HandleFunc("POST /runs/bulk/{action}", s.doBulk)
	mux.HandleFunc("GET /machines", s.listMachines)
	mux.HandleFunc("GET /machines/{type}/{version}", s.showMachine)
	mux.HandleFunc("GET /machines/{type}/{version}/heat.json", s.heatJSON)
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			s.refusePost(w, r)
			return
		}
		s.fail(w, r, http.StatusNotFound, "no such page: "+r.URL.Path)
	})
	s.mux = mux
	return s, nil
}

// ReadOnly reports whether the console refuses actions.
func (s *Server) ReadOnly() bool { return s.cfg.Actions == nil }

// ServeHTTP implements http.Handler: every response carries the
// Content-Security-Policy and the headers that keep the console out of
// frames, sniffing and referrers.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	// same-origin, not no-referrer: under no-referrer a browser sends
	// "Origin: null" with the console's own form posts, which checkCSRF
	// refuses; other sites still get no referrer.
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	if len(s.cfg.Hosts) > 0 && !s.hostAllowed(r.Host) {
		http.Error(w, "misdirected request: this console answers to "+strings.Join(s.cfg.Hosts, ", "), http.StatusMisdirectedRequest)
		return
	}
	if s.cfg.Passwords != nil && !s.cfg.Passwords.admits(r) {
		h.Set("WWW-Authenticate", `Basic realm="fsmctl console", charset="UTF-8"`)
		http.Error(w, "unauthorized: this console asks for a user and password", http.StatusUnauthorized)
		return
	}
	s.mux.ServeHTTP(w, r)
}

func (s *Server) hostAllowed(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	for _, allowed := range s.cfg.Hosts {
		if strings.EqualFold(host, allowed) {
			return true
		}
	}
	return false
}

// csrfToken returns the token the forms of this browser carry, setting
// the browser's secret cookie when it has none.
func (s *Server) csrfToken(w http.ResponseWriter, r *http.Request) string {
	if s.ReadOnly() {
		return ""
	}
	c, err := r.Cookie(csrfCookie)
	value := ""
	if err == nil && len(c.Value) == 32 {
		value = c.Value
	} else {
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		value = hex.EncodeToString(b)
		http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: value, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	}
	return s.tokenFor(value)
}

func (s *Server) tokenFor(cookie string) string {
	return s.sign("csrf", cookie)
}

// sign returns the HMAC, under the process's key, of parts for purpose.
func (s *Server) sign(purpose string, parts ...string) string {
	m := hmac.New(sha256.New, s.secret)
	m.Write([]byte(purpose))
	for _, p := range parts {
		m.Write([]byte{0})
		m.Write([]byte(p))
	}
	return hex.EncodeToString(m.Sum(nil))
}

// checkCSRF reports why a POST is refused, or "" to accept it: it must
// come from a page of the console (Origin, Sec-Fetch-Site) and carry the
// token of the browser's cookie.
func (s *Server) checkCSRF(r *http.Request) string {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return "cross-site request refused (Sec-Fetch-Site: " + site + ")"
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		u, err := url.Parse(origin)
		if err != nil || !strings.EqualFold(u.Host, r.Host) {
			return "cross-origin request refused (Origin " + origin + ")"
		}
	}
	c, err := r.Cookie(csrfCookie)
	if err != nil || c.Value == "" {
		return "missing CSRF cookie: reload the run's page and try again"
	}
	if !hmac.Equal([]byte(r.PostFormValue("csrf")), []byte(s.tokenFor(c.Value))) {
		return "invalid CSRF token: reload the run's page and try again"
	}
	return ""
}

// refusePost answers a POST to a read-only console, or to no action.
func (s *Server) refusePost(w http.ResponseWriter, r *http.Request) {
	if s.ReadOnly() {
		s.fail(w, r, http.StatusForbidden, readOnlyMessage)
		return
	}
	w.Header().Set("Allow", "GET, HEAD")
	s.fail(w, r, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed on "+r.URL.Path)
}

// readOnlyMessage is what a POST to a read-only console answers.
const readOnlyMessage = "this console is read-only: actions are off (start it with fsmctl serve -actions)"

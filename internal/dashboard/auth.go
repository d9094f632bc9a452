package dashboard

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// Limits of the login.
const (
	// DefaultSessionTTL is how long a login lasts.
	DefaultSessionTTL = 12 * time.Hour
	// maxSessions bounds the sessions kept; a login past it drops the one
	// closest to its end.
	maxSessions = 10000
	// maxChecks bounds the password checks running at once: each is
	// costly, and logins must not take every core from the jobs.
	maxChecks = 2
	// maxForm bounds the body of a POST.
	maxForm = 64 << 10
	// sessionCookie holds the session id.
	sessionCookie = "scheduler_session"
)

// AuthConfig configures Auth. Zero values select the defaults shown.
type AuthConfig struct {
	// HTTP holds the credentials, whether actions are enabled, the host
	// names and the trusted proxies. Without a credential every page reads
	// without a login and no action exists.
	HTTP config.HTTPSettings
	// SessionTTL is how long a login lasts. Default: DefaultSessionTTL.
	SessionTTL time.Duration
	Clock      clock.Clock  // Default: clock.Real{}.
	Logger     *slog.Logger // Default: discard.
}

// Auth guards the dashboard: each request's Host, the login and its
// limits, the logout, each request's session, and an action's checks
// (enabled, logged in, same origin, CSRF token).
//
// Sessions live in this process's memory: a restart logs everyone out,
// and daemons behind one address do not share them. A session is a random
// id in a cookie (HttpOnly, SameSite=Strict, Secure over TLS), valid for
// SessionTTL, with a CSRF token every POST carries. Auth is safe for
// concurrent use.
type Auth struct {
	cfg AuthConfig
	log *slog.Logger
	cop *http.CrossOriginProtection

	login   *template.Template
	clients clients
	checks  chan struct{} // a slot per password check running
	// checkFunc checks credentials: check, or a test's spy.
	checkFunc func(token, user, password string) string

	mu       sync.Mutex
	sessions map[string]*session
	failures map[string]*failures        // by "address " + addressKey, or "browser " + its id
	accounts map[string]*accountFailures // by accountKey
}

// session is one login.
type session struct {
	who     string // a user's name, or config.TokenUser
	csrf    string
	expires time.Time
	flash   string // the message of the last action, shown by the next page
}

// NewAuth returns the guard of cfg.
func NewAuth(cfg AuthConfig) (*Auth, error) {
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = DefaultSessionTTL
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	t, err := template.New("login").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/login.html")
	if err != nil {
		return nil, fmt.Errorf("dashboard: template login: %w", err)
	}
	a := &Auth{cfg: cfg, log: cfg.Logger.With("component", "dashboard"), cop: http.NewCrossOriginProtection(), login: t,
		clients: newClients(cfg.HTTP), checks: make(chan struct{}, maxChecks),
		sessions: map[string]*session{}, failures: map[string]*failures{}, accounts: map[string]*accountFailures{}}
	a.checkFunc = a.check
	return a, nil
}

// sessionKey keys the request's Session in its context.
type sessionKey struct{}

// Session returns the Session Handler put in r's context, or the zero
// Session; it is a Config.SessionFunc.
func (a *Auth) Session(r *http.Request) Session {
	s, _ := r.Context().Value(sessionKey{}).(Session)
	return s
}

// Handler returns pages behind the guard, with the login, the logout and,
// unless actions is nil, /actions/NAME. Every response carries the security
// headers. With credentials, every page but the static files needs a login.
func (a *Auth) Handler(pages http.Handler, actions *Actions) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /login", a.loginPage)
	mux.HandleFunc("POST /login", a.loginPost)
	mux.HandleFunc("POST /logout", a.logout)
	mux.HandleFunc("POST /actions/{action}", func(w http.ResponseWriter, r *http.Request) {
		sess, ok := a.current(r)
		switch {
		case !a.cfg.HTTP.Actions || !a.cfg.HTTP.Credentials() || actions == nil:
			http.Error(w, "actions are disabled: [http] actions = false", http.StatusForbidden)
		case !ok:
			http.Redirect(w, r, "/login", http.StatusSeeOther)
		case !a.checkCSRF(r, sess):
			a.log.WarnContext(r.Context(), "dashboard action refused: wrong csrf token",
				"who", sess.who, "remote_addr", a.clients.addr(r), "path", r.URL.Path)
			http.Error(w, "wrong or missing csrf token: reload the page and try again", http.StatusForbidden)
		default:
			msg, found := actions.do(r.Context(), r.PathValue("action"), r.PostForm, sess.who, a.clients.addr(r))
			if !found {
				http.Error(w, "no action "+r.PathValue("action")+": want trigger, pause, resume, retry, cancel, retry-jobs, discard-jobs or retry-dead", http.StatusNotFound)
				return
			}
			a.setFlash(sess.id, msg)
			http.Redirect(w, r, back(r), http.StatusSeeOther)
		}
	})
	mux.Handle("/static/", pages)
	mux.Handle("GET /favicon.ico", pages)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if !a.cfg.HTTP.Credentials() {
			pages.ServeHTTP(w, r)
			return
		}
		sess, ok := a.current(r)
		if !ok {
			if r.Method == http.MethodGet || r.Method == http.MethodHead {
				http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			http.Redirect(w, r, "/login", http.StatusSeeOther)
			return
		}
		v := Session{Who: sess.who, Actions: a.cfg.HTTP.Actions, CSRF: sess.csrf, Back: r.URL.RequestURI()}
		if !strings.HasPrefix(r.URL.Path, "/static/") {
			v.Flash = a.takeFlash(sess)
		}
		pages.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), sessionKey{}, v)))
	})
	return headers(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !a.clients.hostAllowed(r) {
			a.log.WarnContext(r.Context(), "dashboard request refused: unknown host",
				"remote_addr", a.clients.addr(r), "path", r.URL.Path, "host", r.Host)
			http.Error(w, "misdirected request: this dashboard does not answer to the host "+strconv.Quote(r.Host)+
				": reach it by localhost or an IP address, or add the name to [http] hosts", http.StatusMisdirectedRequest)
			return
		}
		if r.Method == http.MethodPost {
			if err := a.cop.Check(r); err != nil {
				a.log.WarnContext(r.Context(), "dashboard cross-origin post refused",
					"remote_addr", a.clients.addr(r), "path", r.URL.Path, "origin", r.Header.Get("Origin"), "sec_fetch_site", r.Header.Get("Sec-Fetch-Site"))
				http.Error(w, "cross-origin request refused", http.StatusForbidden)
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, maxForm)
		}
		mux.ServeHTTP(w, r)
	}))
}

// loginData is the data of the login page.
type loginData struct {
	Token   bool   // a token_hash is configured: the form asks for it
	Users   bool   // [[http.user]] are configured: the form asks for a name and password
	Next    string // where to go after the login
	User    string // the name typed, kept after a failure
	Problem string // why the last try failed
}

func (a *Auth) loginPage(w http.ResponseWriter, r *http.Request) {
	next := localPath(r.URL.Query().Get("next"))
	if _, ok := a.current(r); ok || !a.cfg.HTTP.Credentials() {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	a.renderLogin(w, r, http.StatusOK, loginData{Next: next})
}

func (a *Auth) renderLogin(w http.ResponseWriter, r *http.Request, status int, d loginData) {
	d.Token, d.Users = !a.cfg.HTTP.TokenHash.IsZero(), len(a.cfg.HTTP.Users) > 0
	now := a.cfg.Clock.Now()
	p := page{Title: "Log in", Now: whenAt(now, time.UTC, now), Data: d}
	var buf bytes.Buffer
	if err := a.login.ExecuteTemplate(&buf, "layout", p); err != nil {
		a.log.ErrorContext(r.Context(), "page not rendered", "page", "login", "err", err)
		http.Error(w, "page not rendered: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	io.Copy(w, &buf)
}

func (a *Auth) loginPost(w http.ResponseWriter, r *http.Request) {
	next := localPath(r.PostFormValue("next"))
	if !a.cfg.HTTP.Credentials() {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	addr := a.clients.addr(r)
	token, user, password := r.PostFormValue("token"), r.PostFormValue("user"), r.PostFormValue("password")
	account := user
	if token != "" {
		account = config.TokenUser
	}
	now := a.cfg.Clock.Now()
	by, accountLimit := "address "+addressKey(addr), accountKey(token, user)
	if id, ok := a.knownBrowser(r, account, now); ok {
		by, accountLimit = "browser "+id, ""
	}
	res, wait, hit := a.reserve(by, accountLimit, now)
	if wait > 0 {
		a.refuseLogin(w, r, addr, account, next, wait, hit)
		return
	}
	select {
	case a.checks <- struct{}{}:
	case <-r.Context().Done():
		a.giveBack(res) // not checked
		return
	}
	who := a.checkFunc(token, user, password)
	<-a.checks
	if who == "" {
		attrs := []any{"remote_addr", addr}
		if a.knownUser(user) {
			attrs = append(attrs, "user", user)
		}
		a.log.WarnContext(r.Context(), "dashboard login failed", attrs...)
		problem := "Wrong user name or password."
		if token != "" || (user == "" && password == "") {
			problem = "Wrong token."
		}
		a.renderLogin(w, r, http.StatusUnauthorized, loginData{Next: next, User: user, Problem: problem})
		return
	}
	a.giveBack(res)
	sess := a.newSession(who)
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: sess.id, Path: "/", MaxAge: int(a.cfg.SessionTTL / time.Second),
		HttpOnly: true, Secure: overTLS(r), SameSite: http.SameSiteStrictMode})
	if c := a.newBrowserCookie(r, who, now); c != nil {
		http.SetCookie(w, c)
	}
	a.log.InfoContext(r.Context(), "dashboard login", "who", who, "remote_addr", addr)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// refuseLogin answers a login that a limit holds back for wait.
func (a *Auth) refuseLogin(w http.ResponseWriter, r *http.Request, addr, account, next string, wait time.Duration, hit limit) {
	attrs := []any{"remote_addr", addr, "limit", string(hit), "retry_after", wait}
	if a.knownUser(account) || (account == config.TokenUser && !a.cfg.HTTP.TokenHash.IsZero()) {
		attrs = append(attrs, "user", account)
	}
	a.log.WarnContext(r.Context(), "dashboard login refused: too many failures", attrs...)
	in := strings.TrimPrefix(relative(wait), "in ")
	problem := fmt.Sprintf("Too many failed logins from your address: try again in %s.", in)
	switch hit {
	case limitBrowser:
		problem = fmt.Sprintf("Too many failed logins from this browser: try again in %s.", in)
	case limitAccount:
		what := "this user"
		if account == config.TokenUser {
			what = "the token"
		}
		problem = fmt.Sprintf("Too many failed logins for %s from browsers that have not logged in with it before: try again in %s.", what, in)
	}
	w.Header().Set("Retry-After", fmt.Sprint(int(wait.Seconds()+1)))
	a.renderLogin(w, r, http.StatusTooManyRequests, loginData{Next: next, User: r.PostFormValue("user"), Problem: problem})
}

// check returns who the credentials log in as, or "". An unknown user
// costs a hash check too, so that timing tells no name apart.
func (a *Auth) check(token, user, password string) string {
	h := a.cfg.HTTP
	if token != "" {
		if !h.TokenHash.IsZero() && h.TokenHash.Match(token) {
			return config.TokenUser
		}
		return ""
	}
	if user == "" || len(h.Users) == 0 {
		return ""
	}
	found := -1
	for i, u := range h.Users {
		if subtle.ConstantTimeCompare([]byte(u.Name), []byte(user)) == 1 {
			found = i
		}
	}
	if found < 0 {
		h.Users[0].PasswordHash.Match(password) // as long as a known name takes
		return ""
	}
	if !h.Users[found].PasswordHash.Match(password) {
		return ""
	}
	return h.Users[found].Name
}

func (a *Auth) knownUser(name string) bool {
	for _, u := range a.cfg.HTTP.Users {
		if u.Name == name {
			return true
		}
	}
	return false
}

func (a *Auth) logout(w http.ResponseWriter, r *http.Request) {
	sess, ok := a.current(r)
	if !ok {
		http.Redirect(w, r, "/login", http.StatusSeeOther)
		return
	}
	if !a.checkCSRF(r, sess) {
		http.Error(w, "wrong or missing csrf token: reload the page and try again", http.StatusForbidden)
		return
	}
	a.mu.Lock()
	delete(a.sessions, sess.id)
	a.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: overTLS(r), SameSite: http.SameSiteStrictMode})
	a.log.InfoContext(r.Context(), "dashboard logout", "who", sess.who, "remote_addr", a.clients.addr(r))
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// current is the live session of r's cookie, copied.
type current struct {
	id, who, csrf string
}

func (a *Auth) current(r *http.Request) (current, bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" {
		return current{}, false
	}
	now := a.cfg.Clock.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.sessions[c.Value]
	if !ok {
		return current{}, false
	}
	if !now.Before(s.expires) {
		delete(a.sessions, c.Value)
		return current{}, false
	}
	return current{id: c.Value, who: s.who, csrf: s.csrf}, true
}

// checkCSRF reports whether r's csrf field is sess's token.
func (a *Auth) checkCSRF(r *http.Request, sess current) bool {
	got := r.PostFormValue("csrf")
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(sess.csrf)) == 1
}

// newSession starts a session for who.
func (a *Auth) newSession(who string) current {
	id, csrf := randomToken(), randomToken()
	now := a.cfg.Clock.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.sessions) >= maxSessions {
		var oldest string
		for k, s := range a.sessions {
			if !now.Before(s.expires) {
				delete(a.sessions, k)
				continue
			}
			if oldest == "" || s.expires.Before(a.sessions[oldest].expires) {
				oldest = k
			}
		}
		if len(a.sessions) >= maxSessions {
			delete(a.sessions, oldest)
		}
	}
	a.sessions[id] = &session{who: who, csrf: csrf, expires: now.Add(a.cfg.SessionTTL)}
	return current{id: id, who: who, csrf: csrf}
}

// setFlash keeps msg for the next page sess reads.
func (a *Auth) setFlash(id, msg string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if s, ok := a.sessions[id]; ok {
		s.flash = msg
	}
}

// takeFlash returns sess's flash message and forgets it.
func (a *Auth) takeFlash(sess current) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.sessions[sess.id]
	if !ok {
		return ""
	}
	msg := s.flash
	s.flash = ""
	return msg
}

// overTLS reports whether the browser used TLS, directly or through a
// proxy that says so; it only decides the cookie's Secure flag.
func overTLS(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// randomToken is 32 random bytes in URL-safe base64.
func randomToken() string {
	var b [32]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// back is where an action sends the browser: the form's back field, else
// the posting page, when a local path; else "/".
func back(r *http.Request) string {
	if b := r.PostFormValue("back"); b != "" {
		return localPath(b)
	}
	if ref, err := url.Parse(r.Referer()); err == nil && ref.Host == r.Host && ref.Path != "" {
		return localPath(ref.RequestURI())
	}
	return "/"
}

// localPath returns p when it is a local path, else "/", so that a
// redirect never leaves the dashboard.
func localPath(p string) string {
	if p == "" || p[0] != '/' || strings.HasPrefix(p, "//") || strings.ContainsAny(p, "\\\r\n\t") {
		return "/"
	}
	u, err := url.Parse(p)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil {
		return "/"
	}
	return u.RequestURI()
}

package dashboard

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/scheduler-run/scheduler/schedule/config"
)

// Limits of the login. A failure is counted before the password check and
// given back when it is right, so that concurrent requests cannot all pass
// a limit none has counted yet.
//
// A browser new to the account counts against its address's limit, a wall
// for the rest of loginWindow, and the account's, a growing wait shared by
// attackers on many addresses. A browser that logged in before (its signed
// browserCookie) counts against its own limit only, so that the owner
// still logs in while others guess.
const (
	// maxLoginFailures from one address or known browser within
	// loginWindow make it wait for the rest of the window.
	maxLoginFailures = 5
	loginWindow      = 5 * time.Minute
	// After userFreeFailures to one account from new browsers, each login
	// waits userDelay, doubling per failure up to userMaxDelay. The count
	// restarts after userQuiet without a failure.
	userFreeFailures = 10
	userDelay        = time.Minute
	userMaxDelay     = 15 * time.Minute
	userQuiet        = 24 * time.Hour
	// maxTracked bounds the addresses, browsers and names counted.
	maxTracked = 10000
	// browserCookie marks a browser that logged in to an account, for
	// browserTTL after its last login.
	browserCookie = "scheduler_browser"
	browserTTL    = 30 * 24 * time.Hour
)

// failures counts the failed logins of one address or browser since start.
type failures struct {
	start time.Time
	n     int
}

// accountFailures counts one account's failed logins from new browsers.
type accountFailures struct {
	n    int
	last time.Time // of the last failure counted
	next time.Time // no login is checked before
}

// reservation is a failure counted before its check.
type reservation struct {
	by       string    // key in Auth.failures
	start    time.Time // of the window it was counted in
	account  string    // key in Auth.accounts; "" when not counted there
	prevNext time.Time // the account's next before this failure
	setNext  time.Time // the account's next this failure set; zero: none
}

// limit names the limit a login hit, in its refusal.
type limit string

const (
	limitAddress limit = "address"
	limitBrowser limit = "browser"
	limitAccount limit = "account"
)

// accountKey keys an account's failures: the token, or the name typed,
// known or not, so that the answers tell no name apart.
func accountKey(token, user string) string {
	if token != "" {
		return config.TokenUser
	}
	return "user " + user
}

// reserve counts a failed login by by (an address or browser) and, unless
// "", to account, before its check. When a limit is reached it counts
// nothing and returns the wait and the limit.
func (a *Auth) reserve(by, account string, now time.Time) (reservation, time.Duration, limit) {
	a.mu.Lock()
	defer a.mu.Unlock()
	f := a.failures[by]
	if f == nil || !now.Before(f.start.Add(loginWindow)) {
		if f == nil && len(a.failures) >= maxTracked {
			a.evictFailures(now)
		}
		f = &failures{start: now}
		a.failures[by] = f
	}
	if f.n >= maxLoginFailures {
		l := limitAddress
		if strings.HasPrefix(by, "browser ") {
			l = limitBrowser
		}
		return reservation{}, f.start.Add(loginWindow).Sub(now), l
	}
	res := reservation{by: by, start: f.start}
	if account != "" {
		u := a.accounts[account]
		if u == nil || !now.Before(u.last.Add(userQuiet)) {
			if u == nil && len(a.accounts) >= maxTracked {
				a.evictAccounts(now)
			}
			u = &accountFailures{}
			a.accounts[account] = u
		}
		if now.Before(u.next) {
			return reservation{}, u.next.Sub(now), limitAccount
		}
		u.n++
		u.last = now
		res.account, res.prevNext = account, u.next
		if u.n >= userFreeFailures {
			u.next = now.Add(accountWait(u.n))
			res.setNext = u.next
		}
	}
	f.n++
	return res, 0, ""
}

// accountWait is the wait after an account's nth failure.
func accountWait(n int) time.Duration {
	d := userDelay << min(n-userFreeFailures, 10)
	return min(d, userMaxDelay)
}

// giveBack takes back res: its login was right, or was never checked.
func (a *Auth) giveBack(res reservation) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if f := a.failures[res.by]; f != nil && f.start.Equal(res.start) && f.n > 0 {
		f.n--
	}
	if u := a.accounts[res.account]; u != nil && res.account != "" {
		if u.n > 0 {
			u.n--
		}
		if !res.setNext.IsZero() && u.next.Equal(res.setNext) {
			u.next = res.prevNext
		}
	}
}

// evictFailures makes room: ended windows first, then any. a.mu is held.
func (a *Auth) evictFailures(now time.Time) {
	for k, f := range a.failures {
		if !now.Before(f.start.Add(loginWindow)) {
			delete(a.failures, k)
		}
	}
	for k := range a.failures {
		if len(a.failures) < maxTracked {
			break
		}
		delete(a.failures, k)
	}
}

// evictAccounts makes room: quiet accounts first, then unknown names. The
// config's few accounts are kept: forgetting their failures would give
// guessers a new start. a.mu is held.
func (a *Auth) evictAccounts(now time.Time) {
	for k, u := range a.accounts {
		if !now.Before(u.last.Add(userQuiet)) {
			delete(a.accounts, k)
		}
	}
	for k := range a.accounts {
		if len(a.accounts) < maxTracked {
			break
		}
		if !a.configured(k) {
			delete(a.accounts, k)
		}
	}
}

// configured reports whether account key k is the config's token or user.
func (a *Auth) configured(k string) bool {
	if k == config.TokenUser {
		return !a.cfg.HTTP.TokenHash.IsZero()
	}
	name := strings.TrimPrefix(k, "user ")
	_, ok := a.hashOf(name)
	return ok && name != config.TokenUser
}

// hashOf returns the hash of who's secret, the token's or a user's.
func (a *Auth) hashOf(who string) (string, bool) {
	h := a.cfg.HTTP
	if who == config.TokenUser {
		return h.TokenHash.String(), !h.TokenHash.IsZero()
	}
	for _, u := range h.Users {
		if u.Name == who {
			return u.PasswordHash.String(), true
		}
	}
	return "", false
}

// browserMAC signs who's browser cookie with a key from who's hash: it
// outlives a restart, needs nothing stored, and ends with the password.
func browserMAC(hash, who, expires, nonce string) []byte {
	m := hmac.New(sha256.New, []byte("scheduler dashboard browser\x00"+hash))
	m.Write([]byte(who + "\x00" + expires + "\x00" + nonce))
	return m.Sum(nil)
}

// newBrowserCookie marks r's browser as having logged in as who.
func (a *Auth) newBrowserCookie(r *http.Request, who string, now time.Time) *http.Cookie {
	hash, ok := a.hashOf(who)
	if !ok {
		return nil
	}
	var b [16]byte
	rand.Read(b[:])
	enc := base64.RawURLEncoding
	nonce, expires := enc.EncodeToString(b[:]), strconv.FormatInt(now.Add(browserTTL).Unix(), 10)
	value := strings.Join([]string{enc.EncodeToString([]byte(who)), expires, nonce,
		enc.EncodeToString(browserMAC(hash, who, expires, nonce))}, ".")
	return &http.Cookie{Name: browserCookie, Value: value, Path: "/login", MaxAge: int(browserTTL / time.Second),
		HttpOnly: true, Secure: overTLS(r), SameSite: http.SameSiteStrictMode}
}

// knownBrowser returns r's browser id when its cookie is valid for who's
// present secret.
func (a *Auth) knownBrowser(r *http.Request, who string, now time.Time) (string, bool) {
	c, err := r.Cookie(browserCookie)
	if err != nil {
		return "", false
	}
	parts := strings.Split(c.Value, ".")
	if len(parts) != 4 {
		return "", false
	}
	enc := base64.RawURLEncoding
	name, err := enc.DecodeString(parts[0])
	if err != nil || string(name) != who {
		return "", false
	}
	expires, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || !now.Before(time.Unix(expires, 0)) {
		return "", false
	}
	mac, err := enc.DecodeString(parts[3])
	hash, ok := a.hashOf(who)
	if err != nil || !ok || !hmac.Equal(mac, browserMAC(hash, who, parts[1], parts[2])) {
		return "", false
	}
	return parts[2], true
}

// addressKey keys failed logins: an IPv4 address, or an IPv6 one's /64,
// which one host usually holds whole.
func addressKey(addr string) string {
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return addr
	}
	ip = ip.Unmap()
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}

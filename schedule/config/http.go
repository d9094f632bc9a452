package config

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/scheduler-run/scheduler/internal/passhash"
)

// HTTPSettings is the [http] table: the listener of /metrics, /healthz
// and the dashboard, and who may act on the dashboard.
type HTTPSettings struct {
	// Listen is the host:port to listen on (key listen), overridden by
	// -http. Empty, the default, starts no listener.
	Listen string
	// Dashboard serves the dashboard at / (key dashboard). Default: true.
	Dashboard bool
	// Actions lets a logged-in operator trigger, pause, resume, retry and
	// cancel (key actions). It needs TokenHash or Users. Default: false.
	Actions bool
	// TokenHash is the hash of a token that logs in as "token" (key
	// token_hash, from scheduler -hash-password); zero: none.
	TokenHash passhash.Hash
	// Users are the [[http.user]] tables, in file order.
	Users []HTTPUser
	// Hosts are the lower-case names, besides localhost, IP addresses and
	// the listen address's name, that the dashboard answers to in a Host
	// header (key hosts). Other names are refused, so a hostile page that
	// rebinds its name to this address cannot read the dashboard.
	Hosts []string
	// TrustedProxies are the proxies' addresses and CIDR prefixes (key
	// trusted_proxies). A request from one counts, in login limits and
	// logs, as from the client X-Forwarded-For or Forwarded names.
	TrustedProxies []netip.Prefix
}

// HTTPUser is an [[http.user]] table: a person who may log in.
type HTTPUser struct {
	// Name is the login name (key name): 1 to 64 letters, digits and
	// -_.@, unique, not "token".
	Name string
	// PasswordHash is the password's hash (key password_hash, from
	// scheduler -hash-password). The config never holds a password.
	PasswordHash passhash.Hash
}

// Credentials reports whether anyone can log in: a token or a user.
func (h HTTPSettings) Credentials() bool { return !h.TokenHash.IsZero() || len(h.Users) > 0 }

// Equal reports whether h and o configure the same settings.
func (h HTTPSettings) Equal(o HTTPSettings) bool {
	return h.Listen == o.Listen && h.Dashboard == o.Dashboard && h.Actions == o.Actions &&
		h.TokenHash.Equal(o.TokenHash) && slices.Equal(h.Hosts, o.Hosts) && slices.Equal(h.TrustedProxies, o.TrustedProxies) &&
		slices.EqualFunc(h.Users, o.Users, func(a, b HTTPUser) bool {
			return a.Name == b.Name && a.PasswordHash.Equal(b.PasswordHash)
		})
}

// TokenUser is the name the token logs in as; no [[http.user]] may take it.
const TokenUser = "token"

const maxUserName = 64

// CheckListen checks a listen address (host:port, port 0 for any free
// one) and reports whether it reaches beyond loopback: an empty host, a
// non-loopback address, or a name other than localhost.
func CheckListen(addr string) (public bool, err error) {
	if addr == "" {
		return false, errors.New("empty address: want host:port, such as 127.0.0.1:9464")
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("%q is not host:port, such as 127.0.0.1:9464", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return false, fmt.Errorf("%q: port %q is not a number from 0 to 65535", addr, port)
	}
	if host == "" {
		return true, nil
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return !ip.IsLoopback(), nil
	}
	if host == "localhost" {
		return false, nil
	}
	if !validHostname(host) {
		return false, fmt.Errorf("%q: %q is neither an IP address nor a host name", addr, host)
	}
	return true, nil
}

func validHostname(h string) bool {
	if len(h) > 253 {
		return false
	}
	for _, r := range h {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.':
		default:
			return false
		}
	}
	return true
}

// ErrDashboardNeedsLogin is the error of a login-less dashboard off loopback.
var ErrDashboardNeedsLogin = errors.New("the dashboard listens beyond the loopback interface and asks for no login: " +
	"set token_hash or an [[http.user]] (scheduler -hash-password prints a hash), or dashboard = false")

func (l *loader) loadHosts(p toml.Primitive, w where, cfg *Config) {
	var hosts []string
	if !l.decode(p, &hosts, w) {
		return
	}
	for _, h := range hosts {
		name := strings.ToLower(strings.TrimSuffix(h, "."))
		switch {
		case isIP(name):
			l.errorf(w, "%q is an IP address: the dashboard answers to every IP address already; list names only", h)
		case strings.Contains(h, ":"):
			l.errorf(w, "%q: give the name without a port; the port is not checked", h)
		case name == "" || !validHostname(name):
			l.errorf(w, "%q is not a host name such as scheduler.example.com", h)
		case !slices.Contains(cfg.HTTP.Hosts, name):
			cfg.HTTP.Hosts = append(cfg.HTTP.Hosts, name)
		}
	}
}

func isIP(s string) bool {
	_, err := netip.ParseAddr(strings.Trim(s, "[]"))
	return err == nil
}

func (l *loader) loadProxies(p toml.Primitive, w where, cfg *Config) {
	var proxies []string
	if !l.decode(p, &proxies, w) {
		return
	}
	for _, s := range proxies {
		pre, err := ParseProxy(s)
		if err != nil {
			l.add(w, err)
			continue
		}
		if !slices.Contains(cfg.HTTP.TrustedProxies, pre) {
			cfg.HTTP.TrustedProxies = append(cfg.HTTP.TrustedProxies, pre)
		}
	}
}

// ParseProxy parses a trusted_proxies entry: an IP address (a full-length
// prefix) or a CIDR prefix. IPv4-mapped IPv6 becomes IPv4.
func ParseProxy(s string) (netip.Prefix, error) {
	if ip, err := netip.ParseAddr(s); err == nil && ip.Zone() == "" {
		ip = ip.Unmap()
		return netip.PrefixFrom(ip, ip.BitLen()), nil
	}
	pre, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is neither an IP address nor a CIDR prefix such as 10.0.0.0/8", s)
	}
	if pre.Addr().Is4In6() {
		if pre.Bits() < 96 {
			return netip.Prefix{}, fmt.Errorf("%q: an IPv4-mapped prefix needs at least 96 bits", s)
		}
		pre = netip.PrefixFrom(pre.Addr().Unmap(), pre.Bits()-96)
	}
	return pre.Masked(), nil
}

var userKeys = map[string]bool{"name": true, "password_hash": true}

// loadHTTP decodes the [http] table into cfg.HTTP. An address beyond
// loopback loads with a warning, since the metrics name every schedule
// and task.
func (l *loader) loadHTTP(p toml.Primitive, cfg *Config) {
	cfg.HTTP.Dashboard = true
	w := where{table: "http", path: []string{"http"}}
	var raw rawHTTP
	if !l.decode(p, &raw, w) {
		return
	}
	l.decode(raw.Dashboard, &cfg.HTTP.Dashboard, w.with("dashboard"))
	l.decode(raw.Actions, &cfg.HTTP.Actions, w.with("actions"))
	var token string
	if tw := w.with("token_hash"); l.decode(raw.TokenHash, &token, tw) {
		h, err := passhash.Parse(token)
		if err != nil {
			l.add(tw, err)
		}
		cfg.HTTP.TokenHash = h
	}
	l.loadUsers(raw.User, cfg)
	l.loadHosts(raw.Hosts, w.with("hosts"), cfg)
	l.loadProxies(raw.TrustedProxies, w.with("trusted_proxies"), cfg)
	if aw := w.with("actions"); cfg.HTTP.Actions && !l.failed[pathKey(aw.path)] {
		switch {
		case !cfg.HTTP.Dashboard:
			l.errorf(aw, "actions = true needs the dashboard, which dashboard = false turns off")
		case !cfg.HTTP.Credentials() && !present(raw.TokenHash) && !present(raw.User):
			l.errorf(aw, "actions = true needs a credential: token_hash, or an [[http.user]] with name and password_hash (scheduler -hash-password prints a hash)")
		}
	}
	if !present(raw.Listen) {
		return
	}
	var addr string
	lw := w.with("listen")
	if !l.decode(raw.Listen, &addr, lw) {
		return
	}
	public, err := CheckListen(addr)
	if err != nil {
		l.add(lw, err)
		return
	}
	cfg.HTTP.Listen = addr
	if public {
		if cfg.HTTP.Dashboard && !cfg.HTTP.Credentials() && !present(raw.TokenHash) && !present(raw.User) {
			l.add(lw, ErrDashboardNeedsLogin)
			return
		}
		what := "the metrics"
		if cfg.HTTP.Dashboard {
			what = "the metrics, and the dashboard's login goes over plain HTTP unless a TLS proxy is in front"
		}
		cfg.Warnings = append(cfg.Warnings, l.warning(lw,
			fmt.Errorf("%s listens beyond the loopback interface: anyone who reaches it reads %s", addr, what)))
	}
}

func (l *loader) loadUsers(p toml.Primitive, cfg *Config) {
	var raws []map[string]toml.Primitive
	if !l.decode(p, &raws, where{table: "http", field: "user", path: []string{"http", "user"}}) {
		return
	}
	seen := map[string]int{}
	for i, raw := range raws {
		w := where{table: "http.user", job: fmt.Sprintf("#%d", i+1), path: []string{"http", "user", elem(i)}}
		var u HTTPUser
		nw := w.with("name")
		if l.decode(raw["name"], &u.Name, nw) {
			switch {
			case !validUserName(u.Name):
				l.errorf(nw, "%q: use 1 to %d letters, digits and -_.@", u.Name, maxUserName)
			case u.Name == TokenUser:
				l.errorf(nw, "%q names the token_hash login in the logs: pick another name", u.Name)
			case seen[u.Name] > 0:
				l.errorf(nw, "%q is already the name of [[http.user]] #%d", u.Name, seen[u.Name])
			default:
				seen[u.Name] = i + 1
				w.job = u.Name
			}
		} else if !present(raw["name"]) {
			l.errorf(w, "no name")
		}
		var text string
		hw := w.with("password_hash")
		if l.decode(raw["password_hash"], &text, hw) {
			h, err := passhash.Parse(text)
			if err != nil {
				l.add(hw, err)
			}
			u.PasswordHash = h
		} else if !present(raw["password_hash"]) {
			l.errorf(w, "no password_hash (scheduler -hash-password prints one)")
		}
		for _, k := range slices.Sorted(maps.Keys(raw)) {
			if !userKeys[k] {
				l.errorf(w.with(k), "unknown key %q%s", k, keyHint(k, userKeys))
			}
		}
		if u.Name != "" && !u.PasswordHash.IsZero() {
			cfg.HTTP.Users = append(cfg.HTTP.Users, u)
		}
	}
}

func validUserName(s string) bool {
	if s == "" || len(s) > maxUserName {
		return false
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune("-_.@", r):
		default:
			return false
		}
	}
	return true
}

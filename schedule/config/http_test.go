package config

import (
	"strings"
	"testing"
)

const httpBase = `
[tasks.t]
command = ["true"]

[[schedule]]
name = "s"
cron = "* * * * *"
task = "t"
`

func TestLoadHTTP(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		table   string
		listen  string
		warning bool
		err     string // a substring of the only error, with its line
	}{
		{"absent", ``, "", false, ""},
		{"loopback", "[http]\nlisten = \"127.0.0.1:9464\"\n", "127.0.0.1:9464", false, ""},
		{"loopback v6", "[http]\nlisten = \"[::1]:9464\"\n", "[::1]:9464", false, ""},
		{"localhost", "[http]\nlisten = \"localhost:9464\"\n", "localhost:9464", false, ""},
		{"every interface", "[http]\nlisten = \":9464\"\ndashboard = false\n", ":9464", true, ""},
		{"public address", "[http]\nlisten = \"192.0.2.7:9464\"\ndashboard = false\n", "192.0.2.7:9464", true, ""},
		{"public name", "[http]\nlisten = \"sched.example.com:9464\"\ndashboard = false\n", "sched.example.com:9464", true, ""},
		{"public with a login", "[http]\nlisten = \"0.0.0.0:9464\"\ntoken_hash = \"" + testHash + "\"\n", "0.0.0.0:9464", true, ""},
		{"public dashboard without a login", "[http]\nlisten = \"0.0.0.0:9464\"\n", "", false,
			`:11: http: field listen: the dashboard listens beyond the loopback interface and asks for no login: set token_hash`},
		{"every interface without a login", "[http]\nlisten = \":9464\"\n", "", false,
			`:11: http: field listen: the dashboard listens beyond the loopback interface and asks for no login`},
		{"no port", "[http]\nlisten = \"127.0.0.1\"\n", "", false, `:11: http: field listen: "127.0.0.1" is not host:port`},
		{"bad port", "[http]\nlisten = \"127.0.0.1:99999\"\n", "", false, `:11: http: field listen: "127.0.0.1:99999": port "99999" is not a number`},
		{"empty", "[http]\nlisten = \"\"\n", "", false, `:11: http: field listen: empty address`},
		{"bad host", "[http]\nlisten = \"a b:1\"\n", "", false, `:11: http: field listen: "a b:1": "a b" is neither`},
		{"wrong type", "[http]\nlisten = 9464\n", "", false, `:11: http: field listen: wrong type: want a string, got an integer`},
		{"unknown key", "[http]\nlisten = \"127.0.0.1:9464\"\nport = 1\n", "", false, `:12: http: unknown key "port"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Parse("s.toml", []byte(httpBase+"\n"+tt.table))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), "s.toml"+tt.err) {
					t.Fatalf("Parse = %v, want an error containing %q", err, "s.toml"+tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if cfg.HTTP.Listen != tt.listen {
				t.Errorf("HTTP.Listen = %q, want %q", cfg.HTTP.Listen, tt.listen)
			}
			warned := false
			for _, w := range cfg.Warnings {
				if w.Table == "http" && w.Field == "listen" && w.Line == 11 {
					warned = true
				}
			}
			if warned != tt.warning {
				t.Errorf("warning = %v, want %v (%v)", warned, tt.warning, cfg.Warnings)
			}
		})
	}
}

// testHash is a well-formed hash (of "pw"; no test derives it here).
const testHash = "pbkdf2-sha256$600000$c2FsdHNhbHRzYWx0c2FsdA$MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE"

func TestLoadHTTPDashboard(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		table     string // from line 10
		dashboard bool
		actions   bool
		token     bool
		users     []string
		err       string // a substring of the only error, with its line
	}{
		{"absent", ``, true, false, false, nil, ""},
		{"defaults", "[http]\nlisten = \"127.0.0.1:9464\"\n", true, false, false, nil, ""},
		{"off", "[http]\ndashboard = false\n", false, false, false, nil, ""},
		{"token", "[http]\nactions = true\ntoken_hash = \"" + testHash + "\"\n", true, true, true, nil, ""},
		{"users", "[http]\nactions = true\n[[http.user]]\nname = \"ann\"\npassword_hash = \"" + testHash + "\"\n[[http.user]]\nname = \"bo.b@x\"\npassword_hash = \"" + testHash + "\"\n",
			true, true, false, []string{"ann", "bo.b@x"}, ""},
		{"read-only with a login", "[http]\ntoken_hash = \"" + testHash + "\"\n", true, false, true, nil, ""},
		{"actions without credential", "[http]\nactions = true\n", true, true, false, nil,
			`:11: http: field actions: actions = true needs a credential: token_hash, or an [[http.user]]`},
		{"actions without dashboard", "[http]\ndashboard = false\nactions = true\ntoken_hash = \"" + testHash + "\"\n", false, true, true, nil,
			`:12: http: field actions: actions = true needs the dashboard`},
		{"actions not a boolean", "[http]\nactions = \"yes\"\n", true, false, false, nil,
			`:11: http: field actions: wrong type: want a boolean, got a string`},
		{"token in clear", "[http]\ntoken_hash = \"hunter2\"\n", true, false, false, nil,
			`:11: http: field token_hash: malformed hash: 1 fields separated by $`},
		{"few iterations", "[http]\ntoken_hash = \"pbkdf2-sha256$1000$c2FsdHNhbHRzYWx0c2FsdA$MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE\"\n", true, false, false, nil,
			`:11: http: field token_hash: malformed hash: 1000 iterations`},
		{"user password in clear", "[http]\n[[http.user]]\nname = \"ann\"\npassword_hash = \"hunter2\"\n", true, false, false, nil,
			`:13: http.user "ann": field password_hash: malformed hash`},
		{"user without hash", "[http]\n[[http.user]]\nname = \"ann\"\n", true, false, false, nil,
			`:11: http.user "ann": no password_hash`},
		{"user without name", "[http]\n[[http.user]]\npassword_hash = \"" + testHash + "\"\n", true, false, false, nil,
			`:11: http.user #1: no name`},
		{"user with password", "[http]\n[[http.user]]\nname = \"ann\"\npassword_hash = \"" + testHash + "\"\npassword = \"x\"\n", true, false, false, []string{"ann"},
			`:14: http.user "ann": field password: unknown key "password"`},
		{"user named token", "[http]\n[[http.user]]\nname = \"token\"\npassword_hash = \"" + testHash + "\"\n", true, false, false, nil,
			`:12: http.user #1: field name: "token" names the token_hash login`},
		{"bad user name", "[http]\n[[http.user]]\nname = \"a b\"\npassword_hash = \"" + testHash + "\"\n", true, false, false, nil,
			`:12: http.user #1: field name: "a b": use 1 to 64`},
		{"twice the same user", "[http]\n[[http.user]]\nname = \"ann\"\npassword_hash = \"" + testHash + "\"\n[[http.user]]\nname = \"ann\"\npassword_hash = \"" + testHash + "\"\n", true, false, false, nil,
			`:15: http.user #2: field name: "ann" is already the name of [[http.user]] #1`},
		{"user not a table", "[http]\nuser = \"ann\"\n", true, false, false, nil,
			`:11: http: field user: wrong type: want an array of tables, got a string`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Parse("s.toml", []byte(httpBase+"\n"+tt.table))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), "s.toml"+tt.err) {
					t.Fatalf("Parse = %v, want an error containing %q", err, "s.toml"+tt.err)
				}
				if strings.Contains(err.Error(), "hunter2") {
					t.Errorf("Parse = %v: the error quotes the secret", err)
				}
				if n := strings.Count(err.Error(), "\n"); n != 0 {
					t.Errorf("Parse = %v: %d problems, want 1", err, n+1)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			h := cfg.HTTP
			if h.Dashboard != tt.dashboard || h.Actions != tt.actions || !h.TokenHash.IsZero() != tt.token {
				t.Errorf("HTTP = dashboard %v, actions %v, token %v; want %v, %v, %v", h.Dashboard, h.Actions, !h.TokenHash.IsZero(), tt.dashboard, tt.actions, tt.token)
			}
			var users []string
			for _, u := range h.Users {
				users = append(users, u.Name)
				if u.PasswordHash.String() != testHash {
					t.Errorf("user %s: PasswordHash = %s, want %s", u.Name, u.PasswordHash, testHash)
				}
			}
			if strings.Join(users, ",") != strings.Join(tt.users, ",") {
				t.Errorf("Users = %v, want %v", users, tt.users)
			}
			if !h.Equal(cfg.HTTP) {
				t.Error("HTTP.Equal(itself) = false")
			}
		})
	}
}

func TestHTTPEqual(t *testing.T) {
	t.Parallel()
	load := func(table string) HTTPSettings {
		t.Helper()
		cfg, err := Parse("s.toml", []byte(httpBase+"\n"+table))
		if err != nil {
			t.Fatal(err)
		}
		return cfg.HTTP
	}
	user := "[http]\n[[http.user]]\nname = \"ann\"\npassword_hash = \"" + testHash + "\"\n"
	a, b := load(user), load(user)
	if !a.Equal(b) {
		t.Errorf("the same [http] twice: Equal = false")
	}
	other := strings.Replace(testHash, "c2Fsd", "c2Fse", 1)
	for _, table := range []string{
		strings.Replace(user, "ann", "bob", 1),
		strings.Replace(user, testHash, other, 1),
		user + "[[http.user]]\nname = \"bob\"\npassword_hash = \"" + testHash + "\"\n",
		strings.Replace(user, "[http]\n", "[http]\ndashboard = false\n", 1),
		strings.Replace(user, "[http]\n", "[http]\nhosts = [\"a.example\"]\n", 1),
		strings.Replace(user, "[http]\n", "[http]\ntrusted_proxies = [\"127.0.0.1\"]\n", 1),
	} {
		if a.Equal(load(table)) {
			t.Errorf("Equal(%q) = true, want false", table)
		}
	}
}

func TestLoadHTTPHostsAndProxies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		table   string // from line 10
		hosts   string
		proxies string
		err     string // a substring of the only error, with its line
	}{
		{"absent", "[http]\n", "", "", ""},
		{"names", "[http]\nhosts = [\"Scheduler.Example.com\", \"ops.example.com.\", \"scheduler.example.com\"]\n",
			"scheduler.example.com,ops.example.com", "", ""},
		{"proxies", "[http]\ntrusted_proxies = [\"127.0.0.1\", \"10.0.0.0/8\", \"::1\", \"2001:db8::/32\", \"192.168.1.7/16\", \"::ffff:10.1.2.3\"]\n",
			"", "127.0.0.1/32,10.0.0.0/8,::1/128,2001:db8::/32,192.168.0.0/16,10.1.2.3/32", ""},
		{"bad cidr", "[http]\ntrusted_proxies = [\"10.0.0.0/8\", \"10.0.0.0/33\"]\n", "", "",
			`:11: http: field trusted_proxies: "10.0.0.0/33" is neither an IP address nor a CIDR prefix such as 10.0.0.0/8`},
		{"proxy by name", "[http]\n\ntrusted_proxies = [\"proxy.example.com\"]\n", "", "",
			`:12: http: field trusted_proxies: "proxy.example.com" is neither`},
		{"proxies not a list", "[http]\ntrusted_proxies = \"127.0.0.1\"\n", "", "",
			`:11: http: field trusted_proxies: wrong type: want an array of strings, got a string`},
		{"host with a port", "[http]\nhosts = [\"scheduler.example.com:443\"]\n", "", "",
			`:11: http: field hosts: "scheduler.example.com:443": give the name without a port`},
		{"host an address", "[http]\nhosts = [\"[::1]\"]\n", "", "",
			`:11: http: field hosts: "[::1]" is an IP address`},
		{"host not a name", "[http]\nhosts = [\"*.example.com\"]\n", "", "",
			`:11: http: field hosts: "*.example.com" is not a host name`},
		{"empty host", "[http]\nhosts = [\"\"]\n", "", "", `:11: http: field hosts: "" is not a host name`},
		{"misspelt key", "[http]\ntrusted_proxy = [\"127.0.0.1\"]\n", "", "", `:11: http: unknown key "trusted_proxy"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Parse("s.toml", []byte(httpBase+"\n"+tt.table))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), "s.toml"+tt.err) {
					t.Fatalf("Parse = %v, want an error containing %q", err, "s.toml"+tt.err)
				}
				if n := strings.Count(err.Error(), "\n"); n != 0 {
					t.Errorf("Parse = %v: %d problems, want 1", err, n+1)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got := strings.Join(cfg.HTTP.Hosts, ","); got != tt.hosts {
				t.Errorf("Hosts = %q, want %q", got, tt.hosts)
			}
			var proxies []string
			for _, p := range cfg.HTTP.TrustedProxies {
				proxies = append(proxies, p.String())
			}
			if got := strings.Join(proxies, ","); got != tt.proxies {
				t.Errorf("TrustedProxies = %q, want %q", got, tt.proxies)
			}
		})
	}
}

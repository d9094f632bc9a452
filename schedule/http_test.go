package schedule

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
		{"every interface", "[http]\nlisten = \":9464\"\n", ":9464", true, ""},
		{"public address", "[http]\nlisten = \"192.0.2.7:9464\"\n", "192.0.2.7:9464", true, ""},
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

package config

import (
	"strings"
	"testing"
	"time"
)

// t0 is Sunday 1 March 2026, 12:00 UTC.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// mustParse parses a configuration that must be valid.
func mustParse(t testing.TB, text string) *Config {
	t.Helper()
	cfg, err := Parse("test.toml", []byte(text))
	if err != nil {
		t.Fatalf("Parse:\n%v", err)
	}
	return cfg
}

func mustZone(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("LoadLocation(%q): %v", name, err)
	}
	return loc
}

func equal(got, want []string) bool {
	return strings.Join(got, "\n") == strings.Join(want, "\n")
}

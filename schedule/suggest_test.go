package schedule

import (
	"archive/zip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSuggest(t *testing.T) {
	t.Parallel()
	keys := []string{"max_attempts", "backoff", "max_backoff", "timeout", "command", "concurrency", "dir", "env", "url"}
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"one letter missing", "max_atempts", []string{"max_attempts"}},
		{"swapped letters", "tiemout", []string{"timeout"}},
		{"other case", "Backoff", []string{"backoff"}},
		{"far from all", "retries", nil},
		{"short and far", "db", nil},
		{"two as close", "max_backof", []string{"max_backoff"}},
	}
	for _, tt := range tests {
		if got := suggest(tt.in, keys); !slices.Equal(got, tt.want) {
			t.Errorf("%s: suggest(%q) = %q, want %q", tt.name, tt.in, got, tt.want)
		}
	}
}

func TestZoneHint(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
	}{
		{"Europe/Instanbul", ` (did you mean "Europe/Istanbul"?)`},
		{"europe/berlin", ` (did you mean "Europe/Berlin"?)`},
		{"America/New York", ` (did you mean "America/New_York"?)`},
		{"Istanbul", ` (did you mean "Asia/Istanbul" or "Europe/Istanbul"?)`},
		{"Mars/Olympus", ""},
		{"Europe/Atlantis", ""},
		{"Nowhere", ""},
	}
	for _, tt := range tests {
		if got := zoneHint(tt.in); got != tt.want {
			t.Errorf("zoneHint(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"abc", "", 3},
		{"kitten", "sitting", 3},
		{"timeout", "tiemout", 1},
		{"istanbul", "instanbul", 1},
		{"çay", "cay", 1},
	}
	for _, tt := range tests {
		if got := editDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

// TestZoneNamesMatchTheEmbeddedDatabase: every name suggested loads, and the
// list holds every zone of the database time/tzdata embeds. After a Go
// upgrade brings new zones, rewrite the list with
// SCHEDULER_UPDATE_ZONES=1 go test -run TestZoneNamesMatch ./schedule.
func TestZoneNamesMatchTheEmbeddedDatabase(t *testing.T) {
	t.Parallel()
	for _, z := range zoneList() {
		if _, err := time.LoadLocation(z); err != nil {
			t.Errorf("zones.txt lists %q: %v", z, err)
		}
	}
	r, err := zip.OpenReader(filepath.Join(runtime.GOROOT(), "lib", "time", "zoneinfo.zip"))
	if err != nil {
		t.Skipf("no zone database beside the Go tree to compare with: %v", err)
	}
	defer r.Close()
	var names []string
	for _, f := range r.File {
		if !f.FileInfo().IsDir() {
			names = append(names, f.Name)
		}
	}
	slices.Sort(names)
	if os.Getenv("SCHEDULER_UPDATE_ZONES") != "" {
		if err := os.WriteFile("zones.txt", []byte(strings.Join(names, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !slices.Equal(names, zoneList()) {
		t.Errorf("zones.txt differs from %s (%d names, want %d): rewrite it with SCHEDULER_UPDATE_ZONES=1", r.File[0].Name, len(zoneList()), len(names))
	}
}

package cron

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

// TestZoneNamesMatchTheEmbeddedDatabase: every name suggested loads, and the
// list holds every zone of the database time/tzdata embeds. After a Go
// upgrade brings new zones, rewrite the list with
// SCHEDULER_UPDATE_ZONES=1 go test -run TestZoneNamesMatch ./schedule/cron.
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

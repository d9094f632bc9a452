package schedule

import (
	"testing"
	"time"
)

func TestDedupKey(t *testing.T) {
	t.Parallel()
	ny := mustZone(t, "America/New_York")
	tests := []struct {
		schedule, item string
		at             time.Time
		want           string
	}{
		{"s", "", time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), "s||2026-03-01T12:00:00Z"},
		{"nightly", "customer=acme", time.Date(2026, 11, 1, 1, 30, 0, 0, ny), "nightly|customer=acme|2026-11-01T05:30:00Z"},
		{"s", "x", time.Date(2026, 3, 1, 12, 0, 0, 999, time.UTC), "s|x|2026-03-01T12:00:00Z"},
	}
	for _, tt := range tests {
		if got := DedupKey(tt.schedule, tt.item, tt.at); got != tt.want {
			t.Errorf("DedupKey(%q, %q, %v) = %q, want %q", tt.schedule, tt.item, tt.at, got, tt.want)
		}
	}
}

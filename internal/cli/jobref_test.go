package cli

import (
	"testing"
	"time"
)

// TestParseBound: -from and -to of -backfill, in a zone with daylight
// saving: a date is the whole day in the zone, a wall time is read in it.
func TestParseBound(t *testing.T) {
	t.Parallel()
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, in string
		end      bool
		want     time.Time
		day      bool
	}{
		{"date from", "2026-11-01", false, time.Date(2026, 11, 1, 4, 0, 0, 0, time.UTC), true},
		// 1 November 2026 is 25 hours long in New York: it ends at 05:00 UTC.
		{"date to, a day of 25 hours", "2026-11-01", true, time.Date(2026, 11, 2, 5, 0, 0, 0, time.UTC).Add(-time.Nanosecond), true},
		{"wall time", "2026-11-23T03:00", false, time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC), false},
		{"wall time with seconds", "2026-11-23T03:00:30", true, time.Date(2026, 11, 23, 8, 0, 30, 0, time.UTC), false},
		{"RFC 3339", "2026-11-23T03:00:00+03:00", true, time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, day, err := parseBound("-from", tt.in, ny, tt.end)
			if err != nil || !got.Equal(tt.want) || day != tt.day {
				t.Errorf("parseBound(%q, end %v) = %v, %v, %v; want %v, %v", tt.in, tt.end, got.UTC(), day, err, tt.want, tt.day)
			}
		})
	}
	if _, _, err := parseBound("-to", "23/11/2026", ny, true); err == nil || ExitCode(err) != ExitUsage {
		t.Errorf("parseBound(23/11/2026) = %v, want a usage error", err)
	}
}

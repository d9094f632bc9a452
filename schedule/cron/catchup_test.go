package cron

import (
	"strings"
	"testing"
	"time"
)

// t0 is Sunday 1 March 2026, 12:00 UTC.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// times formats offsets from t0 as 15:04:05, for expected values.
func times(offsets ...time.Duration) []string {
	out := make([]string, len(offsets))
	for i, d := range offsets {
		out[i] = t0.Add(d).UTC().Format("15:04:05")
	}
	return out
}

func TestPlan(t *testing.T) {
	t.Parallel()
	now := t0.Add(10 * time.Hour)
	at := func(h time.Duration) time.Time { return t0.Add(h) }
	due := []Instant{{At: at(time.Hour)}, {At: at(2 * time.Hour), DST: true}, {At: at(3 * time.Hour)}, {At: at(9 * time.Hour)}, {At: at(10*time.Hour - 30*time.Second)}, {At: now}}
	late := []Instant{{At: at(time.Hour)}, {At: at(2 * time.Hour)}, {At: at(3 * time.Hour)}}
	tests := []struct {
		name      string
		due       []Instant
		policy    CatchUp
		limit     int
		skipAll   bool
		wantRuns  []string
		wantSkips []string
	}{
		{"latest with on-time", due, CatchUpLatest, 0, false,
			times(10*time.Hour-30*time.Second, 10*time.Hour), []string{"dst 14:00:00", "misfire 13:00:00", "misfire 15:00:00", "misfire 21:00:00"}},
		{"latest all late", late, CatchUpLatest, 0, false,
			times(3 * time.Hour), []string{"misfire 13:00:00", "misfire 14:00:00"}},
		{"all under limit", late, CatchUpAll, 5, false,
			times(time.Hour, 2*time.Hour, 3*time.Hour), nil},
		{"all over limit", due, CatchUpAll, 2, false,
			times(3*time.Hour, 9*time.Hour, 10*time.Hour-30*time.Second, 10*time.Hour), []string{"dst 14:00:00", "misfire 13:00:00"}},
		{"none", due, CatchUpNone, 0, false,
			times(10*time.Hour-30*time.Second, 10*time.Hour), []string{"dst 14:00:00", "misfire 13:00:00", "misfire 15:00:00", "misfire 21:00:00"}},
		{"skip all", due, CatchUpAll, 100, true,
			nil, []string{"misfire 13:00:00", "dst 14:00:00", "misfire 15:00:00", "misfire 21:00:00", "misfire 21:59:30", "misfire 22:00:00"}},
		{"nothing due", nil, CatchUpLatest, 0, false, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			runs, skips := Plan(tt.due, now, time.Minute, tt.policy, tt.limit, tt.skipAll)
			var gotRuns, gotSkips []string
			for _, r := range runs {
				gotRuns = append(gotRuns, r.UTC().Format("15:04:05"))
			}
			for _, s := range skips {
				reason := "misfire"
				if s.DST {
					reason = "dst"
				}
				gotSkips = append(gotSkips, reason+" "+s.At.UTC().Format("15:04:05"))
			}
			if strings.Join(gotRuns, "\n") != strings.Join(tt.wantRuns, "\n") {
				t.Errorf("runs = %v, want %v", gotRuns, tt.wantRuns)
			}
			if strings.Join(gotSkips, "\n") != strings.Join(tt.wantSkips, "\n") {
				t.Errorf("skips = %v, want %v", gotSkips, tt.wantSkips)
			}
		})
	}
}

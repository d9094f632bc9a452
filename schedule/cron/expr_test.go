package cron

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func mustZone(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("LoadLocation(%q): %v", name, err)
	}
	return loc
}

func mustTime(t testing.TB, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatalf("time.Parse(%q): %v", s, err)
	}
	return v
}

func mustExpr(t testing.TB, expr, zone string) *Expr {
	t.Helper()
	s, err := Parse(expr, mustZone(t, zone))
	if err != nil {
		t.Fatalf("Parse(%q, %s): %v", expr, zone, err)
	}
	return s
}

// TestExprNext walks Next from after and compares the instants it returns.
// The 2026 transitions: America/New_York 8 March 02:00 EST -> 03:00 EDT and
// 1 November 02:00 EDT -> 01:00 EST; Europe/London 29 March 01:00 GMT ->
// 02:00 BST and 25 October 02:00 BST -> 01:00 GMT; Australia/Lord_Howe
// 5 April 02:00 +11 -> 01:30 +1030 and 4 October 02:00 +1030 -> 02:30 +11.
func TestExprNext(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		expr  string
		zone  string
		after string
		want  []string
	}{
		// New York, spring-forward.
		{"ny spring daily in gap runs at the jump", "30 2 * * *", "America/New_York", "2026-03-07T12:00:00-05:00",
			[]string{"2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00"}},
		{"ny spring daily at gap start runs at the jump", "0 2 * * *", "America/New_York", "2026-03-08T00:00:00-05:00",
			[]string{"2026-03-08T03:00:00-04:00", "2026-03-09T02:00:00-04:00"}},
		{"ny spring two gap times and 03:00 collapse into one run", "0 2,3 * * *", "America/New_York", "2026-03-08T00:00:00-05:00",
			[]string{"2026-03-08T03:00:00-04:00", "2026-03-09T02:00:00-04:00"}},
		{"ny spring daily outside gap unchanged", "30 3 * * *", "America/New_York", "2026-03-08T00:00:00-05:00",
			[]string{"2026-03-08T03:30:00-04:00", "2026-03-09T03:30:00-04:00"}},
		{"ny spring hourly keeps real hours", "0 * * * *", "America/New_York", "2026-03-08T00:30:00-05:00",
			[]string{"2026-03-08T01:00:00-05:00", "2026-03-08T03:00:00-04:00", "2026-03-08T04:00:00-04:00"}},
		{"ny spring half past keeps real hours", "30 * * * *", "America/New_York", "2026-03-08T00:45:00-05:00",
			[]string{"2026-03-08T01:30:00-05:00", "2026-03-08T03:30:00-04:00", "2026-03-08T04:30:00-04:00"}},
		{"ny spring quarter hours keep 15 real minutes", "*/15 * * * *", "America/New_York", "2026-03-08T01:40:00-05:00",
			[]string{"2026-03-08T01:45:00-05:00", "2026-03-08T03:00:00-04:00", "2026-03-08T03:15:00-04:00"}},
		{"ny spring quarter hours of the night collapse into the jump", "*/15 0-3 * * *", "America/New_York", "2026-03-08T01:40:00-05:00",
			[]string{"2026-03-08T01:45:00-05:00", "2026-03-08T03:00:00-04:00", "2026-03-08T03:15:00-04:00"}},
		// New York, fall-back.
		{"ny fall daily repeated runs once", "30 1 * * *", "America/New_York", "2026-11-01T00:00:00-04:00",
			[]string{"2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00"}},
		{"ny fall daily at 01:00 runs once", "0 1 * * *", "America/New_York", "2026-10-31T12:00:00-04:00",
			[]string{"2026-11-01T01:00:00-04:00", "2026-11-02T01:00:00-05:00"}},
		{"ny fall daily at 02:00 once", "0 2 * * *", "America/New_York", "2026-11-01T00:00:00-04:00",
			[]string{"2026-11-01T02:00:00-05:00", "2026-11-02T02:00:00-05:00"}},
		{"ny fall hourly runs both 01:00", "0 * * * *", "America/New_York", "2026-11-01T00:30:00-04:00",
			[]string{"2026-11-01T01:00:00-04:00", "2026-11-01T01:00:00-05:00", "2026-11-01T02:00:00-05:00"}},
		{"ny fall quarter hours keep 15 real minutes", "*/15 * * * *", "America/New_York", "2026-11-01T01:40:00-04:00",
			[]string{"2026-11-01T01:45:00-04:00", "2026-11-01T01:00:00-05:00", "2026-11-01T01:15:00-05:00"}},
		{"ny fall every minute of hour 1 runs the first pass only", "59 1 * * *", "America/New_York", "2026-11-01T01:58:00-04:00",
			[]string{"2026-11-01T01:59:00-04:00", "2026-11-02T01:59:00-05:00"}},
		{"ny fall after first pass resumes next day", "15 1 * * *", "America/New_York", "2026-11-01T01:05:00-05:00",
			[]string{"2026-11-02T01:15:00-05:00"}},
		// London.
		{"london spring daily in gap runs at the jump", "30 1 * * *", "Europe/London", "2026-03-28T12:00:00Z",
			[]string{"2026-03-29T02:00:00+01:00", "2026-03-30T01:30:00+01:00"}},
		{"london spring hourly", "0 * * * *", "Europe/London", "2026-03-29T00:30:00Z",
			[]string{"2026-03-29T02:00:00+01:00", "2026-03-29T03:00:00+01:00"}},
		{"london fall daily repeated runs once", "30 1 * * *", "Europe/London", "2026-10-25T00:00:00+01:00",
			[]string{"2026-10-25T01:30:00+01:00", "2026-10-26T01:30:00Z"}},
		{"london fall hourly runs both 01:00", "0 * * * *", "Europe/London", "2026-10-25T00:30:00+01:00",
			[]string{"2026-10-25T01:00:00+01:00", "2026-10-25T01:00:00Z", "2026-10-25T02:00:00Z"}},
		// Lord Howe: 30-minute shifts.
		{"lord howe spring daily in gap runs at the jump", "15 2 * * *", "Australia/Lord_Howe", "2026-10-04T00:00:00+10:30",
			[]string{"2026-10-04T02:30:00+11:00", "2026-10-05T02:15:00+11:00"}},
		{"lord howe spring daily after gap unchanged", "30 2 * * *", "Australia/Lord_Howe", "2026-10-04T00:00:00+10:30",
			[]string{"2026-10-04T02:30:00+11:00", "2026-10-05T02:30:00+11:00"}},
		{"lord howe spring hourly runs one real hour after 01:00", "0 * * * *", "Australia/Lord_Howe", "2026-10-04T00:30:00+10:30",
			[]string{"2026-10-04T01:00:00+10:30", "2026-10-04T02:30:00+11:00", "2026-10-04T03:00:00+11:00"}},
		{"lord howe spring quarter hours keep 15 real minutes", "*/15 * * * *", "Australia/Lord_Howe", "2026-10-04T01:40:00+10:30",
			[]string{"2026-10-04T01:45:00+10:30", "2026-10-04T02:30:00+11:00", "2026-10-04T02:45:00+11:00"}},
		{"lord howe fall daily repeated runs once", "45 1 * * *", "Australia/Lord_Howe", "2026-04-05T00:00:00+11:00",
			[]string{"2026-04-05T01:45:00+11:00", "2026-04-06T01:45:00+10:30"}},
		{"lord howe fall daily before repeat unchanged", "15 1 * * *", "Australia/Lord_Howe", "2026-04-05T00:00:00+11:00",
			[]string{"2026-04-05T01:15:00+11:00", "2026-04-06T01:15:00+10:30"}},
		{"lord howe fall half hours keep 30 real minutes", "*/30 * * * *", "Australia/Lord_Howe", "2026-04-05T00:45:00+11:00",
			[]string{"2026-04-05T01:00:00+11:00", "2026-04-05T01:30:00+11:00", "2026-04-05T01:30:00+10:30", "2026-04-05T02:00:00+10:30"}},
		{"lord howe fall hourly", "0 * * * *", "Australia/Lord_Howe", "2026-04-05T00:30:00+11:00",
			[]string{"2026-04-05T01:00:00+11:00", "2026-04-05T02:00:00+10:30", "2026-04-05T03:00:00+10:30"}},
		// Zones without DST.
		{"kolkata daily", "0 2 * * *", "Asia/Kolkata", "2026-03-08T00:00:00+05:30",
			[]string{"2026-03-08T02:00:00+05:30", "2026-03-09T02:00:00+05:30"}},
		{"utc daily", "30 2 * * *", "UTC", "2026-03-08T02:30:00Z",
			[]string{"2026-03-09T02:30:00Z", "2026-03-10T02:30:00Z"}},
		{"cron tz prefix wins over loc", "CRON_TZ=Asia/Kolkata 0 2 * * *", "UTC", "2026-03-08T00:00:00Z",
			[]string{"2026-03-09T02:00:00+05:30"}},
		// Fields and descriptors.
		{"seconds field", "*/20 * * * * *", "UTC", "2026-01-01T00:00:05Z",
			[]string{"2026-01-01T00:00:20Z", "2026-01-01T00:00:40Z", "2026-01-01T00:01:00Z"}},
		{"six fields", "30 0 3 * * *", "UTC", "2026-01-01T00:00:00Z",
			[]string{"2026-01-01T03:00:30Z", "2026-01-02T03:00:30Z"}},
		{"after is exclusive", "0 3 * * *", "UTC", "2026-01-01T03:00:00Z",
			[]string{"2026-01-02T03:00:00Z"}},
		{"sub-second after", "0 3 * * *", "UTC", "2026-01-01T02:59:59.5Z",
			[]string{"2026-01-01T03:00:00Z"}},
		{"daily descriptor in ny", "@daily", "America/New_York", "2026-03-07T12:00:00-05:00",
			[]string{"2026-03-08T00:00:00-05:00", "2026-03-09T00:00:00-04:00"}},
		{"hourly descriptor ny fall", "@hourly", "America/New_York", "2026-11-01T00:30:00-04:00",
			[]string{"2026-11-01T01:00:00-04:00", "2026-11-01T01:00:00-05:00"}},
		{"weekday names", "0 9 * * mon-fri", "UTC", "2026-01-02T10:00:00Z", // a Friday
			[]string{"2026-01-05T09:00:00Z", "2026-01-06T09:00:00Z"}},
		{"day of month or weekday", "0 0 13 * fri", "UTC", "2026-02-01T00:00:00Z",
			[]string{"2026-02-06T00:00:00Z", "2026-02-13T00:00:00Z", "2026-02-20T00:00:00Z"}},
		{"29 february", "0 0 29 2 *", "UTC", "2026-03-01T00:00:00Z",
			[]string{"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"}},
		{"29 february across 2100", "0 0 29 2 *", "UTC", "2096-03-01T00:00:00Z",
			[]string{"2104-02-29T00:00:00Z"}},
		// Past 2037 zones follow their rule, where Time.ZoneBounds
		// reports bounds at year ends.
		{"29 february in rule years", "0 0 29 2 *", "America/New_York", "2040-03-01T00:00:00-05:00",
			[]string{"2044-02-29T00:00:00-05:00", "2048-02-29T00:00:00-05:00"}},
		{"new year's eve in rule years", "0 19 31 12 *", "America/New_York", "2040-12-30T00:00:00-05:00",
			[]string{"2040-12-31T19:00:00-05:00", "2041-12-31T19:00:00-05:00"}},
		{"hourly over new year in rule years", "0 * * * *", "America/New_York", "2040-12-31T18:30:00-05:00",
			[]string{"2040-12-31T19:00:00-05:00", "2040-12-31T20:00:00-05:00", "2040-12-31T21:00:00-05:00"}},
		{"fall-back in rule years", "30 1 * * *", "America/New_York", "2041-11-03T00:00:00-04:00",
			[]string{"2041-11-03T01:30:00-04:00", "2041-11-04T01:30:00-05:00"}},
		{"spring-forward in rule years", "30 2 * * *", "America/New_York", "2041-03-10T00:00:00-05:00",
			[]string{"2041-03-10T03:00:00-04:00", "2041-03-11T02:30:00-04:00"}},
		// Day of week 7 is Sunday, as in cron; 1 March 2026 is a Sunday.
		{"sunday as 7", "0 9 * * 7", "UTC", "2026-02-26T00:00:00Z",
			[]string{"2026-03-01T09:00:00Z", "2026-03-08T09:00:00Z"}},
		{"friday to sunday as 5-7", "0 9 * * 5-7", "UTC", "2026-02-26T00:00:00Z",
			[]string{"2026-02-27T09:00:00Z", "2026-02-28T09:00:00Z", "2026-03-01T09:00:00Z", "2026-03-06T09:00:00Z"}},
		{"every other day to 7", "0 9 * * 1-7/2", "UTC", "2026-02-28T00:00:00Z", // 1,3,5,7: Mon, Wed, Fri, Sun
			[]string{"2026-03-01T09:00:00Z", "2026-03-02T09:00:00Z", "2026-03-04T09:00:00Z", "2026-03-06T09:00:00Z", "2026-03-08T09:00:00Z"}},
		{"star step 7 is sunday", "0 9 * * */7", "UTC", "2026-02-26T00:00:00Z",
			[]string{"2026-03-01T09:00:00Z", "2026-03-08T09:00:00Z"}},
		{"0-7 is every day but not a star", "0 9 13 * 0-7", "UTC", "2026-03-01T00:00:00Z",
			[]string{"2026-03-01T09:00:00Z", "2026-03-02T09:00:00Z"}},
		{"7 with day of month matches either", "0 9 13 * 7", "UTC", "2026-03-09T00:00:00Z",
			[]string{"2026-03-13T09:00:00Z", "2026-03-15T09:00:00Z", "2026-03-22T09:00:00Z"}},
		{"every ignores zone and dst", "@every 90m", "America/New_York", "2026-03-08T01:00:00-05:00",
			[]string{"2026-03-08T03:30:00-04:00", "2026-03-08T05:00:00-04:00"}},
		{"every keeps sub-second anchor", "@every 10s", "UTC", "2026-01-01T00:00:00.25Z",
			[]string{"2026-01-01T00:00:10.25Z", "2026-01-01T00:00:20.25Z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := mustExpr(t, tt.expr, tt.zone)
			after := mustTime(t, tt.after)
			for i, w := range tt.want {
				want := mustTime(t, w)
				got := s.Next(after)
				if !got.Equal(want) {
					t.Fatalf("Next #%d (%v) = %v, want %v", i+1, after, got, want)
				}
				if got.Location() != s.Location() {
					t.Errorf("Next(%v) location = %v, want %v", after, got.Location(), s.Location())
				}
				after = got
			}
		})
	}
}

// TestExprSeries checks the whole series, runs and skipped repeats, that the
// beat walks.
func TestExprSeries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		expr     string
		zone     string
		from, to string
		want     []string // RFC 3339, with " dst" for a skipped repeat
	}{
		{"ny fall daily", "30 1 * * *", "America/New_York", "2026-10-31T12:00:00-04:00", "2026-11-02T12:00:00-05:00",
			[]string{"2026-11-01T01:30:00-04:00", "2026-11-01T01:30:00-05:00 dst", "2026-11-02T01:30:00-05:00"}},
		{"ny fall minute of hour one", "*/20 1 * * *", "America/New_York", "2026-11-01T00:00:00-04:00", "2026-11-01T03:00:00-05:00",
			[]string{"2026-11-01T01:00:00-04:00", "2026-11-01T01:20:00-04:00", "2026-11-01T01:40:00-04:00",
				"2026-11-01T01:00:00-05:00 dst", "2026-11-01T01:20:00-05:00 dst", "2026-11-01T01:40:00-05:00 dst"}},
		// The hour field is not "*": 75 real minutes from 01:45 EDT to 02:00 EST.
		{"ny fall quarter hours of the night", "*/15 0-3 * * *", "America/New_York", "2026-11-01T01:40:00-04:00", "2026-11-01T02:20:00-05:00",
			[]string{"2026-11-01T01:45:00-04:00", "2026-11-01T01:00:00-05:00 dst", "2026-11-01T01:15:00-05:00 dst",
				"2026-11-01T01:30:00-05:00 dst", "2026-11-01T01:45:00-05:00 dst", "2026-11-01T02:00:00-05:00", "2026-11-01T02:15:00-05:00"}},
		{"ny fall hourly runs both", "0 * * * *", "America/New_York", "2026-11-01T00:30:00-04:00", "2026-11-01T02:30:00-05:00",
			[]string{"2026-11-01T01:00:00-04:00", "2026-11-01T01:00:00-05:00", "2026-11-01T02:00:00-05:00"}},
		{"london fall daily", "30 1 * * *", "Europe/London", "2026-10-25T00:00:00+01:00", "2026-10-25T12:00:00Z",
			[]string{"2026-10-25T01:30:00+01:00", "2026-10-25T01:30:00Z dst"}},
		{"lord howe fall daily", "45 1 * * *", "Australia/Lord_Howe", "2026-04-05T00:00:00+11:00", "2026-04-05T12:00:00+10:30",
			[]string{"2026-04-05T01:45:00+11:00", "2026-04-05T01:45:00+10:30 dst"}},
		{"ny spring daily", "30 2 * * *", "America/New_York", "2026-03-07T12:00:00-05:00", "2026-03-08T12:00:00-04:00",
			[]string{"2026-03-08T03:00:00-04:00"}},
		{"utc", "0 */6 * * *", "UTC", "2026-01-01T00:00:00Z", "2026-01-01T18:00:00Z",
			[]string{"2026-01-01T06:00:00Z", "2026-01-01T12:00:00Z", "2026-01-01T18:00:00Z"}},
		{"every", "@every 1h", "UTC", "2026-01-01T00:00:00Z", "2026-01-01T03:30:00Z",
			[]string{"2026-01-01T01:00:00Z", "2026-01-01T02:00:00Z", "2026-01-01T03:00:00Z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := mustExpr(t, tt.expr, tt.zone)
			got, truncated := s.Between(mustTime(t, tt.from), mustTime(t, tt.to), 100)
			if truncated {
				t.Errorf("between truncated")
			}
			var gotS []string
			for _, in := range got {
				v := in.At.Format(time.RFC3339)
				if in.DST {
					v += " dst"
				}
				gotS = append(gotS, v)
			}
			if strings.Join(gotS, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("between = \n%s\nwant\n%s", strings.Join(gotS, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestExprBetweenTruncates(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		expr          string
		from, to      string
		keep          int
		wantN         int
		wantFirst     string
		wantTruncated bool
	}{
		{"every second over a year keeps the newest", "* * * * * *", "2025-01-01T00:00:00Z", "2026-01-01T00:00:00Z", 1000, 1000, "2025-12-31T23:43:21Z", true},
		{"daily over ten years is complete", "0 0 * * *", "2016-01-01T00:00:00Z", "2026-01-01T00:00:00Z", 10000, 3653, "2016-01-02T00:00:00Z", false},
		{"daily over ten years truncated", "0 0 * * *", "2016-01-01T00:00:00Z", "2026-01-01T00:00:00Z", 10, 10, "2025-12-23T00:00:00Z", true},
		{"every over a year", "@every 1s", "2025-01-01T00:00:00Z", "2026-01-01T00:00:00Z", 1000, 1000, "2025-12-31T23:43:21Z", true},
		{"empty range", "* * * * * *", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z", 10, 0, "", false},
		{"backwards range", "* * * * * *", "2026-01-01T00:00:00Z", "2025-01-01T00:00:00Z", 10, 0, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := mustExpr(t, tt.expr, "UTC")
			got, truncated := s.Between(mustTime(t, tt.from), mustTime(t, tt.to), tt.keep)
			if len(got) != tt.wantN || truncated != tt.wantTruncated {
				t.Fatalf("between = %d instants, truncated %v; want %d, %v", len(got), truncated, tt.wantN, tt.wantTruncated)
			}
			if tt.wantN == 0 {
				return
			}
			if want := mustTime(t, tt.wantFirst); !got[0].At.Equal(want) {
				t.Errorf("between first = %v, want %v", got[0].At, want)
			}
			if want := mustTime(t, tt.to); !got[len(got)-1].At.Equal(want) {
				t.Errorf("between last = %v, want %v", got[len(got)-1].At, want)
			}
			for i := 1; i < len(got); i++ {
				if !got[i].At.After(got[i-1].At) {
					t.Fatalf("between not increasing at %d: %v then %v", i, got[i-1].At, got[i].At)
				}
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		expr    string
		wantErr string
		never   bool
	}{
		{"31 february", "0 0 31 2 *", "never fires", true},
		{"30 february", "0 0 30 2 *", "never fires", true},
		{"31st of short months", "0 0 31 4,6,9,11 *", "never fires", true},
		{"empty", "", "empty spec", false},
		{"blank", "   ", "empty spec", false},
		{"too few fields", "* * * *", "expected 5 to 6 fields", false},
		{"too many fields", "* * * * * * *", "expected 5 to 6 fields", false},
		{"minute out of range", "60 * * * *", `minute field "60": 60 is above the maximum 59`, false},
		{"minute range past the end", "1-60 * * * *", `minute field "1-60": 60 is above the maximum 59`, false},
		{"step of zero", "*/0 * * * *", `minute field "*/0": a step of 0 never advances`, false},
		{"step missing", "3/ * * * *", `minute field "3/": nothing after "/"`, false},
		{"step not a number", "*/x * * * *", `step "x" is not a number`, false},
		{"two slashes", "*/5/2 * * * *", `step "5/2" is not a number`, false},
		{"nothing before step", "/5 * * * *", `nothing before "/"`, false},
		{"star range", "0 0 * * *-5", `day-of-week field "*-5": a range cannot start at "*"`, false},
		{"star range with step", "*-30/5 * * * *", `a range cannot start at "*"`, false},
		{"range without end", "5- * * * *", `minute field "5-": the range has no end`, false},
		{"range without start", "-5 * * * *", `minute field "-5": the range has no start`, false},
		{"backwards range", "0 5-2 * * *", `hour field "5-2": the range starts after it ends`, false},
		{"empty list element", "1,,2 * * * *", "empty element in a list", false},
		{"trailing comma", "0 0 * * 1,", "empty element in a list", false},
		{"bad element of a list", "0 0 * * 1,*-5", `day-of-week field "1,*-5": "*-5": a range cannot start at "*"`, false},
		{"signed number", "+5 * * * *", `"+5" is not a number`, false},
		{"day of week 8", "0 0 * * 8", `day-of-week field "8": 8 is above the maximum 7`, false},
		{"day of month 0", "0 0 0 * *", `day-of-month field "0": 0 is below the minimum 1`, false},
		{"unknown month name", "0 0 1 foo *", `month field "foo": "foo" is not a number`, false},
		{"seconds out of range", "60 * * * * *", `seconds field "60"`, false},
		{"unknown descriptor", "@fortnightly", "unrecognized descriptor", false},
		{"every sub-second", "@every 500ms", "at least 1s", false},
		{"every fraction", "@every 1500ms", "whole seconds", false},
		{"every negative", "@every -1m", "at least 1s", false},
		{"every garbage", "@every soon", "@every", false},
		{"every nothing", "@every", "@every", false},
		{"unknown zone", "CRON_TZ=Mars/Olympus 0 0 * * *", "unknown time zone \"Mars/Olympus\"", false},
		{"local zone refused", "CRON_TZ=Local 0 0 * * *", "unknown time zone \"Local\"", false},
		{"zone without spec", "CRON_TZ=UTC", "nothing after", false},
		{"zone with tab", "TZ=UTC\t", "nothing after", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse(tt.expr, time.UTC)
			if err == nil {
				t.Fatalf("Parse(%q) = nil error, want %q", tt.expr, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Parse(%q) = %v, want it to contain %q", tt.expr, err, tt.wantErr)
			}
			if got := errors.Is(err, ErrNeverFires); got != tt.never {
				t.Errorf("errors.Is(%v, ErrNeverFires) = %v, want %v", err, got, tt.never)
			}
		})
	}
}

func TestParseAccepts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		expr      string
		wantEvery time.Duration
		wantZone  string
	}{
		{"five fields", "0 3 * * *", 0, "UTC"},
		{"six fields", "0 0 3 * * *", 0, "UTC"},
		{"question mark", "0 3 ? * *", 0, "UTC"},
		{"month names", "0 3 1 jan,jul *", 0, "UTC"},
		{"every", "@every 1h30m", 90 * time.Minute, "UTC"},
		{"every with zone", "CRON_TZ=Europe/London @every 1m", time.Minute, "Europe/London"},
		{"tz prefix", "TZ=Asia/Kolkata 0 3 * * *", 0, "Asia/Kolkata"},
		{"tab after zone", "CRON_TZ=Asia/Kolkata\t0 3 * * *", 0, "Asia/Kolkata"},
		{"29 february or monday", "0 0 29 2 mon", 0, "UTC"},
		{"sunday as 7", "0 0 * * 7", 0, "UTC"},
		{"range to 7", "0 0 * * 5-7", 0, "UTC"},
		{"leading zero", "05 03 * * *", 0, "UTC"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := Parse(tt.expr, nil)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.expr, err)
			}
			if got := s.Every(); got != tt.wantEvery {
				t.Errorf("Every() = %v, want %v", got, tt.wantEvery)
			}
			if got := s.Location().String(); got != tt.wantZone {
				t.Errorf("Location() = %v, want %v", got, tt.wantZone)
			}
			if got := s.String(); got != tt.expr {
				t.Errorf("String() = %q, want %q", got, tt.expr)
			}
		})
	}
}

func TestExprWarning(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		expr string
		want string // a part of the warning; empty for none
	}{
		{"one star too many", "0 3 * * * *", `for 03:00 write "0 3 * * *" (for minute 3 of every hour, write "3 * * * *"`},
		{"keeps the other fields", "0 7 * * * 1-5", `for 07:00 write "0 7 * * 1-5"`},
		{"keeps the zone", "CRON_TZ=Europe/Berlin 0 3 * * * *", `write "CRON_TZ=Europe/Berlin 0 3 * * *"`},
		{"counts the runs", "0 3 * * * *", "runs at minute 3 of every hour, 24 times a day"},
		{"minute that cannot be an hour", "0 30 * * * *", ""},
		{"seconds not zero", "30 3 * * * *", ""},
		{"minute list", "0 3,33 * * * *", ""},
		{"minute step", "0 */5 * * * *", ""},
		{"hour given", "0 0 3 * * *", ""},
		{"five fields", "3 * * * *", ""},
		{"every", "@every 1h", ""},
		{"descriptor", "@hourly", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := mustExpr(t, tt.expr, "UTC").Warning()
			if (got == "") != (tt.want == "") || !strings.Contains(got, tt.want) {
				t.Errorf("warning(%q) = %q, want %q", tt.expr, got, tt.want)
			}
		})
	}
}

// TestExprStepMemo: step's kept answer is the one computed afresh, for the
// time it was computed for and for every time up to the instant it
// returned, across the daylight-saving transitions of several zones, and
// never for that instant itself.
func TestExprStepMemo(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ expr, zone, from string }{
		{"*/15 * * * *", "America/New_York", "2026-03-08T00:50:00-05:00"},
		{"*/15 0-3 * * *", "America/New_York", "2026-11-01T00:50:00-04:00"},
		{"30 1,2 * * *", "America/New_York", "2026-03-07T00:00:00-05:00"},
		{"30 1,2 * * *", "America/New_York", "2026-10-31T00:00:00-04:00"},
		{"0 * * * *", "Europe/London", "2026-10-24T22:00:00Z"},
		{"*/30 * * * *", "Australia/Lord_Howe", "2026-04-04T23:00:00+11:00"},
		{"*/20 * * * *", "Australia/Lord_Howe", "2026-10-03T23:00:00+10:30"},
		{"* * * * *", "UTC", "2026-03-01T12:00:00Z"},
	} {
		s := mustExpr(t, c.expr, c.zone)
		x := mustTime(t, c.from)
		for range 40 {
			y, dst := s.step(x)
			if want, wantDST := s.stepUncached(x); !y.Equal(want) || dst != wantDST {
				t.Fatalf("%s in %s: step(%v) = %v %t, want %v %t", c.expr, c.zone, x, y, dst, want, wantDST)
			}
			if y.IsZero() {
				break
			}
			for _, probe := range []time.Time{x.Add(time.Nanosecond), x.Add(y.Sub(x) / 2), y.Add(-time.Second), y.Add(-time.Nanosecond), y} {
				if probe.Before(x) {
					continue
				}
				got, gotDST := s.step(probe)
				want, wantDST := s.stepUncached(probe)
				if !got.Equal(want) || gotDST != wantDST {
					t.Fatalf("%s in %s: step(%v) after step(%v) = %v %t, want %v %t", c.expr, c.zone, probe, x, got, gotDST, want, wantDST)
				}
			}
			x = y
		}
	}
}

package dashboard

import (
	"testing"
	"time"
)

func TestDescribe(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ expr, want string }{
		{"0 3 * * *", "at 03:00, every day"},
		{"CRON_TZ=Europe/Paris 30 2 * * 1-5", "at 02:30, on Monday to Friday"},
		{"*/15 * * * *", "every 15 minutes"},
		{"* * * * *", "every minute"},
		{"5,35 * * * *", "every hour, at minute 5 and 35"},
		{"0 */6 * * *", "every 6 hours, at minute 0"},
		{"0 9,17 * * mon,thu", "at 09:00 and 17:00, on Monday and Thursday"},
		{"0 0 1 * *", "at 00:00, on day 1 of the month"},
		{"0 0 1 jan *", "at 00:00, on day 1 of the month in January"},
		{"0 8 * * 7", "at 08:00, on Sunday"},
		{"*/10 * * * * *", "every 10 seconds"},
		{"@every 90s", "every 1m30s"},
		{"@daily", "at 00:00, every day"},
		{"@hourly", "every hour, at minute 0"},
		{"0 9-17 * * *", "at minute 0 of hours 9-17, every day"},
		{"7-9/2 1 * * *", "minute 7-9/2; hour 1, every day"},
	} {
		if got := describe(tc.expr); got != tc.want {
			t.Errorf("describe(%q) = %q, want %q", tc.expr, got, tc.want)
		}
	}
}

func TestRelative(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "now"},
		{3*time.Hour + 59*time.Minute, "in 3 h"},
		{-5 * time.Minute, "5 min ago"},
		{-30 * time.Second, "30 s ago"},
		{72 * time.Hour, "in 3 d"},
	} {
		if got := relative(tc.d); got != tc.want {
			t.Errorf("relative(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

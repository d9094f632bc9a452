package dashboard

import (
	"fmt"
	"strings"
	"time"
)

// When is a time as a page shows it; the zero When shows "-".
type When struct {
	RFC3339 string // for the datetime attribute and data-instant
	Text    string // "2026-03-01 03:00:00 +01:00"
	Zone    string // the zone's name, such as Europe/Paris
	Rel     string // "in 3 h", "5 min ago", "now"
}

// IsZero reports whether w stands for no time.
func (w When) IsZero() bool { return w.RFC3339 == "" }

// when is t in loc (UTC when nil), relative to the dashboard's now.
func (s *server) when(t time.Time, loc *time.Location) When {
	return whenAt(t, loc, s.clock.Now())
}

func whenAt(t time.Time, loc *time.Location, now time.Time) When {
	if t.IsZero() {
		return When{}
	}
	if loc == nil {
		loc = time.UTC
	}
	t = t.In(loc)
	return When{RFC3339: t.Format(time.RFC3339Nano), Text: t.Format("2006-01-02 15:04:05 -07:00"), Zone: loc.String(),
		Rel: relative(t.Sub(now))}
}

// relative says d from now in one unit: "in 3 h", "5 min ago", "now".
func relative(d time.Duration) string {
	ago := d < 0
	if ago {
		d = -d
	}
	var n int64
	var unit string
	switch {
	case d < time.Second:
		return "now"
	case d < time.Minute:
		n, unit = int64(d/time.Second), "s"
	case d < time.Hour:
		n, unit = int64(d/time.Minute), "min"
	case d < 48*time.Hour:
		n, unit = int64(d/time.Hour), "h"
	default:
		n, unit = int64(d/(24*time.Hour)), "d"
	}
	if ago {
		return fmt.Sprintf("%d %s ago", n, unit)
	}
	return fmt.Sprintf("in %d %s", n, unit)
}

// duration says how long something took: "1m30s", "250ms", or "-".
func duration(from, to time.Time) string {
	if from.IsZero() || to.IsZero() {
		return "-"
	}
	d := to.Sub(from)
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// firstLine is s's first line, cut to n bytes at a rune boundary, with
// "…" when cut.
func firstLine(s string, n int) string {
	s = strings.TrimSpace(s)
	cut := false
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s, cut = s[:i], true
	}
	if len(s) > n {
		s, cut = strings.ToValidUTF8(s[:n], ""), true
	}
	if cut {
		s += "…"
	}
	return s
}

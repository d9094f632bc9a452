package cli

import (
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"time"
)

// rfc3339 formats t in loc with its offset, or "-" for the zero time.
func rfc3339(t time.Time, loc *time.Location) string {
	if t.IsZero() {
		return "-"
	}
	if loc == nil {
		loc = time.UTC
	}
	return t.In(loc).Format(time.RFC3339)
}

// instant formats t in loc as RFC 3339, with any fraction of a second:
// "@every" runs keep their cursor's fraction.
func instant(t time.Time, loc *time.Location) string {
	if t.IsZero() {
		return "-"
	}
	return t.In(loc).Format(time.RFC3339Nano)
}

// optTime is t in UTC as RFC 3339, or "" (a JSON field left out).
func optTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return rfc3339(t, time.UTC)
}

// plural returns "1 task" or "n tasks".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// versionList is vs as "1", "1 and 2" or "1, 2 and 3".
func versionList(vs []int) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = strconv.Itoa(v)
	}
	if len(parts) < 2 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// orDash is s, or "-" when s is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// deref returns *p, or "" for nil.
func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// ptr returns a pointer to v, for a JSON value that may be null.
func ptr[T any](v T) *T { return &v }

// writeJSON writes v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// durationOrNone is the age of the oldest ready job, or "none waiting".
func durationOrNone(d time.Duration) string {
	if d <= 0 {
		return "none waiting"
	}
	return d.Round(time.Millisecond).String()
}

// msDuration is a count of milliseconds as a duration's text.
func msDuration(ms int64) string {
	return (time.Duration(ms) * time.Millisecond).String()
}

// firstLine is the first line of s, cut to n bytes with an ellipsis.
func firstLine(s string, n int) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

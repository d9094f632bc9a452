package cron

import (
	"fmt"
	"strings"
)

// Warning returns what is probably a mistake in s, or "". Its one rule:
// six fields like "0 3 * * * *" (seconds 0, a minute that could be an
// hour, hour "*") run hourly, but most likely mean "0 3 * * *" with one
// "*" too many. The five-field "3 * * * *" raises no warning.
func (s *Expr) Warning() string {
	if s.every > 0 {
		return ""
	}
	_, rest, err := splitZone(s.expr)
	if err != nil {
		return ""
	}
	f := strings.Fields(rest)
	if len(f) != 6 || f[2] != "*" {
		return ""
	}
	sec, ok := digits(f[0])
	if !ok || sec != 0 {
		return ""
	}
	minute, ok := digits(f[1])
	if !ok || minute > 23 {
		return ""
	}
	prefix := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s.expr), rest))
	if prefix != "" {
		prefix += " "
	}
	meant := prefix + strings.Join(append([]string{f[0], f[1]}, f[3:]...), " ")
	hourly := prefix + strings.Join(append([]string{f[1], "*"}, f[3:]...), " ")
	return fmt.Sprintf("%q has six fields, so the first is seconds: it runs at minute %d of every hour, 24 times a day; "+
		"for %02d:00 write %q (for minute %d of every hour, write %q, which raises no warning)",
		s.expr, minute, minute, meant, minute, hourly)
}

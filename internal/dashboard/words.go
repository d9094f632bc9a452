package dashboard

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// describe says a cron expression in words ("at 03:00, Monday to
// Friday"), else field by field ("minute 5,35; hour 9-17"); the page shows
// the expression too. It leaves out CRON_TZ=: the page names the zone.
func describe(expr string) string {
	expr = strings.TrimSpace(expr)
	if strings.HasPrefix(expr, "CRON_TZ=") || strings.HasPrefix(expr, "TZ=") {
		if _, rest, ok := strings.Cut(expr, " "); ok {
			expr = strings.TrimSpace(rest)
		}
	}
	if d, ok := strings.CutPrefix(expr, "@every"); ok {
		if dur, err := time.ParseDuration(strings.TrimSpace(d)); err == nil {
			return "every " + dur.String()
		}
		return expr
	}
	switch expr {
	case "@yearly", "@annually":
		return "at 00:00 on 1 January"
	case "@monthly":
		return "at 00:00 on day 1 of the month"
	case "@weekly":
		return "at 00:00, on Sunday"
	case "@daily", "@midnight":
		return "at 00:00, every day"
	case "@hourly":
		return "every hour, at minute 0"
	}
	f := strings.Fields(expr)
	sec := "0"
	switch len(f) {
	case 5:
	case 6:
		sec, f = f[0], f[1:]
	default:
		return expr
	}
	when := describeTime(sec, f[0], f[1])
	days := describeDays(f[2], f[3], f[4])
	if days == "" {
		if strings.HasPrefix(when, "every ") {
			return when
		}
		return when + ", every day"
	}
	return when + ", " + days
}

// describeTime says the seconds, minute and hour fields in words.
func describeTime(sec, min, hour string) string {
	if sec != "0" {
		if sec == "*" && min == "*" && hour == "*" {
			return "every second"
		}
		if n, ok := step(sec); ok && min == "*" && hour == "*" {
			return fmt.Sprintf("every %d seconds", n)
		}
		return fmt.Sprintf("second %s; minute %s; hour %s", sec, min, hour)
	}
	ms, mok := numbers(min)
	hs, hok := numbers(hour)
	switch {
	case mok && hok && len(ms)*len(hs) <= 6:
		var at []string
		for _, h := range hs {
			for _, m := range ms {
				at = append(at, fmt.Sprintf("%02d:%02d", h, m))
			}
		}
		return "at " + list(at)
	case min == "*" && hour == "*":
		return "every minute"
	case hour == "*":
		if n, ok := step(min); ok {
			return fmt.Sprintf("every %d minutes", n)
		}
		if mok {
			return "every hour, at minute " + list(itoa(ms))
		}
	case mok && len(ms) == 1:
		if n, ok := step(hour); ok {
			return fmt.Sprintf("every %d hours, at minute %d", n, ms[0])
		}
		return fmt.Sprintf("at minute %d of hours %s", ms[0], hour)
	}
	return fmt.Sprintf("minute %s; hour %s", min, hour)
}

// describeDays says the day and month fields in words; "" for every day.
func describeDays(dom, month, dow string) string {
	var parts []string
	any := func(f string) bool { return f == "*" || f == "?" }
	switch {
	case !any(dom) && !any(dow):
		parts = append(parts, "on day "+dom+" of the month or on "+weekdays(dow))
	case !any(dom):
		parts = append(parts, "on day "+dom+" of the month")
	case !any(dow):
		parts = append(parts, "on "+weekdays(dow))
	}
	if !any(month) {
		parts = append(parts, "in "+months(month))
	}
	return strings.Join(parts, " ")
}

var weekdayNames = []string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}

var monthNames = []string{"", "January", "February", "March", "April", "May", "June", "July", "August",
	"September", "October", "November", "December"}

var dowValues = map[string]int{"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}

var monthValues = map[string]int{"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
	"jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12}

// weekdays names a day-of-week field's days ("Monday to Friday"), or
// returns it as it is when it is not a list of names, numbers and ranges.
func weekdays(f string) string { return names(f, dowValues, weekdayNames) }

// months names the months of a month field, as weekdays.
func months(f string) string { return names(f, monthValues, monthNames) }

func names(f string, values map[string]int, names []string) string {
	value := func(s string) (int, bool) {
		if v, ok := values[strings.ToLower(s)]; ok {
			return v, true
		}
		n, err := strconv.Atoi(s)
		return n, err == nil && n >= 0 && n < len(names) && names[n] != ""
	}
	var out []string
	for _, e := range strings.Split(f, ",") {
		lo, hi, isRange := strings.Cut(e, "-")
		a, ok := value(lo)
		if !ok {
			return f
		}
		if !isRange {
			out = append(out, names[a])
			continue
		}
		b, ok := value(hi)
		if !ok {
			return f
		}
		out = append(out, names[a]+" to "+names[b])
	}
	return list(out)
}

// numbers returns the values of a field of plain numbers ("0,30").
func numbers(f string) ([]int, bool) {
	var out []int
	for _, e := range strings.Split(f, ",") {
		n, err := strconv.Atoi(e)
		if err != nil || n < 0 {
			return nil, false
		}
		out = append(out, n)
	}
	return out, true
}

// step returns S of a field "*/S" (or "0/S").
func step(f string) (int, bool) {
	base, s, ok := strings.Cut(f, "/")
	if !ok || (base != "*" && base != "0") {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && n > 0
}

func itoa(ns []int) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = strconv.Itoa(n)
	}
	return out
}

// list joins "a", "a and b", "a, b and c".
func list(s []string) string {
	if len(s) <= 1 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

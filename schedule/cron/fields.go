package cron

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// cronField is one field of a cron expression.
type cronField struct {
	name     string
	min, max int
	names    map[string]int
}

var (
	secondsField = cronField{name: "seconds", max: 59}
	minuteField  = cronField{name: "minute", max: 59}
	hourField    = cronField{name: "hour", max: 23}
	domField     = cronField{name: "day-of-month", min: 1, max: 31}
	monthField   = cronField{name: "month", min: 1, max: 12, names: map[string]int{
		"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
		"jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12}}
	// 7 is Sunday too, as in cron.
	dowField = cronField{name: "day-of-week", max: 7, names: map[string]int{
		"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}}
)

// checkFields checks a 5- or 6-field expression strictly and returns it as
// robfig's parser reads it, with weekday 7 as 0. That parser reads "*-5"
// as "*", drops empty list items, and its messages name neither field nor
// fix. Other forms are returned unchanged for the parser.
func checkFields(expr string) (string, error) {
	f := strings.Fields(expr)
	var kinds []cronField
	switch {
	case strings.HasPrefix(expr, "@"):
		return expr, nil
	case len(f) == 5:
		kinds = []cronField{minuteField, hourField, domField, monthField, dowField}
	case len(f) == 6:
		kinds = []cronField{secondsField, minuteField, hourField, domField, monthField, dowField}
	default:
		return expr, nil
	}
	for i, k := range kinds {
		v, err := k.check(f[i])
		if err != nil {
			return "", fmt.Errorf("%s field %q: %w", k.name, f[i], err)
		}
		f[i] = v
	}
	return strings.Join(f, " "), nil
}

// check checks one field and returns it with weekday 7 as 0.
func (k cronField) check(field string) (string, error) {
	items := strings.Split(field, ",")
	for i, item := range items {
		lo, hi, step, err := k.item(item)
		if err != nil {
			if len(items) > 1 {
				err = fmt.Errorf("%q: %w", item, err)
			}
			return "", err
		}
		if hi == 7 && k.max == 7 {
			var days []string
			for d := lo; d <= hi; d += step {
				days = append(days, strconv.Itoa(d%7))
			}
			items[i] = strings.Join(days, ",")
		}
	}
	return strings.Join(items, ","), nil
}

// item parses one list element: "*", "?", N or N-M, each with an optional
// "/S". N/S means N-max/S.
func (k cronField) item(s string) (lo, hi, step int, err error) {
	if s == "" {
		return 0, 0, 0, errors.New("empty element in a list (two commas, or a comma at an end)")
	}
	base, stepText, hasStep := strings.Cut(s, "/")
	step = 1
	if hasStep {
		switch n, ok := digits(stepText); {
		case stepText == "":
			return 0, 0, 0, errors.New("nothing after \"/\": write a step such as */5")
		case !ok:
			return 0, 0, 0, fmt.Errorf("step %q is not a number", stepText)
		case n == 0:
			return 0, 0, 0, errors.New("a step of 0 never advances: want 1 or more")
		default:
			step = n
		}
	}
	lowText, highText, isRange := strings.Cut(base, "-")
	switch {
	case base == "*" || base == "?":
		return k.min, k.top(), step, nil
	case base == "":
		return 0, 0, 0, errors.New("nothing before \"/\": write */N for every N, or a number or range before it")
	case lowText == "*" || lowText == "?":
		return 0, 0, 0, fmt.Errorf("a range cannot start at %q: write %q for every %s, or N-M", lowText, "*", k.name)
	case lowText == "":
		return 0, 0, 0, errors.New("the range has no start (negative numbers are not allowed)")
	case isRange && highText == "":
		return 0, 0, 0, errors.New("the range has no end")
	}
	if lo, err = k.value(lowText); err != nil {
		return 0, 0, 0, err
	}
	switch {
	case isRange:
		if hi, err = k.value(highText); err != nil {
			return 0, 0, 0, err
		}
		if lo > hi {
			return 0, 0, 0, errors.New("the range starts after it ends")
		}
	case hasStep:
		// robfig's extension: N/S runs from N to the field's end.
		hi = max(lo, k.top())
	default:
		hi = lo
	}
	return lo, hi, step, nil
}

// top is the end of "*" and N/S: Saturday, not Sunday, for weekdays.
func (k cronField) top() int {
	if k.max == 7 {
		return 6
	}
	return k.max
}

func (k cronField) value(s string) (int, error) {
	if n, ok := k.names[strings.ToLower(s)]; ok {
		return n, nil
	}
	n, ok := digits(s)
	switch {
	case !ok:
		return 0, fmt.Errorf("%q is not a number", s)
	case n < k.min:
		return 0, fmt.Errorf("%d is below the minimum %d", n, k.min)
	case n > k.max:
		return 0, fmt.Errorf("%d is above the maximum %d", n, k.max)
	}
	return n, nil
}

// digits parses one to four ASCII digits.
func digits(s string) (int, bool) {
	if s == "" || len(s) > 4 {
		return 0, false
	}
	n := 0
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, true
}

// splitZone splits a CRON_TZ= or TZ= prefix off expr. robfig's parser
// panics on a zone without a space after it.
func splitZone(expr string) (*time.Location, string, error) {
	expr = strings.TrimSpace(expr)
	for _, p := range []string{"CRON_TZ=", "TZ="} {
		rest, ok := strings.CutPrefix(expr, p)
		if !ok {
			continue
		}
		i := strings.IndexFunc(rest, unicode.IsSpace)
		if i < 0 {
			return nil, "", fmt.Errorf("nothing after %s%s", p, rest)
		}
		loc, err := LoadZone(rest[:i])
		if err != nil {
			return nil, "", err
		}
		return loc, strings.TrimSpace(rest[i:]), nil
	}
	if expr == "" {
		return nil, "", errors.New("empty spec")
	}
	return nil, expr, nil
}

// HasZonePrefix reports whether expr starts with a CRON_TZ= or TZ= prefix.
func HasZonePrefix(expr string) bool {
	expr = strings.TrimSpace(expr)
	return strings.HasPrefix(expr, "CRON_TZ=") || strings.HasPrefix(expr, "TZ=")
}

// LoadZone loads an IANA zone. It refuses "Local" and "": a schedule must
// not depend on the host's settings.
func LoadZone(name string) (*time.Location, error) {
	if name == "" || name == "Local" {
		return nil, fmt.Errorf("unknown time zone %q: want an IANA name such as Europe/Berlin or UTC", name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %q%s", name, zoneHint(name))
	}
	return loc, nil
}

package config

import (
	"cmp"
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/scheduler-run/scheduler/schedule/cron"
)

// The file decodes in two steps so that one bad value hides no other:
// every key into toml.Primitive, then each key into its Go type. Types
// that need checking implement UnmarshalText, whose error the decoder
// reports as a toml.ParseError.

// loader decodes and validates one file, collecting every problem.
type loader struct {
	file      string
	data      string
	md        toml.MetaData
	loc       *locator
	unplaced  *scheduleRun // the run whose keys loc is to locate
	errs      Errors
	failed    map[string]bool // paths whose value did not decode
	names     map[int]string  // schedule names by position
	twins     map[string]bool // see findTwins
	truncated bool            // MaxErrors reached
	notified  map[string]bool // notify tasks whose templates were checked
	first     int             // position of md's first [[schedule]] (see loadInRuns)

	// Values many schedules repeat, parsed once per load and shared.
	zones map[string]*time.Location
	crons map[string]bool // cron texts that parsed
	exprs map[exprKey]*cron.Expr
	strs  map[string]string // see intern
}

// exprKey is a cron expression bound to a zone.
type exprKey struct {
	text string
	loc  *time.Location
}

// where locates a problem: table, name, and the key's or table's path.
type where struct {
	table string
	job   string
	field string
	path  []string
}

func (w where) with(field string) where {
	w.field = field
	path := make([]string, len(w.path)+1)
	copy(path, w.path)
	path[len(w.path)] = field
	w.path = path
	return w
}

func newLoader(file string, data string) *loader {
	return &loader{file: file, data: data, failed: map[string]bool{}, names: map[int]string{},
		zones: map[string]*time.Location{}, crons: map[string]bool{}, exprs: map[exprKey]*cron.Expr{}, strs: map[string]string{}}
}

func (l *loader) add(w where, err error) {
	line := l.line(w.path...)
	l.errs = append(l.errs, &Error{File: l.file, Line: line, Table: w.table, Job: w.job, Field: w.field, Err: err})
}

// warning returns a Config.Warnings entry at w.
func (l *loader) warning(w where, err error) *Error {
	line := l.line(w.path...)
	// The job's name may be part of the decoder's copy of a run.
	return &Error{File: l.file, Line: line, Table: w.table, Job: strings.Clone(w.job), Field: w.field, Err: err}
}

// line returns the line of path (see locator.line), locating the keys of
// the run being loaded on first use: only problems and warnings need them.
func (l *loader) line(path ...string) int {
	if l.unplaced != nil {
		l.loc, l.unplaced = locateRun(l.data, *l.unplaced), nil
	}
	if l.loc == nil {
		return 0
	}
	return l.loc.line(path...)
}

func (l *loader) errorf(w where, format string, args ...any) {
	l.add(w, fmt.Errorf(format, args...))
}

func (l *loader) sortedErrors() Errors {
	slices.SortStableFunc(l.errs, func(a, b *Error) int {
		return cmp.Compare(lineOrder(a.Line), lineOrder(b.Line))
	})
	if l.truncated {
		l.errs = append(l.errs, &Error{File: l.file,
			Err: fmt.Errorf("%w: stopped looking after %d", ErrTooManyProblems, MaxErrors)})
	}
	return l.errs
}

// decodeFile parses the document. A syntax error ends loading.
func (l *loader) decodeFile() (rawFile, bool) {
	var raw rawFile
	md, err := toml.Decode(l.data, &raw)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			l.errs = append(l.errs, &Error{File: l.file, Line: pe.Position.Line, Err: &syntaxError{pe: pe}})
		} else {
			l.errs = append(l.errs, &Error{File: l.file, Err: err})
		}
		return raw, false
	}
	l.md = md
	l.loc = locate(l.data)
	return raw, true
}

// present reports whether the key of p was in the file.
func present(p toml.Primitive) bool { return !reflect.ValueOf(p).IsZero() }

// decode decodes p into v and reports whether the key was given and
// decoded.
func (l *loader) decode(p toml.Primitive, v any, w where) bool {
	if !present(p) || len(l.twins) > 0 && l.twins[pathKey(w.path)] {
		return false
	}
	if len(l.errs) >= MaxErrors {
		// The decoder's error path rescans the file, so thousands of bad
		// values would be slow. The file is rejected already.
		l.truncated = true
		return false
	}
	if l.decodeList(p, v) {
		return true
	}
	var raw any
	if err := l.md.PrimitiveDecode(p, &raw); err != nil {
		l.failed[pathKey(w.path)] = true
		l.add(w, err)
		return false
	}
	// The decoder leaves a map alone when the value is not a table, and
	// turns numbers into text for UnmarshalText: check the shape first.
	if !fits(raw, reflect.TypeOf(v).Elem()) {
		l.failed[pathKey(w.path)] = true
		l.add(w, fmt.Errorf("wrong type: want %s, got %s", wantType(v), tomlType(raw)))
		return false
	}
	if done, err := l.decodeScalar(raw, v); done {
		if err != nil {
			l.failed[pathKey(w.path)] = true
			l.add(w, err)
			return false
		}
		return true
	}
	err := l.md.PrimitiveDecode(p, v)
	if err == nil {
		return true
	}
	l.failed[pathKey(w.path)] = true
	var pe toml.ParseError
	if !errors.As(err, &pe) {
		l.add(w, fmt.Errorf("wrong type: want %s, got %s", wantType(v), tomlType(raw)))
		return false
	}
	// An UnmarshalText failed. Run it again for the error itself, which
	// the ParseError drops, so that errors.Is sees sentinels.
	if tu, ok := v.(encoding.TextUnmarshaler); ok {
		if s, ok := raw.(string); ok {
			if err := tu.UnmarshalText([]byte(s)); err != nil {
				l.add(w, err)
				return false
			}
		}
	}
	l.add(w, errors.New(pe.Message))
	return false
}

// decodeList decodes an array of tables straight into v, a slice of
// Primitives, and reports whether it did: the first decode of a whole
// [[schedule]] array into any would copy every table. Any failure is left
// to decode's general path, which reports it.
func (l *loader) decodeList(p toml.Primitive, v any) bool {
	switch v.(type) {
	case *[]toml.Primitive:
	default:
		return false
	}
	return l.md.PrimitiveDecode(p, v) == nil
}

// decodeScalar stores raw, already decoded, into v when v is a string,
// integer, boolean or text type and raw has its TOML type, so that the
// value is not decoded a second time. It reports whether it handled v,
// and UnmarshalText's error. Zones and cron texts come from the load's
// caches.
func (l *loader) decodeScalar(raw, v any) (bool, error) {
	switch v := v.(type) {
	case *string:
		s, ok := raw.(string)
		if ok {
			*v = s
		}
		return ok, nil
	case *int:
		n, ok := raw.(int64)
		if ok && int64(int(n)) == n {
			*v = int(n)
			return true, nil
		}
		return false, nil
	case *bool:
		b, ok := raw.(bool)
		if ok {
			*v = b
		}
		return ok, nil
	case *zone:
		s := raw.(string) // fits checked
		if loc, ok := l.zones[s]; ok {
			v.loc = loc
			return true, nil
		}
		err := v.UnmarshalText([]byte(s))
		if err == nil {
			l.zones[s] = v.loc
		}
		return true, err
	case *cronText:
		s := raw.(string)
		if l.crons[s] {
			*v = cronText(s)
			return true, nil
		}
		err := v.UnmarshalText([]byte(s))
		if err == nil {
			l.crons[s] = true
		}
		return true, err
	case encoding.TextUnmarshaler:
		return true, v.UnmarshalText([]byte(raw.(string)))
	}
	return false, nil
}

var (
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	primitive       = reflect.TypeFor[toml.Primitive]()
)

// fits reports whether a decoded TOML value has the shape of Go type t.
func fits(raw any, t reflect.Type) bool {
	if t == primitive {
		return true
	}
	if reflect.PointerTo(t).Implements(textUnmarshaler) {
		_, ok := raw.(string)
		return ok
	}
	switch t.Kind() {
	case reflect.Map, reflect.Struct:
		m, ok := raw.(map[string]any)
		if !ok {
			return false
		}
		if t.Kind() == reflect.Map {
			for _, e := range m {
				if !fits(e, t.Elem()) {
					return false
				}
			}
		}
		return true
	case reflect.Slice:
		switch a := raw.(type) {
		case []any:
			for _, e := range a {
				if !fits(e, t.Elem()) {
					return false
				}
			}
			return true
		case []map[string]any:
			for _, e := range a {
				if !fits(e, t.Elem()) {
					return false
				}
			}
			return true
		}
		return false
	}
	return true
}

func wantType(v any) string {
	switch v.(type) {
	case *string, *duration, *size, *rate, *zone, *cronText, *cron.CatchUp, *Overlap:
		return "a string"
	case *int:
		return "an integer"
	case *float64:
		return "a number"
	case *bool:
		return "a boolean"
	case *[]string:
		return "an array of strings"
	case *[]int:
		return "an array of integers"
	case *map[string]string:
		return "a table of strings"
	case *map[string]any, *rawScheduler, *rawHTTP, *rawAPI, *rawTask, *rawSchedule, *rawPool, *rawTracing, *map[string]toml.Primitive:
		return "a table"
	case *[]map[string]any, *[]toml.Primitive, *[]map[string]toml.Primitive:
		return "an array of tables"
	}
	return fmt.Sprintf("%T", v)
}

func tomlType(v any) string {
	switch v := v.(type) {
	case string:
		return "a string"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case bool:
		return "a boolean"
	case time.Time:
		return "a date-time"
	case map[string]any:
		return "a table"
	case []map[string]any:
		return "an array of tables"
	case []any:
		if len(v) == 0 {
			return "an empty array"
		}
		first := tomlType(v[0])
		for _, e := range v[1:] {
			if tomlType(e) != first {
				return "a mixed array"
			}
		}
		return "an array of " + strings.TrimPrefix(strings.TrimPrefix(first, "an "), "a ") + "s"
	}
	return fmt.Sprintf("%T", v)
}

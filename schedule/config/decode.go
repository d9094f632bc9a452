package config

import (
	"cmp"
	"encoding"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/scheduler-run/scheduler/schedule/cron"
	"github.com/scheduler-run/scheduler/schedule/internal/suggest"
)

// The file decodes in two steps so that one bad value does not hide the
// others: first every table and every key into toml.Primitive, then each key
// on its own into its Go type. A key whose type needs checking (durations,
// zones, cron expressions, policies) has a type with UnmarshalText, whose
// error the decoder reports as a toml.ParseError.

type rawFile struct {
	Scheduler toml.Primitive `toml:"scheduler"`
	Tasks     toml.Primitive `toml:"tasks"`
	Schedule  toml.Primitive `toml:"schedule"`
	HTTP      toml.Primitive `toml:"http"`
	Pools     toml.Primitive `toml:"pools"`
}

type rawHTTP struct {
	Listen         toml.Primitive `toml:"listen"`
	Dashboard      toml.Primitive `toml:"dashboard"`
	Actions        toml.Primitive `toml:"actions"`
	TokenHash      toml.Primitive `toml:"token_hash"`
	User           toml.Primitive `toml:"user"`
	Hosts          toml.Primitive `toml:"hosts"`
	TrustedProxies toml.Primitive `toml:"trusted_proxies"`
}

type rawScheduler struct {
	DB               toml.Primitive `toml:"db"`
	Workers          toml.Primitive `toml:"workers"`
	Timezone         toml.Primitive `toml:"timezone"`
	RetainDone       toml.Primitive `toml:"retain_done"`
	MaintenanceEvery toml.Primitive `toml:"maintenance_every"`
	ShutdownGrace    toml.Primitive `toml:"shutdown_grace"`
	MisfireGrace     toml.Primitive `toml:"misfire_grace"`
	Lease            toml.Primitive `toml:"lease"`
	StartWithin      toml.Primitive `toml:"start_within"`
	Deadline         toml.Primitive `toml:"deadline"`
	Notify           toml.Primitive `toml:"notify"`
}

type rawTask struct {
	Command            toml.Primitive `toml:"command"`
	Env                toml.Primitive `toml:"env"`
	Dir                toml.Primitive `toml:"dir"`
	URL                toml.Primitive `toml:"url"`
	Method             toml.Primitive `toml:"method"`
	Headers            toml.Primitive `toml:"headers"`
	FollowRedirects    toml.Primitive `toml:"follow_redirects"`
	Timeout            toml.Primitive `toml:"timeout"`
	MaxAttempts        toml.Primitive `toml:"max_attempts"`
	Backoff            toml.Primitive `toml:"backoff"`
	MaxBackoff         toml.Primitive `toml:"max_backoff"`
	Concurrency        toml.Primitive `toml:"concurrency"`
	PermanentExitCodes toml.Primitive `toml:"permanent_exit_codes"`
	Priority           toml.Primitive `toml:"priority"`
	KillGrace          toml.Primitive `toml:"kill_grace"`
	LogOutput          toml.Primitive `toml:"log_output"`
	MemoryMax          toml.Primitive `toml:"memory_max"`
	CPUTimeMax         toml.Primitive `toml:"cpu_time_max"`
	OpenFilesMax       toml.Primitive `toml:"open_files_max"`
	RetryOverLimit     toml.Primitive `toml:"retry_over_limit"`
	GiveUpAfter        toml.Primitive `toml:"give_up_after"`
	Redact             toml.Primitive `toml:"redact"`
	RedactOutput       toml.Primitive `toml:"redact_output"`
	Version            toml.Primitive `toml:"version"`
	Accepts            toml.Primitive `toml:"accepts"`
	Rate               toml.Primitive `toml:"rate"`
	RateBurst          toml.Primitive `toml:"rate_burst"`
	RateKey            toml.Primitive `toml:"rate_key"`
}

type rawSchedule struct {
	Name         toml.Primitive `toml:"name"`
	Cron         toml.Primitive `toml:"cron"`
	Timezone     toml.Primitive `toml:"timezone"`
	Task         toml.Primitive `toml:"task"`
	Payload      toml.Primitive `toml:"payload"`
	ForEach      toml.Primitive `toml:"for_each"`
	CatchUp      toml.Primitive `toml:"catch_up"`
	CatchUpLimit toml.Primitive `toml:"catch_up_limit"`
	Overlap      toml.Primitive `toml:"overlap"`
	StartWithin  toml.Primitive `toml:"start_within"`
	Deadline     toml.Primitive `toml:"deadline"`
	Notify       toml.Primitive `toml:"notify"`
}

// The keys each table may hold. TOML keys are case-sensitive; the decoder
// matches struct fields case-insensitively, so the exact spelling is
// checked against these.
var (
	schedulerKeys = tomlKeys(rawScheduler{})
	taskKeys      = tomlKeys(rawTask{})
	scheduleKeys  = tomlKeys(rawSchedule{})
	httpKeys      = tomlKeys(rawHTTP{})
	fileKeys      = tomlKeys(rawFile{})
)

func tomlKeys(v any) map[string]bool {
	t := reflect.TypeOf(v)
	keys := make(map[string]bool, t.NumField())
	for i := range t.NumField() {
		keys[t.Field(i).Tag.Get("toml")] = true
	}
	return keys
}

// duration is a Go duration string such as "90s" or "1h30m"; not negative.
type duration time.Duration

func (d *duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("%q is not a duration such as 90s or 1h30m", b)
	}
	if v < 0 {
		return fmt.Errorf("duration %s is negative", v)
	}
	*d = duration(v)
	return nil
}

// rate is a rate limit's "N/DURATION": N starts per DURATION, a Go
// duration or a bare unit ("10/1m", "2/s", "500/1h").
type rate struct {
	starts int
	per    time.Duration
}

func (r *rate) UnmarshalText(b []byte) error {
	bad := fmt.Errorf("%q is not a rate such as 10/1m (10 starts a minute) or 2/s", b)
	n, d, ok := strings.Cut(string(b), "/")
	if !ok {
		return bad
	}
	starts, err := strconv.Atoi(strings.TrimSpace(n))
	if err != nil {
		return bad
	}
	d = strings.TrimSpace(d)
	if d == "s" || d == "m" || d == "h" {
		d = "1" + d
	}
	per, err := time.ParseDuration(d)
	if err != nil {
		return bad
	}
	if starts < 1 || per <= 0 {
		return fmt.Errorf("rate %q: want at least 1 start per positive duration", b)
	}
	*r = rate{starts: starts, per: per}
	return nil
}

// size is an amount of memory: an integer of bytes followed by a unit K,
// M, G or T, powers of 1024 as in systemd's MemoryMax=, which may be spelt
// KiB, MiB, GiB, TiB; no unit means bytes. Decimal units (MB) are refused
// rather than guessed.
type size int64

func (z *size) UnmarshalText(b []byte) error {
	v, err := parseSize(string(b))
	if err != nil {
		return err
	}
	*z = size(v)
	return nil
}

// sizeUnits are the units of a size, longest spelling first.
var sizeUnits = []struct {
	suffix string
	shift  uint
}{
	{"KiB", 10}, {"MiB", 20}, {"GiB", 30}, {"TiB", 40},
	{"K", 10}, {"M", 20}, {"G", 30}, {"T", 40}, {"B", 0},
}

func parseSize(s string) (int64, error) {
	bad := fmt.Errorf("%q is not a size such as 512MiB, 2G or 1048576", s)
	num, shift := s, uint(0)
	for _, u := range sizeUnits {
		if strings.HasSuffix(s, u.suffix) {
			num, shift = strings.TrimSuffix(s, u.suffix), u.shift
			break
		}
	}
	if num == "" || strings.TrimLeft(num, "0123456789") != "" {
		if strings.HasSuffix(s, "B") && !strings.HasSuffix(s, "iB") {
			return 0, fmt.Errorf("%q: decimal units are ambiguous here; write KiB, MiB, GiB or TiB (powers of 1024)", s)
		}
		return 0, bad
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n > math.MaxInt64>>shift {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return n << shift, nil
}

// zone is an IANA time zone name.
type zone struct{ loc *time.Location }

func (z *zone) UnmarshalText(b []byte) error {
	loc, err := cron.LoadZone(string(b))
	if err != nil {
		return err
	}
	z.loc = loc
	return nil
}

// cronText is a cron expression, checked in UTC; Schedule binds its zone.
type cronText string

func (c *cronText) UnmarshalText(b []byte) error {
	if _, err := cron.Parse(string(b), time.UTC); err != nil {
		return err
	}
	*c = cronText(b)
	return nil
}

// loader decodes and validates one file, collecting every problem.
type loader struct {
	file      string
	data      string
	md        toml.MetaData
	loc       *locator
	errs      Errors
	failed    map[string]bool // locator paths whose value did not decode
	names     map[int]string  // schedule names by position, for messages
	twins     map[string]bool // locator paths of keys spelt twice in one table (see findTwins)
	truncated bool            // MaxErrors reached: some values were not decoded
	notified  map[string]bool // notify tasks whose templates were run over an alarm's payload
}

// where locates a problem: the table, its name, and the locator path of the
// key (or of the table).
type where struct {
	table string
	job   string
	field string
	path  []string
}

func (w where) with(field string) where {
	w.field = field
	w.path = append(append([]string(nil), w.path...), field)
	return w
}

func newLoader(file string, data []byte) *loader {
	return &loader{file: file, data: string(data), failed: map[string]bool{}, names: map[int]string{}}
}

func (l *loader) add(w where, err error) {
	line := 0
	if l.loc != nil {
		line = l.loc.line(w.path...)
	}
	l.errs = append(l.errs, &Error{File: l.file, Line: line, Table: w.table, Job: w.job, Field: w.field, Err: err})
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

// MaxErrors is how many problems Load reports before it stops
// decoding the rest of a file.
const MaxErrors = 100

// ErrTooManyProblems is wrapped by the last Error of a list cut short
// at MaxErrors: it is a note, not a problem of its own.
var ErrTooManyProblems = errors.New("too many problems")

// lineOrder puts problems without a line last.
func lineOrder(line int) int {
	if line == 0 {
		return int(^uint(0) >> 1)
	}
	return line
}

// syntaxError is a TOML syntax error; the line is in Error.
type syntaxError struct{ pe toml.ParseError }

func (e *syntaxError) Error() string { return e.pe.Message }
func (e *syntaxError) Unwrap() error { return e.pe }

// decodeFile parses the document. A syntax error ends loading: nothing
// after it can be trusted.
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

// decode decodes p into v when the key was given, and reports whether it
// was given and decoded.
func (l *loader) decode(p toml.Primitive, v any, w where) bool {
	if !present(p) || l.twins[pathKey(w.path)] {
		return false
	}
	if len(l.errs) >= MaxErrors {
		// The decoder's error path rescans the whole file: a file with
		// thousands of bad values would take seconds per thousand. It is
		// rejected already; stop looking.
		l.truncated = true
		return false
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
	// An UnmarshalText failed. The ParseError keeps only its message: run
	// it again for the error itself, so that errors.Is sees sentinels.
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

var (
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	primitive       = reflect.TypeFor[toml.Primitive]()
)

// fits reports whether a decoded TOML value has the shape of Go type t:
// tables for maps and structs, arrays for slices, strings for text types.
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
	case *bool:
		return "a boolean"
	case *[]string:
		return "an array of strings"
	case *[]int:
		return "an array of integers"
	case *map[string]string:
		return "a table of strings"
	case *map[string]any, *rawScheduler, *rawHTTP, *rawTask, *rawSchedule, *rawPool, *map[string]toml.Primitive:
		return "a table"
	case *[]map[string]any, *[]toml.Primitive, *[]map[string]toml.Primitive:
		return "an array of tables"
	}
	return fmt.Sprintf("%T", v)
}

// tomlType describes a decoded TOML value.
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

// checkKeys reports keys the file may not hold: keys MetaData.Undecoded
// lists (outside the free-form payload and for_each), and keys whose
// spelling differs from the expected one only in case.
func (l *loader) checkKeys() {
	undecoded := map[string]bool{}
	for _, k := range l.md.Undecoded() {
		undecoded[k.String()] = true
	}
	seen := map[string]bool{}
	idx := -1
	for _, k := range l.md.Keys() {
		if len(k) == 1 && k[0] == "schedule" {
			idx++
		}
		p := l.keyPlace(k, idx)
		if p.inside || (p.known && !undecoded[k.String()]) || l.underFailed(p.at.path) {
			continue
		}
		if pk := pathKey(p.at.path[:p.depth]); !seen[pk] {
			seen[pk] = true
			key := p.at.path[p.depth-1]
			if lower := strings.ToLower(key); lower != key && l.knownIn(k[:min(len(k), p.depth)], lower) {
				l.errorf(p.at, "unknown key %q (keys are case-sensitive: %q)", key, lower)
			} else {
				l.errorf(p.at, "unknown key %q%s", key, keyHint(key, l.keysOf(k[:min(len(k), p.depth)])))
			}
		}
	}
}

// findTwins notes the keys whose table also holds a key spelt the same but
// for case (cron and Cron). The decoder matches struct fields without
// regard to case and takes either value, depending on its map order; such a
// value is not decoded at all (checkKeys reports the misspelt key), so that
// the problems listed are the same at every load.
func (l *loader) findTwins() {
	spellings := map[string]map[string]bool{}
	idx := -1
	for _, k := range l.md.Keys() {
		if len(k) == 1 && k[0] == "schedule" {
			idx++
		}
		// The key's top-level table and its field in that table; Keys lists
		// tables that are only implied by a longer key (tasks in
		// [tasks.x]) only through those keys.
		for n := range min(len(k), 3) {
			p := l.keyPlace(k[:n+1], idx)
			if p.inside || len(p.at.path) != p.depth {
				continue
			}
			last := p.at.path[p.depth-1]
			canonical := pathKey(append(slices.Clone(p.at.path[:p.depth-1]), strings.ToLower(last)))
			if spellings[canonical] == nil {
				spellings[canonical] = map[string]bool{}
			}
			spellings[canonical][last] = true
		}
	}
	l.twins = map[string]bool{}
	for canonical, s := range spellings {
		if len(s) > 1 {
			l.twins[canonical] = true
		}
	}
}

// keyHint suggests the keys of a table nearest to an unknown key.
func keyHint(key string, known map[string]bool) string {
	return suggest.Hint(key, slices.Collect(maps.Keys(known)))
}

// knownIn reports whether name is a key the table of file key k may hold.
func (l *loader) knownIn(k toml.Key, name string) bool {
	return l.keysOf(k)[name]
}

// keysOf returns the keys the table of file key k may hold.
func (l *loader) keysOf(k toml.Key) map[string]bool {
	switch {
	case k[0] == "scheduler" && len(k) >= 2:
		return schedulerKeys
	case k[0] == "tasks" && len(k) >= 3:
		return taskKeys
	case k[0] == "schedule" && len(k) >= 2:
		return scheduleKeys
	case k[0] == "http" && len(k) >= 2:
		return httpKeys
	case k[0] == "pools" && len(k) >= 3:
		return poolKeys
	case len(k) == 1:
		return fileKeys
	}
	return nil
}

// keyPlace is where a key of the file belongs.
type keyPlace struct {
	at     where // the table, and the locator path of the key
	depth  int   // length of the path up to the key that is unknown, if any
	known  bool  // the key's spelling is one its table may hold
	inside bool  // the key lies inside the value of a known key
}

// keyPlace places key k of the file. Inside the free-form payload,
// for_each, env and headers any key goes; inside any other value a table is
// a type error reported for the key itself. idx is the position of the
// current [[schedule]] table.
func (l *loader) keyPlace(k toml.Key, idx int) keyPlace {
	switch {
	case k[0] == "scheduler" && len(k) >= 2:
		return keyPlace{
			at:     where{table: "scheduler", path: []string{"scheduler", k[1]}},
			depth:  2,
			known:  schedulerKeys[k[1]],
			inside: len(k) > 2 && schedulerKeys[k[1]],
		}
	case k[0] == "tasks" && len(k) >= 3:
		return keyPlace{
			at:     where{table: "task", job: k[1], path: []string{"tasks", k[1], k[2]}},
			depth:  3,
			known:  taskKeys[k[2]],
			inside: len(k) > 3 && taskKeys[k[2]],
		}
	case k[0] == "schedule" && len(k) >= 2:
		job := l.names[idx]
		if job == "" {
			job = fmt.Sprintf("#%d", idx+1)
		}
		return keyPlace{
			at:     where{table: "schedule", job: job, path: []string{"schedule", elem(idx), k[1]}},
			depth:  3,
			known:  scheduleKeys[k[1]],
			inside: len(k) > 2 && scheduleKeys[k[1]],
		}
	case k[0] == "http" && len(k) >= 2:
		return keyPlace{
			at:     where{table: "http", path: []string{"http", k[1]}},
			depth:  2,
			known:  httpKeys[k[1]],
			inside: len(k) > 2 && httpKeys[k[1]],
		}
	case k[0] == "pools" && len(k) >= 3:
		return keyPlace{
			at:     where{table: "pool", job: k[1], path: []string{"pools", k[1], k[2]}},
			depth:  3,
			known:  poolKeys[k[2]],
			inside: len(k) > 3 && poolKeys[k[2]],
		}
	case k[0] == "tasks", k[0] == "pools":
		return keyPlace{at: where{path: k}, depth: 1, known: true}
	}
	return keyPlace{at: where{path: k}, depth: 1, known: len(k) == 1 && fileKeys[k[0]]}
}

// underFailed reports whether path is inside a value that did not decode:
// its keys are not unknown, the value is wrong as a whole.
func (l *loader) underFailed(path []string) bool {
	for n := len(path); n > 0; n-- {
		if l.failed[pathKey(path[:n])] {
			return true
		}
	}
	return false
}

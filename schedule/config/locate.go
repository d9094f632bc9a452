package config

import (
	"strconv"
	"strings"
)

// locator maps a TOML document's keys to their lines. BurntSushi/toml
// keeps one position per dotted key, shared by every [[schedule]], and
// exposes none. This scanner follows headers, numbering arrays of tables,
// and "key =" lines. On input the decoder rejects it finds fewer lines,
// never panics.
type locator struct {
	lines  map[string]int
	arrays map[string]int // array of tables -> elements seen

	// The [[schedule]] tables in runs of up to scheduleRun, for the
	// loader to decode one run at a time (see loadInRuns); orphan when a
	// schedule's sub-table does not follow a [[schedule]].
	runs   []scheduleRun
	orphan bool
}

// scheduleRunLen is the most [[schedule]] tables a scheduleRun holds.
const scheduleRunLen = 256

// scheduleRun is a run of [[schedule]] tables and their sub-tables: bytes
// [start, end) of the document, from its line, the first being the
// first-th.
type scheduleRun struct {
	start, end, line, first, n int
}

// elem names the i-th element of an array of tables in a path.
func elem(i int) string { return "#" + strconv.Itoa(i) }

func pathKey(path []string) string { return strings.Join(path, "\x00") }

// line returns the line of path or its nearest located ancestor, or 0.
func (l *locator) line(path ...string) int {
	for n := len(path); n > 0; n-- {
		if ln, ok := l.lines[pathKey(path[:n])]; ok {
			return ln
		}
	}
	return 0
}

func locate(src string) *locator {
	l := &locator{lines: map[string]int{}, arrays: map[string]int{}}
	l.scan(src, 1, true)
	return l
}

// cutRuns finds the runs of [[schedule]] tables of src, locating nothing.
func cutRuns(src string) *locator {
	l := &locator{arrays: map[string]int{}}
	l.scan(src, 1, false)
	return l
}

// locateRun locates the keys of run r of src, whose lines and elements
// it numbers as in the whole document.
func locateRun(src string, r scheduleRun) *locator {
	l := &locator{lines: map[string]int{}, arrays: map[string]int{"schedule": r.first}}
	l.scan(src[r.start:r.end], r.line, true)
	return l
}

// scan reads src, whose first line is the document's line first; with
// record it notes the lines of keys and tables.
func (l *locator) scan(src string, first int, record bool) {
	var (
		table []string // resolved path of the current table
		ml    string   // closing delimiter of an open multi-line string
		depth int      // bracket nesting of a value spanning lines
	)
	var run *scheduleRun // the open run
	off := 0
	for line := first; off <= len(src); line++ {
		text, _, _ := strings.Cut(src[off:], "\n")
		start := off
		off += len(text) + 1
		i := 0
		if ml != "" {
			end := closeMultiline(text, 0, ml)
			if end < 0 {
				continue
			}
			i, ml = end, ""
		} else if depth == 0 {
			i = skipSpace(text, 0)
			switch {
			case i >= len(text) || text[i] == '#':
				continue
			case text[i] == '[':
				array := strings.HasPrefix(text[i:], "[[")
				j := i + 1
				if array {
					j++
				}
				keys, _ := parseKeyPath(text, j)
				if len(keys) == 0 {
					continue
				}
				table = l.resolve(keys, array)
				if record {
					l.record(table, line)
				}
				run = l.noteRun(run, keys, array, start, line)
				continue
			default:
				keys, j := parseKeyPath(text, i)
				j = skipSpace(text, j)
				if len(keys) == 0 || j >= len(text) || text[j] != '=' {
					continue
				}
				if record {
					l.record(append(append([]string(nil), table...), keys...), line)
				}
				i = j + 1
			}
		}
		ml, depth = scanValue(text, i, depth)
	}
	l.endRun(run, len(src))
}

// noteRun follows the header of keys at byte start and line, open being
// the open run, and returns the run open after it.
func (l *locator) noteRun(open *scheduleRun, keys []string, array bool, start, line int) *scheduleRun {
	switch {
	case keys[0] != "schedule":
		l.endRun(open, start)
		return nil
	case len(keys) > 1:
		if open == nil {
			l.orphan = true
		}
		return open
	case !array:
		l.orphan = true
		l.endRun(open, start)
		return nil
	}
	if open != nil && open.n == scheduleRunLen {
		l.endRun(open, start)
		open = nil
	}
	if open == nil {
		open = &scheduleRun{start: start, line: line, first: l.arrays["schedule"] - 1}
	}
	open.n++
	return open
}

func (l *locator) endRun(open *scheduleRun, end int) {
	if open != nil {
		open.end = end
		l.runs = append(l.runs, *open)
	}
}

// resolve turns a header's keys into a path, numbering array elements; an
// [[array]] header counts a new one.
func (l *locator) resolve(keys []string, array bool) []string {
	var res []string
	for i, k := range keys {
		res = append(res, k)
		rk := pathKey(res)
		if array && i == len(keys)-1 {
			n := l.arrays[rk]
			l.arrays[rk] = n + 1
			res = append(res, elem(n))
		} else if n, ok := l.arrays[rk]; ok {
			res = append(res, elem(n-1))
		}
	}
	return res
}

func (l *locator) record(path []string, line int) {
	k := pathKey(path)
	if _, ok := l.lines[k]; !ok {
		l.lines[k] = line
	}
}

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r') {
		i++
	}
	return i
}

// parseKeyPath parses a dotted key at i into parts and the index after.
func parseKeyPath(s string, i int) ([]string, int) {
	var keys []string
	for {
		i = skipSpace(s, i)
		if i >= len(s) {
			return keys, i
		}
		switch s[i] {
		case '"':
			j := i + 1
			for j < len(s) && s[j] != '"' {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(s) {
				return keys, len(s)
			}
			k, err := strconv.Unquote(s[i : j+1])
			if err != nil {
				k = s[i+1 : j]
			}
			keys, i = append(keys, k), j+1
		case '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return keys, len(s)
			}
			keys, i = append(keys, s[i+1:i+1+j]), i+j+2
		default:
			j := i
			for j < len(s) && isBareKeyChar(s[j]) {
				j++
			}
			if j == i {
				return keys, i
			}
			keys, i = append(keys, s[i:j]), j
		}
		i = skipSpace(s, i)
		if i >= len(s) || s[i] != '.' {
			return keys, i
		}
		i++
	}
}

func isBareKeyChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// scanValue follows a value to the line's end and returns the multi-line
// string left open, if any, and the bracket depth.
func scanValue(s string, i, depth int) (string, int) {
	for i < len(s) {
		switch c := s[i]; c {
		case '#':
			return "", depth
		case '[', '{':
			depth++
		case ']', '}':
			if depth > 0 {
				depth--
			}
		case '"', '\'':
			delim := string(c)
			if strings.HasPrefix(s[i:], strings.Repeat(delim, 3)) {
				delim = strings.Repeat(delim, 3)
			}
			end := closeString(s, i+len(delim), delim)
			if end < 0 {
				if len(delim) == 3 {
					return delim, depth
				}
				return "", depth
			}
			i = end
			continue
		}
		i++
	}
	return "", depth
}

// closeString returns the index after the string starting at i, or -1 if
// it does not close on this line.
func closeString(s string, i int, delim string) int {
	if len(delim) == 3 {
		return closeMultiline(s, i, delim)
	}
	for i < len(s) {
		switch {
		case delim == `"` && s[i] == '\\':
			i += 2
			continue
		case s[i] == delim[0]:
			return i + 1
		}
		i++
	}
	return -1
}

// closeMultiline is closeString for a multi-line string.
func closeMultiline(s string, i int, delim string) int {
	for i < len(s) {
		if delim == `"""` && s[i] == '\\' {
			i += 2
			continue
		}
		if strings.HasPrefix(s[i:], delim) {
			end := i + 3
			// Up to two quotes may end the content.
			for k := 0; k < 2 && end < len(s) && s[end] == delim[0]; k++ {
				end++
			}
			return end
		}
		i++
	}
	return -1
}

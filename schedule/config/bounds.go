package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// Bounds of what the loader reads, checked before decoding: the TOML
// decoder's memory grows with the square of nesting, so a small, deeply
// nested file could exhaust the daemon at a reload.
const (
	// MaxSize bounds a configuration file, in bytes.
	MaxSize = 32 << 20
	// MaxDepth bounds nesting: each part of a table header or dotted key,
	// and each array or inline table, is a level. A config's own tables
	// take three; the rest is left to payloads and for_each items.
	MaxDepth = 32
)

// ErrTooLarge is wrapped by the error of a file over MaxSize.
var ErrTooLarge = errors.New("config too large")

// ErrTooDeep is wrapped by the error of a file deeper than MaxDepth.
var ErrTooDeep = errors.New("config nested too deep")

// ReadFile reads the file at path as Load does: at most MaxSize+1 bytes,
// so that Parse refuses a larger file without holding it all.
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load config: %w", err)
	}
	defer f.Close()
	// Sized from the file, so that a large one is not read by doubling.
	size := 0
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		size = int(min(fi.Size(), MaxSize))
	}
	var b bytes.Buffer
	b.Grow(size + bytes.MinRead) // ReadFrom grows the buffer with less free
	if _, err := b.ReadFrom(io.LimitReader(f, MaxSize+1)); err != nil {
		return nil, fmt.Errorf("load config: %w", err)
	}
	return b.Bytes(), nil
}

// checkBounds reports data over MaxSize or deeper than MaxDepth.
func checkBounds(file string, data []byte) *Error {
	if len(data) > MaxSize {
		return &Error{File: file, Err: fmt.Errorf("%w: more than %d bytes (32 MiB), the most a config may hold", ErrTooLarge, MaxSize)}
	}
	if line, depth, key := nestingOver(data, MaxDepth); line > 0 {
		return &Error{File: file, Line: line, Err: fmt.Errorf("%w: depth %d in %s, more than the %d a config may have (each part of a table header or dotted key, and each array or inline table, is a level)",
			ErrTooDeep, depth, key, MaxDepth)}
	}
	return nil
}

// nestingOver returns the line, depth and key or header, as written, of
// the first place in a TOML document deeper than max; 0 if none. It skips
// strings and comments. It does not validate: on malformed input it may
// count differently from the decoder, which then reports it, but it always
// ends in one pass.
func nestingOver(data []byte, max int) (line, depth int, key string) {
	s := nestScanner{data: data, line: 1}
	line, depth = s.run(max)
	if line == 0 {
		return 0, 0, ""
	}
	return line, depth, s.key
}

type nestScanner struct {
	data []byte
	i    int
	line int
	key  string // the last table header or top-level key, as written
	max  int    // the depth not to exceed

	stack []open // the value's open brackets and braces
	table int    // parts of the current table header
	base  int    // depth of the current top-level key's value
	extra int    // sum of stack[].extra
}

// open is an open bracket or brace of a value.
type open struct {
	table bool // an inline table: keys follow '{' and ','
	extra int  // dotted parts beyond the first of its current key
}

func (s *nestScanner) depth() int { return s.base + len(s.stack) + s.extra }

func (s *nestScanner) run(max int) (int, int) {
	s.max = max
	start := true // at the start of a line outside any value
	for s.i < len(s.data) {
		c := s.data[s.i]
		switch {
		case c == '\n':
			s.line++
			s.i++
			if len(s.stack) == 0 {
				start = true
			}
			continue
		case c == ' ' || c == '\t' || c == '\r':
			s.i++
			continue
		case c == '#':
			s.skipComment()
			continue
		}
		var over int
		if start {
			start = false
			over = s.lineStart(c)
		} else {
			over = s.value(c)
		}
		if over > 0 {
			return s.line, over
		}
	}
	return 0, 0
}

// lineStart reads a table header to its end, or a key up to its "=". It
// returns the depth reached when over s.max, else 0.
func (s *nestScanner) lineStart(c byte) int {
	if c == '[' {
		s.i++
		if s.i < len(s.data) && s.data[s.i] == '[' {
			s.i++
		}
		from := s.i
		s.table = s.keyPath()
		s.key = "[" + strings.TrimSpace(string(s.data[from:s.i])) + "]"
		if s.table > s.max {
			return s.table
		}
		s.skipLine()
		return 0
	}
	from := s.i
	s.base = s.table + s.keyPath()
	s.key = strings.TrimSpace(string(s.data[from:s.i]))
	if s.base > s.max {
		return s.base
	}
	return 0
}

// value reads c, a byte of a value; an inline table's dotted keys add
// levels. It returns the depth reached when over s.max, else 0.
func (s *nestScanner) value(c byte) int {
	switch c {
	case '"', '\'':
		s.skipString()
		return 0
	case '[', '{':
		s.stack = append(s.stack, open{table: c == '{'})
		s.i++
		if c == '{' {
			s.inlineKey(&s.stack[len(s.stack)-1], &s.extra)
		}
		return s.over()
	case ']', '}':
		if n := len(s.stack); n > 0 {
			s.extra -= s.stack[n-1].extra
			s.stack = s.stack[:n-1]
		}
	case ',':
		if n := len(s.stack); n > 0 && s.stack[n-1].table {
			s.i++
			s.inlineKey(&s.stack[n-1], &s.extra)
			return s.over()
		}
	}
	s.i++
	return 0
}

func (s *nestScanner) over() int {
	if d := s.depth(); d > s.max {
		return d
	}
	return 0
}

// inlineKey reads the key after '{' or ',' of an inline table o: parts
// beyond the first are levels, kept in o.extra and summed in *extra.
func (s *nestScanner) inlineKey(o *open, extra *int) {
	s.skipBlank()
	parts := s.keyPath()
	*extra -= o.extra
	o.extra = max(parts-1, 0)
	*extra += o.extra
}

func (s *nestScanner) skipBlank() {
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ' ', '\t', '\r':
			s.i++
		case '\n':
			s.line++
			s.i++
		case '#':
			s.skipComment()
		default:
			return
		}
	}
}

// keyPath reads a dotted key and returns its parts; 0 if none.
func (s *nestScanner) keyPath() int {
	parts := 0
	for {
		for s.i < len(s.data) && (s.data[s.i] == ' ' || s.data[s.i] == '\t') {
			s.i++
		}
		if s.i >= len(s.data) {
			return parts
		}
		switch c := s.data[s.i]; {
		case c == '"' || c == '\'':
			s.skipString()
		case isBareKeyChar(c):
			for s.i < len(s.data) && isBareKeyChar(s.data[s.i]) {
				s.i++
			}
		default:
			return parts
		}
		parts++
		for s.i < len(s.data) && (s.data[s.i] == ' ' || s.data[s.i] == '\t') {
			s.i++
		}
		if s.i >= len(s.data) || s.data[s.i] != '.' {
			return parts
		}
		s.i++
	}
}

func (s *nestScanner) skipComment() {
	for s.i < len(s.data) && s.data[s.i] != '\n' {
		s.i++
	}
}

func (s *nestScanner) skipLine() {
	for s.i < len(s.data) && s.data[s.i] != '\n' {
		if c := s.data[s.i]; c == '"' || c == '\'' {
			s.skipString()
			continue
		}
		s.i++
	}
}

// skipString skips the string at s.i. One left open ends with its line.
func (s *nestScanner) skipString() {
	q := s.data[s.i]
	if s.i+2 < len(s.data) && s.data[s.i+1] == q && s.data[s.i+2] == q {
		s.i += 3
		for s.i < len(s.data) {
			c := s.data[s.i]
			switch {
			case c == '\\' && q == '"':
				if s.i+1 < len(s.data) && s.data[s.i+1] == '\n' {
					s.line++
				}
				s.i += 2
				continue
			case c == '\n':
				s.line++
			case c == q && s.i+2 < len(s.data) && s.data[s.i+1] == q && s.data[s.i+2] == q:
				s.i += 3
				// Up to two quotes may end the content.
				for k := 0; k < 2 && s.i < len(s.data) && s.data[s.i] == q; k++ {
					s.i++
				}
				return
			}
			s.i++
		}
		return
	}
	s.i++
	for s.i < len(s.data) {
		switch c := s.data[s.i]; {
		case c == '\n':
			return
		case c == '\\' && q == '"':
			if s.i+1 < len(s.data) && s.data[s.i+1] == '\n' {
				return
			}
			s.i += 2
			continue
		case c == q:
			s.i++
			return
		}
		s.i++
	}
}

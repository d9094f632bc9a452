package config

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// Bounds of what the loader reads. The TOML decoder's memory grows with the
// square of a value's nesting, so a small file of deeply nested inline
// tables would take the daemon's memory at a reload; the file is measured
// before it is decoded.
const (
	// MaxSize bounds a configuration file, in bytes. A file of a
	// thousand schedules with their payloads and fan-outs is well under a
	// MiB; the bound leaves room for large payloads and for_each lists
	// while keeping what one decode holds in memory small.
	MaxSize = 4 << 20
	// MaxDepth bounds the nesting of a configuration: each part of a
	// table header or of a dotted key, and each array or inline table a
	// value opens, is one level. A config's own tables take three
	// ([[http.user]] with a key, a [tasks.NAME] key); the rest is left to
	// payloads and for_each items.
	MaxDepth = 32
)

// ErrTooLarge is wrapped by the error of a file over MaxSize.
var ErrTooLarge = errors.New("config too large")

// ErrTooDeep is wrapped by the error of a file nested deeper than
// MaxDepth.
var ErrTooDeep = errors.New("config nested too deep")

// ReadFile reads the configuration file at path as Load does: at most
// MaxSize+1 bytes, so that Parse refuses a larger file without the
// whole of it in memory.
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load config: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("load config: %w", err)
	}
	return data, nil
}

// checkBounds reports a configuration over MaxSize or nested deeper
// than MaxDepth, before anything decodes it.
func checkBounds(file string, data []byte) *Error {
	if len(data) > MaxSize {
		return &Error{File: file, Err: fmt.Errorf("%w: more than %d bytes (4 MiB), the most a config may hold", ErrTooLarge, MaxSize)}
	}
	if line, depth, key := nestingOver(data, MaxDepth); line > 0 {
		return &Error{File: file, Line: line, Err: fmt.Errorf("%w: depth %d in %s, more than the %d a config may have (each part of a table header or dotted key, and each array or inline table, is a level)",
			ErrTooDeep, depth, key, MaxDepth)}
	}
	return nil
}

// nestingOver scans a TOML document for the first place nested deeper than
// max and returns its 1-based line, its depth and the key or table header
// it is in, as written; 0 when there is none. It
// follows table headers, keys and the brackets and braces of values, and
// skips strings (basic, literal, multi-line) and comments, so that brackets
// in them do not count. It does not validate: on malformed input it may
// count differently from the decoder, whose own error then reports it, but
// it always ends in one pass over data.
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
}

// open is a bracket or brace of a value not closed yet.
type open struct {
	table bool // an inline table: keys follow '{' and ','
	extra int  // dotted parts beyond the first of its current key
}

func (s *nestScanner) run(max int) (int, int) {
	var (
		stack []open
		table int    // parts of the current table header
		base  int    // depth of the current top-level key's value
		extra int    // sum of stack[].extra
		start = true // at the start of a line outside any value
	)
	depth := func() int { return base + len(stack) + extra }
	for s.i < len(s.data) {
		c := s.data[s.i]
		switch {
		case c == '\n':
			s.line++
			s.i++
			if len(stack) == 0 {
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
		if start {
			start = false
			if c == '[' {
				s.i++
				if s.i < len(s.data) && s.data[s.i] == '[' {
					s.i++
				}
				from := s.i
				table = s.keyPath()
				s.key = "[" + strings.TrimSpace(string(s.data[from:s.i])) + "]"
				if table > max {
					return s.line, table
				}
				s.skipLine()
				continue
			}
			from := s.i
			base = table + s.keyPath()
			s.key = strings.TrimSpace(string(s.data[from:s.i]))
			if base > max {
				return s.line, base
			}
			continue
		}
		switch c {
		case '"', '\'':
			s.skipString()
			continue
		case '[', '{':
			stack = append(stack, open{table: c == '{'})
			s.i++
			if c == '{' {
				s.inlineKey(&stack[len(stack)-1], &extra)
			}
			if d := depth(); d > max {
				return s.line, d
			}
			continue
		case ']', '}':
			if n := len(stack); n > 0 {
				extra -= stack[n-1].extra
				stack = stack[:n-1]
			}
		case ',':
			if n := len(stack); n > 0 && stack[n-1].table {
				s.i++
				s.inlineKey(&stack[n-1], &extra)
				if d := depth(); d > max {
					return s.line, d
				}
				continue
			}
		}
		s.i++
	}
	return 0, 0
}

// inlineKey reads the key after '{' or ',' of an inline table o: the
// parts of a dotted key beyond its first are levels, kept in o.extra and
// summed in *extra.
func (s *nestScanner) inlineKey(o *open, extra *int) {
	s.skipBlank()
	parts := s.keyPath()
	*extra -= o.extra
	o.extra = max(parts-1, 0)
	*extra += o.extra
}

// skipBlank skips spaces, newlines and comments.
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

// keyPath reads a dotted key and returns its number of parts; 0 when no
// key starts here.
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

// skipComment skips to the end of the line, leaving the newline.
func (s *nestScanner) skipComment() {
	for s.i < len(s.data) && s.data[s.i] != '\n' {
		s.i++
	}
}

// skipLine skips the rest of a header line: its closing brackets and a
// comment. A string there is skipped whole.
func (s *nestScanner) skipLine() {
	for s.i < len(s.data) && s.data[s.i] != '\n' {
		if c := s.data[s.i]; c == '"' || c == '\'' {
			s.skipString()
			continue
		}
		s.i++
	}
}

// skipString skips the string that starts at s.i: basic or literal, on one
// line or multi-line. One left open on its line ends there.
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
				// Up to two quotes may end the content right before the
				// delimiter.
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

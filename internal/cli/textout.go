package cli

import (
	"fmt"
	"io"
	"unicode/utf8"
)

// escapeWriter escapes an operator command's text output: each control
// character but newline and tab as in a Go string literal (\r, \x1b,
// \u009b), and invalid UTF-8 as \xff. A job's stored output then cannot
// clear the screen, move the cursor or overwrite a line. A backslash is not
// escaped. Flush writes what an unfinished UTF-8 sequence left.
type escapeWriter struct {
	w       io.Writer
	partial []byte // the start of a UTF-8 sequence the next Write may end
	buf     []byte
}

// newEscapeWriter returns an escapeWriter to w.
func newEscapeWriter(w io.Writer) *escapeWriter { return &escapeWriter{w: w} }

// Write writes p escaped and reports len(p) on success.
func (e *escapeWriter) Write(p []byte) (int, error) {
	data := p
	if len(e.partial) > 0 {
		data = append(e.partial, p...)
		e.partial = nil
	}
	e.buf = e.buf[:0]
	for i := 0; i < len(data); {
		c := data[i]
		if c < utf8.RuneSelf {
			if c == 0x7f || c < 0x20 && c != '\n' && c != '\t' {
				e.buf = appendEscaped(e.buf, rune(c))
			} else {
				e.buf = append(e.buf, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(data[i:])
		switch {
		case r == utf8.RuneError && n <= 1 && !utf8.FullRune(data[i:]):
			// Maybe a character split between two writes.
			e.partial = append([]byte(nil), data[i:]...)
			i = len(data)
		case r == utf8.RuneError && n <= 1:
			e.buf = fmt.Appendf(e.buf, `\x%02x`, c)
			i++
		case r < 0xa0: // C1 controls, U+0080 to U+009F
			e.buf = fmt.Appendf(e.buf, `\u%04x`, r)
			i += n
		default:
			e.buf = append(e.buf, data[i:i+n]...)
			i += n
		}
	}
	if _, err := e.w.Write(e.buf); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes the bytes of an unfinished UTF-8 sequence, escaped.
func (e *escapeWriter) Flush() error {
	if len(e.partial) == 0 {
		return nil
	}
	var b []byte
	for _, c := range e.partial {
		b = fmt.Appendf(b, `\x%02x`, c)
	}
	e.partial = nil
	_, err := e.w.Write(b)
	return err
}

// appendEscaped appends ASCII control c as a Go string literal writes it.
func appendEscaped(b []byte, c rune) []byte {
	switch c {
	case '\a':
		return append(b, `\a`...)
	case '\b':
		return append(b, `\b`...)
	case '\f':
		return append(b, `\f`...)
	case '\r':
		return append(b, `\r`...)
	case '\v':
		return append(b, `\v`...)
	}
	return fmt.Appendf(b, `\x%02x`, c)
}

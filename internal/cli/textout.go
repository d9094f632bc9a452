package cli

import (
	"fmt"
	"io"
	"unicode/utf8"
)

// escapeWriter carries an operator command's text output (not -json) to
// its stdout with each control character but newline and tab escaped as in
// a Go string literal: \r, \a, \x1b, \x7f, and \u009b for a C1 control; a
// byte that is not part of valid UTF-8 shows as \xff. What a job printed,
// stored and shown by -job, -jobs, -dead and the others, can then neither
// clear the operator's screen, retitle the window, move the cursor nor
// overwrite a line. A backslash is not escaped. Flush writes what an
// unfinished UTF-8 sequence left at the end.
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

// appendEscaped appends c, an ASCII control character, as a Go string
// literal writes it.
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

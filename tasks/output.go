package tasks

import "unicode/utf8"

// tailBuffer is an io.Writer that keeps the last max bytes written. It is
// not safe for concurrent use.
type tailBuffer struct {
	max int
	buf []byte
}

func newTailBuffer(max int) *tailBuffer { return &tailBuffer{max: max} }

// Write keeps the tail of p. It never fails.
func (t *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) >= t.max {
		t.buf = append(t.buf[:0], p[len(p)-t.max:]...)
		return n, nil
	}
	// Grow to twice max before moving bytes: amortised O(1) per byte.
	if len(t.buf)+len(p) > 2*t.max {
		keep := t.max - len(p)
		t.buf = t.buf[:copy(t.buf, t.buf[len(t.buf)-keep:])]
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

// Bytes returns the last max bytes written. The slice aliases the buffer.
func (t *tailBuffer) Bytes() []byte {
	if len(t.buf) > t.max {
		return t.buf[len(t.buf)-t.max:]
	}
	return t.buf
}

// lastBytes returns about the last n bytes of b, starting at a UTF-8
// character boundary when b is text.
func lastBytes(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	b = b[len(b)-n:]
	for i := 0; i < utf8.UTFMax && i < len(b); i++ {
		if utf8.RuneStart(b[i]) {
			return b[i:]
		}
	}
	return b
}

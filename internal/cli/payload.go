package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// payloadArg returns the JSON that -payload gives: the argument itself;
// with "@PATH", the contents of the file PATH; with "-", standard input.
// A file or stdin carries a payload past the kernel's limit on one
// argument. At most queue.MaxPayloadSize+1 bytes are read, enough for
// CheckPayload to refuse a larger one.
func (a *app) payloadArg() ([]byte, error) {
	v := a.o.payload
	var r io.Reader
	switch {
	case v == "-":
		r = a.opts.Stdin
		if r == nil {
			r = os.Stdin
		}
	case strings.HasPrefix(v, "@"):
		f, err := os.Open(v[1:])
		if err != nil {
			return nil, usagef("-payload %s: %v", v, err)
		}
		defer f.Close()
		r = f
	default:
		return []byte(v), nil
	}
	b, err := io.ReadAll(io.LimitReader(r, queue.MaxPayloadSize+1))
	if err != nil {
		return nil, usagef("-payload %s: %v", v, err)
	}
	return bytes.TrimSpace(b), nil
}

// payloadView is a stored payload as a listing shows it, masked by r. A
// payload that no enqueue would take (not JSON, too deep, too large: a row
// written by hand or by an older version) is shown as a marker, with why in
// the second result, so that one row cannot break a listing; its text is
// not shown, as it may hold secrets that redact would have masked.
func payloadView(r *config.Redactor, p json.RawMessage) (json.RawMessage, string) {
	if err := queue.CheckPayload(p); err != nil {
		marker, _ := json.Marshal(fmt.Sprintf("[unreadable payload, %d bytes]", len(p)))
		return marker, err.Error()
	}
	return r.Payload(p), ""
}

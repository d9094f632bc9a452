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

// payloadArg returns -payload's JSON: the argument, the file "@PATH", or
// stdin for "-"; the last two pass the kernel's argument size limit. It
// reads one byte past queue.MaxPayloadSize, so CheckPayload refuses more.
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

// payloadView is a stored payload masked by r. A payload no enqueue would
// take is a marker, with why in the second result, so that one row cannot
// break a listing; its text may hold secrets redact cannot find.
func payloadView(r *config.Redactor, p json.RawMessage) (json.RawMessage, string) {
	if err := queue.CheckPayload(p); err != nil {
		marker, _ := json.Marshal(fmt.Sprintf("[unreadable payload, %d bytes]", len(p)))
		return marker, err.Error()
	}
	return r.Payload(p), ""
}

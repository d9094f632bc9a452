package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/scheduler-run/scheduler/internal/redact"
)

// Redacted replaces a masked field or secret.
const Redacted = redact.Mask

// A Redactor masks a task's secrets wherever shown to a person: the
// fields its redact names and the matches of its redact_output. Jobs keep
// their real payload, which the command needs, masked when shown
// (Payload). An attempt's output and error are masked before they are
// stored (Attempt), so secrets never reach history, errors, alarms or
// logs.
//
// The nil *Redactor masks nothing. A Redactor is immutable and safe for
// concurrent use.
type Redactor struct {
	fields   [][]string // each redact path, split at its dots
	patterns []*regexp.Regexp
}

// newRedactor returns a Redactor, or nil when there is nothing to mask.
func newRedactor(paths []string, patterns []*regexp.Regexp) *Redactor {
	if len(paths) == 0 && len(patterns) == 0 {
		return nil
	}
	r := &Redactor{patterns: patterns}
	for _, p := range paths {
		r.fields = append(r.fields, strings.Split(p, "."))
	}
	return r
}

// Payload returns payload with each redacted field's value, whatever its
// type, replaced by "[redacted]". An unmasked payload is returned as is;
// a masked one is re-encoded with sorted keys. A payload that is not JSON
// becomes "[redacted]" entirely.
func (r *Redactor) Payload(payload json.RawMessage) json.RawMessage {
	if r == nil || len(r.fields) == 0 || len(payload) == 0 {
		return payload
	}
	v, err := decodePayload(payload)
	if err != nil {
		return json.RawMessage(`"` + Redacted + `"`)
	}
	masked := false
	for _, f := range r.fields {
		if mask(v, f) {
			masked = true
		}
	}
	if !masked {
		return payload
	}
	// Shown as text, not HTML: "<" stays "<".
	var out bytes.Buffer
	e := json.NewEncoder(&out)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return json.RawMessage(`"` + Redacted + `"`)
	}
	return bytes.TrimSuffix(out.Bytes(), []byte("\n"))
}

// Text returns s with redact_output's matches replaced by "[redacted]".
func (r *Redactor) Text(s string) string {
	if r == nil {
		return s
	}
	for _, re := range r.patterns {
		s = re.ReplaceAllLiteralString(s, Redacted)
	}
	return s
}

// Attempt masks s, an attempt's output or error, for storing and logging:
// each string or number of at least redact.MinLen bytes under a redacted
// field of payload, wherever it appears and in each form (see
// redact.Forms), longest first; then Text's patterns.
func (r *Redactor) Attempt(payload json.RawMessage, s string) string {
	if r == nil || s == "" {
		return s
	}
	if len(r.fields) > 0 && len(payload) > 0 {
		var secrets []redact.Secret
		for _, f := range r.fields {
			secrets = collect(bytes.TrimSpace(payload), f, secrets)
		}
		s = redact.NewSet(secrets...).Apply(s)
	}
	return r.Text(s)
}

// Redactor returns the Redactor of jobType's task; nil, masking nothing,
// when there is none.
func (c *Config) Redactor(jobType string) *Redactor {
	if c == nil {
		return nil
	}
	if t, ok := c.Tasks[jobType]; ok {
		return t.redactor
	}
	return nil
}

func decodePayload(payload json.RawMessage) (any, error) {
	d := json.NewDecoder(bytes.NewReader(payload))
	d.UseNumber() // keep numbers as written
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// mask replaces what path names in v and reports whether it named
// anything. A path crosses arrays: "cards.number" masks each card's.
func mask(v any, path []string) bool {
	switch x := v.(type) {
	case map[string]any:
		child, ok := x[path[0]]
		if !ok {
			return false
		}
		if len(path) == 1 {
			x[path[0]] = Redacted
			return true
		}
		return mask(child, path[1:])
	case []any:
		masked := false
		for _, e := range x {
			if mask(e, path) {
				masked = true
			}
		}
		return masked
	}
	return false
}

// collect appends each string and number under path in raw, a JSON
// value. It reads the text as written, not a decoding, so strings keep
// the bytes the command receives and repeated keys all count.
func collect(raw []byte, path []string, out []redact.Secret) []redact.Secret {
	if len(raw) == 0 {
		return out
	}
	switch raw[0] {
	case '{':
		d := json.NewDecoder(bytes.NewReader(raw))
		if _, err := d.Token(); err != nil {
			return out
		}
		for d.More() {
			tok, err := d.Token()
			if err != nil {
				return out
			}
			key, _ := tok.(string)
			var v json.RawMessage
			if err := d.Decode(&v); err != nil {
				return out
			}
			switch {
			case len(path) == 0:
				out = collect(v, nil, out)
			case key == path[0]:
				out = collect(v, path[1:], out)
			}
		}
	case '[':
		d := json.NewDecoder(bytes.NewReader(raw))
		if _, err := d.Token(); err != nil {
			return out
		}
		for d.More() {
			var v json.RawMessage
			if err := d.Decode(&v); err != nil {
				return out
			}
			out = collect(v, path, out)
		}
	case '"':
		if len(path) == 0 {
			if v, ok := redact.UnquoteJSON(raw); ok {
				out = append(out, redact.Secret{Value: v, Written: []string{string(raw[1 : len(raw)-1])}})
			}
		}
	case 't', 'f', 'n':
	default: // a number, as written
		if len(path) == 0 {
			out = append(out, redact.Secret{Value: string(raw)})
		}
	}
	return out
}

func checkRedactPath(p string) error {
	if p == "" {
		return fmt.Errorf("empty field name")
	}
	for seg := range strings.SplitSeq(p, ".") {
		if seg == "" {
			return fmt.Errorf("field %q: an empty name between dots", p)
		}
	}
	return nil
}

func compileRedactPattern(p string) (*regexp.Regexp, error) {
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, fmt.Errorf("pattern %q: %w", p, err)
	}
	if re.MatchString("") {
		return nil, fmt.Errorf("pattern %q matches the empty string: it would mark every position of the output", p)
	}
	return re, nil
}

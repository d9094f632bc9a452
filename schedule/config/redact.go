package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/scheduler-run/scheduler/internal/redact"
)

// Redacted is what a masked payload field, or a secret found in an
// attempt's output or error, is shown and stored as.
const Redacted = redact.Mask

// A Redactor masks the secrets of one task's jobs wherever they are shown
// to a person: the payload fields its redact key names, and the matches of
// its redact_output patterns. Jobs keep their real payload in the database,
// since the command must receive it; a payload is masked as it is shown
// (Payload). An attempt's output and error are masked before they are
// stored (Attempt), so the secrets never reach the attempt history, the
// job's last error, an alarm or a log line.
//
// The nil *Redactor masks nothing; a Redactor is not modified after Load
// returns it and may be shared between goroutines.
type Redactor struct {
	fields   [][]string // each redact path, split at its dots
	patterns []*regexp.Regexp
}

// newRedactor returns the Redactor of the given paths and patterns, nil
// when there are none.
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

// Payload returns payload with the value of each redacted field replaced by
// "[redacted]", whatever its type; a path that the payload lacks masks
// nothing. It returns payload itself when nothing was masked, so that the
// text shown keeps its order and spacing; a masked payload is re-encoded
// with its keys sorted. A payload that is not JSON is shown as the string
// "[redacted]" entirely, as its fields cannot be told apart.
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
	// Shown as text, not embedded in HTML: "<" stays "<".
	var out bytes.Buffer
	e := json.NewEncoder(&out)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return json.RawMessage(`"` + Redacted + `"`)
	}
	return bytes.TrimSuffix(out.Bytes(), []byte("\n"))
}

// Text returns s with every match of the task's redact_output patterns
// replaced by "[redacted]".
func (r *Redactor) Text(s string) string {
	if r == nil {
		return s
	}
	for _, re := range r.patterns {
		s = re.ReplaceAllLiteralString(s, Redacted)
	}
	return s
}

// Attempt returns s, an attempt's output or error, masked for storing and
// logging: each value of a redacted field of payload (each string or
// number of at least redact.MinLen bytes under the field) wherever it
// appears, such as a token echoed by the command, in each form it may take
// there (as in the payload, JSON-escaped, Go-quoted by an error: see
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

// Redactor returns the Redactor of the task of jobType: nil, masking
// nothing, when the task redacts nothing or the configuration has no such
// task.
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
	d.UseNumber() // keep numbers as written, beyond float64's precision
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// mask replaces what path names in v and reports whether it named
// anything. A path crosses arrays: "cards.number" masks the number of each
// element of the array cards.
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

// collect appends to out each string and number under what path names in
// raw, a JSON value. It reads the payload's own text, not a decoding of
// it: a string keeps the bytes the command receives (an invalid UTF-8
// byte included) and its literal as written, and every member of an
// object whose key is repeated counts.
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

// checkRedactPath reports what is wrong with a redact path: it names a
// payload field, or a field nested in objects with dots ("card.number").
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

// compileRedactPattern compiles one redact_output pattern.
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

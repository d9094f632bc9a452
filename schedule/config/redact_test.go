package config

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf16"
)

func TestRedactorPayload(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		redact  string // the TOML array
		payload string
		want    string
	}{
		{"top-level fields", `["token", "card"]`, `{"token":"t-1","card":{"number":"4111"},"who":"ann"}`,
			`{"card":"[redacted]","token":"[redacted]","who":"ann"}`},
		{"nested field", `["card.number"]`, `{"card":{"number":4111111111111111,"holder":"Ann"}}`,
			`{"card":{"holder":"Ann","number":"[redacted]"}}`},
		{"across an array", `["cards.number"]`, `{"cards":[{"number":"1"},{"number":"2"},{"other":3}]}`,
			`{"cards":[{"number":"[redacted]"},{"number":"[redacted]"},{"other":3}]}`},
		{"absent field kept as written", `["token"]`, `{ "b": 1, "a": 12345678901234567890 }`,
			`{ "b": 1, "a": 12345678901234567890 }`},
		{"text kept as written", `["token"]`, `{"token":"x","q":"a<b & c"}`, `{"q":"a<b & c","token":"[redacted]"}`},
		{"null masked", `["token"]`, `{"token":null}`, `{"token":"[redacted]"}`},
		{"path into a string", `["token.x"]`, `{"token":"abc"}`, `{"token":"abc"}`},
		{"not json", `["token"]`, `{"token":`, `"[redacted]"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Parse("t.toml", []byte("[tasks.t]\nredact = "+tt.redact+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			if got := string(cfg.Redactor("t").Payload(json.RawMessage(tt.payload))); got != tt.want {
				t.Errorf("Payload(%s) = %s, want %s", tt.payload, got, tt.want)
			}
		})
	}
}

func TestRedactorAttempt(t *testing.T) {
	t.Parallel()
	cfg, err := Parse("t.toml", []byte(`
[tasks.t]
redact = ["token", "card.number", "pin"]
redact_output = ["(?i)bearer [a-z0-9._-]+", "password=\\S+"]
[tasks.plain]
`))
	if err != nil {
		t.Fatal(err)
	}
	payload := json.RawMessage(`{"token":"tok-1234","card":{"number":4111111111111111},"pin":"12","note":"tok"}`)
	tests := []struct{ in, want string }{
		{"got tok-1234 for 4111111111111111", "got [redacted] for [redacted]"},
		{"Authorization: Bearer abc.DEF-1 ok", "Authorization: [redacted] ok"},
		{"login password=hunter2 done", "login [redacted] done"},
		{"pin 12 is too short to mask", "pin 12 is too short to mask"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := cfg.Redactor("t").Attempt(payload, tt.in); got != tt.want {
			t.Errorf("Attempt(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if r := cfg.Redactor("plain"); r != nil || r.Attempt(payload, "tok-1234") != "tok-1234" || string(r.Payload(payload)) != string(payload) {
		t.Errorf("a task without redact masks: %v", r)
	}
	if r := cfg.Redactor("unknown"); r != nil {
		t.Errorf("Redactor of an unknown task = %v, want nil", r)
	}
	if f := cfg.Tasks["t"].TypeConfig().RedactFunc; f == nil {
		t.Errorf("TypeConfig of a redacting task has no RedactFunc")
	}
}

// TestRedactorAttemptEncodings: a redacted value is masked in each form a
// command's output or an error may give it: as the payload writes it, as
// the command decodes it, JSON-escaped (with and without the escaping of
// <, > and &, or of everything beyond ASCII) and Go-quoted as an error
// quotes the output (%q, %+q), whatever the value holds.
func TestRedactorAttemptEncodings(t *testing.T) {
	t.Parallel()
	cfg, err := Parse("t.toml", []byte("[tasks.t]\nredact = [\"token\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	r := cfg.Redactor("t")
	secrets := []struct {
		name  string
		value string // the bytes the command gets
		lit   string // the JSON literal in the payload, without its quotes
	}{
		{"quote and backslash", `pa"ss\word`, `pa\"ss\\word`},
		{"tab and newline", "pa\tss\nword", `pa\tss\nword`},
		{"html escaped", "a<b&c>d", `a\u003cb\u0026c\u003ed`},
		{"html as is", "a<b&c>d", `a<b&c>d`},
		{"all of them", "\"<&>\t\\x", `\"\u003c\u0026\u003e\t\\x`},
		{"non-ascii", "pässwörd", "pässwörd"},
		{"non-ascii escaped", "pässwörd", `p\u00e4ssw\u00f6rd`},
		{"beyond the bmp", "key😀key", `key\ud83d\ude00key`},
		{"invalid utf-8", "ab\xffcd\xfe", "ab\xffcd\xfe"},
		{"control", "tok\x1b[2J", `tok\u001b[2J`},
	}
	encodings := []struct {
		name string
		of   func(value, lit string) string
	}{
		{"raw", func(v, _ string) string { return v }},
		{"as written", func(_, l string) string { return l }},
		{"decoded by go", func(_, l string) string { return decodeJSONString(t, l) }},
		{"json", func(v, _ string) string { return encodeJSONString(t, v, false) }},
		{"json with html escaping", func(v, _ string) string { return encodeJSONString(t, v, true) }},
		{"json ascii", func(v, _ string) string { return asciiOnly(encodeJSONString(t, v, false)) }},
		{"%q", func(v, _ string) string { return fmt.Sprintf("%q", []byte(v)) }},
		{"%+q", func(v, _ string) string { return fmt.Sprintf("%+q", v) }},
		{"%q as written", func(_, l string) string { return fmt.Sprintf("%q", l) }},
		{"%q of json", func(v, _ string) string { return fmt.Sprintf("%q", encodeJSONString(t, v, false)) }},
		{"%q of json with html escaping", func(v, _ string) string { return fmt.Sprintf("%q", encodeJSONString(t, v, true)) }},
		{"%q of decoded by go", func(_, l string) string { return fmt.Sprintf("%q", decodeJSONString(t, l)) }},
	}
	for _, s := range secrets {
		payload := json.RawMessage(`{"token":"` + s.lit + `","note":"x"}`)
		for _, e := range encodings {
			in := "before " + e.of(s.value, s.lit) + " after"
			got := r.Attempt(payload, in)
			if got != "before [redacted] after" && got != `before "[redacted]" after` {
				t.Errorf("%s, %s: Attempt(%q) = %q, want the secret masked", s.name, e.name, in, got)
			}
		}
		// A command that echoes its payload and fails, as the command
		// task quotes its output in the error.
		in := fmt.Sprintf("command sh: exit code 3; output: %q", append(payload, '\n'))
		want := fmt.Sprintf("command sh: exit code 3; output: %q", `{"token":"[redacted]","note":"x"}`+"\n")
		if got := r.Attempt(payload, in); got != want {
			t.Errorf("%s: Attempt(%q) = %q, want %q", s.name, in, got, want)
		}
	}
}

func encodeJSONString(t *testing.T, s string, escapeHTML bool) string {
	t.Helper()
	var b strings.Builder
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(escapeHTML)
	if err := e.Encode(s); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(strings.TrimSuffix(b.String(), "\n"), `"`)[1:]
}

func decodeJSONString(t *testing.T, lit string) string {
	t.Helper()
	var s string
	if err := json.Unmarshal([]byte(`"`+lit+`"`), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// asciiOnly escapes each non-ASCII character of a JSON string's content.
func asciiOnly(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < 0x80 {
			b.WriteRune(r)
			continue
		}
		for _, u := range utf16.Encode([]rune{r}) {
			fmt.Fprintf(&b, `\u%04x`, u)
		}
	}
	return b.String()
}

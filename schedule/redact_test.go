package schedule

import (
	"encoding/json"
	"testing"
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

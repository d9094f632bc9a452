package redact

import (
	"encoding/json"
	"testing"
)

func TestURL(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"https://api.example.com/v1/report", "https://api.example.com/v1/report"},
		{"https://api.example.com:8443/v1/report?apikey=abc&customer=acme",
			"https://api.example.com:8443/v1/report?apikey=[redacted]&customer=[redacted]"},
		{"https://h/p?token", "https://h/p?[redacted]"},
		{"https://h/p?a=&b=1", "https://h/p?a=&b=[redacted]"},
		{"https://h/p?a=1;b=2", "https://h/p?a=[redacted]"},
		{"https://h/p?", "https://h/p?"},
		{"https://h/p#frag", "https://h/p#[redacted]"},
		{"https://ann:pa%40ss@h/p?k=v#f", "https://ann:xxxxx@h/p?k=[redacted]#[redacted]"},
		{"https://ann@h/p", "https://ann@h/p"},
		{"https://ann:***@h/p", "https://ann:xxxxx@h/p"},
		{"http://[::1/x?k=v%zz", "http://[::1/x?k=[redacted]"},
		{"/relative?k=v", "/relative?k=[redacted]"},
		{"https://h/p?a=[redacted]", "https://h/p?a=[redacted]"},
	}
	for _, tt := range tests {
		if got := URL(tt.in); got != tt.want {
			t.Errorf("URL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestURLs(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{`Get "https://h/p?apikey=abc": dial tcp 10.0.0.1:443: i/o timeout`,
			`Get "https://h/p?apikey=[redacted]": dial tcp 10.0.0.1:443: i/o timeout`},
		{"POST https://h/p?k=v: status 500; body: \"see HTTP://x/y?t=1.\"",
			"POST https://h/p?k=[redacted]: status 500; body: \"see HTTP://x/y?t=[redacted].\""},
		{`quoted "http://h/?a=b\" rest"`, `quoted "http://h/?a=[redacted]\" rest"`},
		{"no url here", "no url here"},
	}
	for _, tt := range tests {
		if got := URLs(tt.in); got != tt.want {
			t.Errorf("URLs(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestUnquoteJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		lit, want string
		ok        bool
	}{
		{`"plain"`, "plain", true},
		{`"a\"b\\c\/d\b\f\n\r\t"`, "a\"b\\c/d\b\f\n\r\t", true},
		{`"\u00e9\u003c"`, "é<", true},
		{`"\ud83d\ude00"`, "😀", true},
		{`"\ud83d x"`, "\ufffd x", true},
		{`"\ude00"`, "\ufffd", true},
		{"\"a\xffb\"", "a\xffb", true},
		{`"bad \x"`, "", false},
		{`"short \u12"`, "", false},
		{`"trailing \"`, "", false},
		{`plain`, "", false},
	}
	for _, tt := range tests {
		got, ok := UnquoteJSON([]byte(tt.lit))
		if got != tt.want || ok != tt.ok {
			t.Errorf("UnquoteJSON(%q) = %q, %v, want %q, %v", tt.lit, got, ok, tt.want, tt.ok)
		}
		if !tt.ok || !json.Valid([]byte(tt.lit)) {
			continue
		}
		var dec string
		if err := json.Unmarshal([]byte(tt.lit), &dec); err == nil && dec != jsonDecoded(got) {
			t.Errorf("UnquoteJSON(%q) = %q, which Go decodes as %q, not %q", tt.lit, got, jsonDecoded(got), dec)
		}
	}
}

func TestSet(t *testing.T) {
	t.Parallel()
	s := NewSet(Secret{Value: "abc"}, Secret{Value: "secret"}, Secret{Value: "secret-long"}, Secret{Value: "a\"b<c", Written: []string{`a\"b\u003cc`}})
	tests := []struct{ in, want string }{
		{"abc secret secret-long", "abc [redacted] [redacted]"},
		{`a"b<c a\"b\u003cc a\\\"b\\u003cc a\"b<c`, "[redacted] [redacted] [redacted] [redacted]"},
	}
	for _, tt := range tests {
		if got := s.Apply(tt.in); got != tt.want {
			t.Errorf("Apply(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if !(Set{}).Empty() || s.Empty() || !NewSet(Secret{Value: "abc"}).Empty() {
		t.Errorf("Empty is wrong")
	}
	if got := (Set{}).Apply("secret"); got != "secret" {
		t.Errorf("the zero Set masked: %q", got)
	}
}

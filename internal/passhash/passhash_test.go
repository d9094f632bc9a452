package passhash

import (
	"errors"
	"strings"
	"testing"
)

func TestNewMatchParse(t *testing.T) {
	t.Parallel()
	h, err := New("correct horse", MinIterations)
	if err != nil {
		t.Fatal(err)
	}
	text := h.String()
	if !strings.HasPrefix(text, "pbkdf2-sha256$100000$") || strings.Contains(text, "correct") {
		t.Fatalf("String = %q, want pbkdf2-sha256$100000$... without the password", text)
	}
	p, err := Parse(text)
	if err != nil {
		t.Fatalf("Parse(%q): %v", text, err)
	}
	if !p.Equal(h) {
		t.Errorf("Parse(String()) = %v, want %v", p, h)
	}
	if !p.Match("correct horse") {
		t.Error("Match(the password) = false, want true")
	}
	for _, wrong := range []string{"", "correct hors", "correct horse ", "Correct horse"} {
		if p.Match(wrong) {
			t.Errorf("Match(%q) = true, want false", wrong)
		}
	}
	other, err := New("correct horse", MinIterations)
	if err != nil {
		t.Fatal(err)
	}
	if other.String() == text {
		t.Error("two hashes of one password are equal: the salt is not random")
	}
	if (Hash{}).Match("") {
		t.Error("the zero Hash matches the empty password")
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	salt, key := "c2FsdHNhbHRzYWx0c2FsdA", "MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE"
	tests := []struct {
		name, text, err string
	}{
		{"ok", "pbkdf2-sha256$600000$" + salt + "$" + key, ""},
		{"empty", "", "1 fields"},
		{"clear password", "hunter2", "1 fields"},
		{"other scheme", "argon2id$600000$" + salt + "$" + key, `scheme "argon2id"`},
		{"few iterations", "pbkdf2-sha256$1000$" + salt + "$" + key, "1000 iterations, want 100000"},
		{"iterations not a number", "pbkdf2-sha256$many$" + salt + "$" + key, `iterations "many"`},
		{"padded salt", "pbkdf2-sha256$600000$" + salt + "==$" + key, "the salt"},
		{"short salt", "pbkdf2-sha256$600000$c2FsdA$" + key, "the salt"},
		{"short key", "pbkdf2-sha256$600000$" + salt + "$" + key[:20], "the key"},
		{"extra field", "pbkdf2-sha256$600000$" + salt + "$" + key + "$x", "5 fields"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse(tt.text)
			if tt.err == "" {
				if err != nil {
					t.Fatalf("Parse(%q) = %v, want no error", tt.text, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) || !errors.Is(err, ErrMalformed) {
				t.Fatalf("Parse(%q) = %v, want ErrMalformed containing %q", tt.text, err, tt.err)
			}
		})
	}
}

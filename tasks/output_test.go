package tasks

import (
	"bytes"
	"strings"
	"testing"
)

func TestTailBuffer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		max    int
		writes []string
		want   string
	}{
		{"empty", 4, nil, ""},
		{"under cap", 4, []string{"ab"}, "ab"},
		{"exactly cap", 4, []string{"ab", "cd"}, "abcd"},
		{"one big write", 4, []string{"abcdefgh"}, "efgh"},
		{"many small writes", 4, strings.Split("abcdefghijklmnop", ""), "mnop"},
		{"big write after small", 4, []string{"ab", "cdefghij"}, "ghij"},
		{"small after big", 4, []string{"abcdefgh", "ij"}, "ghij"},
		{"past twice the cap", 3, []string{"ab", "cd", "ef", "gh"}, "fgh"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newTailBuffer(tt.max)
			for _, w := range tt.writes {
				n, err := b.Write([]byte(w))
				if n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v, want %d, nil", w, n, err, len(w))
				}
			}
			if got := string(b.Bytes()); got != tt.want {
				t.Errorf("Bytes() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestLastBytes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		n    int
		want string
	}{
		{"short", "abc", 5, "abc"},
		{"cut", "abcdef", 3, "def"},
		{"cut leaving no character start", "aé", 1, "\xa9"},
		{"cut inside a character", "aéb", 2, "b"},
		{"cut before a character", "abé", 2, "é"},
		{"binary", "\x80\x80\x80\x80\x80\x80", 5, "\x80\x80\x80\x80\x80"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := lastBytes([]byte(tt.in), tt.n)
			if !bytes.Equal(got, []byte(tt.want)) {
				t.Errorf("lastBytes(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
			}
		})
	}
}

package suggest

import (
	"slices"
	"testing"
)

func TestSuggest(t *testing.T) {
	t.Parallel()
	keys := []string{"max_attempts", "backoff", "max_backoff", "timeout", "command", "concurrency", "dir", "env", "url"}
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"one letter missing", "max_atempts", []string{"max_attempts"}},
		{"swapped letters", "tiemout", []string{"timeout"}},
		{"other case", "Backoff", []string{"backoff"}},
		{"far from all", "retries", nil},
		{"short and far", "db", nil},
		{"two as close", "max_backof", []string{"max_backoff"}},
	}
	for _, tt := range tests {
		if got := Names(tt.in, keys); !slices.Equal(got, tt.want) {
			t.Errorf("%s: Names(%q) = %q, want %q", tt.name, tt.in, got, tt.want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"abc", "", 3},
		{"kitten", "sitting", 3},
		{"timeout", "tiemout", 1},
		{"istanbul", "instanbul", 1},
		{"çay", "cay", 1},
	}
	for _, tt := range tests {
		if got := editDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

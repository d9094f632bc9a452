package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/scheduler-run/scheduler/schedule/config"
)

// TestHashToken: -hash-token prints the SHA-256 of the first line and
// refuses a short token, printing nothing.
func TestHashToken(t *testing.T) {
	t.Parallel()
	const token = "q1w2e3r4t5y6u7i8o9p0a1s2d3f4g5h6j7k8l9"
	var out, errs bytes.Buffer
	if err := Run(context.Background(), []string{"-hash-token"}, &out, &errs, nil, Options{Stdin: strings.NewReader(token + "\nsecond\n")}); err != nil {
		t.Fatalf("-hash-token: %v", err)
	}
	if got, want := out.String(), config.HashToken(token).String()+"\n"; got != want {
		t.Errorf("-hash-token printed %q, want %q", got, want)
	}
	out.Reset()
	err := Run(context.Background(), []string{"-hash-token"}, &out, &errs, nil, Options{Stdin: strings.NewReader("short\n")})
	if err == nil || !strings.Contains(err.Error(), "want at least 32 random bytes") || out.Len() > 0 {
		t.Errorf("-hash-token of a short token = %v, printed %q: want a usage error and nothing printed", err, out.String())
	}
}

package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/scheduler-run/scheduler/internal/passhash"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// TestHashPassword: -hash-password reads the first line of a pipe and
// prints a hash that the config loader accepts and that matches that line
// alone; it prints nothing else, and never the password.
func TestHashPassword(t *testing.T) {
	t.Parallel()
	var out, errs bytes.Buffer
	err := Run(context.Background(), []string{"-hash-password"}, &out, &errs, nil, Options{Stdin: strings.NewReader("s3cret pass\r\nsecond line\n")})
	if err != nil {
		t.Fatalf("-hash-password: %v (stderr %q)", err, errs.String())
	}
	text := strings.TrimSuffix(out.String(), "\n")
	if strings.Contains(out.String()+errs.String(), "s3cret") || strings.Count(out.String(), "\n") != 1 {
		t.Fatalf("-hash-password printed %q, %q: want one line without the password", out.String(), errs.String())
	}
	h, err := passhash.Parse(text)
	if err != nil {
		t.Fatalf("Parse(%q): %v", text, err)
	}
	if !strings.HasPrefix(text, "pbkdf2-sha256$600000$") {
		t.Errorf("hash %q, want pbkdf2-sha256 with 600000 iterations", text)
	}
	if !h.Match("s3cret pass") {
		t.Errorf("the hash does not match the line it read")
	}
	cfg := "[tasks.t]\ncommand = [\"true\"]\n[http]\nactions = true\n[[http.user]]\nname = \"ann\"\npassword_hash = \"" + text + "\"\n"
	if _, err := config.Parse("s.toml", []byte(cfg)); err != nil {
		t.Errorf("the config loader refuses the printed hash: %v", err)
	}
}

func TestHashPasswordRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		args     []string
		err      string
	}{
		{"empty", "\n", nil, "empty password"},
		{"nothing", "", nil, "empty password"},
		{"too long", strings.Repeat("x", maxPassword+1), nil, "longer than 1024"},
		{"with a mode", "pw\n", []string{"-status"}, "cannot be combined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out, errs bytes.Buffer
			err := Run(context.Background(), append([]string{"-hash-password"}, tt.args...), &out, &errs, nil, Options{Stdin: strings.NewReader(tt.in)})
			if err == nil || !strings.Contains(err.Error(), tt.err) || ExitCode(err) != ExitUsage {
				t.Fatalf("-hash-password with %q = %v (exit %d), want a usage error containing %q", tt.in, err, ExitCode(err), tt.err)
			}
			if out.Len() > 0 {
				t.Errorf("printed %q, want nothing", out.String())
			}
		})
	}
}

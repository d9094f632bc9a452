package tasks

import (
	"bytes"
	"strings"
	"testing"

	"github.com/scheduler-run/scheduler/internal/redact"
)

// TestMaskedLinesNeverSplitASecret: the live output of an HTTP task gets
// whole lines with the URL's secrets masked, however the body's reads cut
// them, and never the last line before its newline.
func TestMaskedLinesNeverSplitASecret(t *testing.T) {
	t.Parallel()
	body := "progress token=hunter2-secret ok\nsecond hunter2-secret\nthird, no newline hunter2"
	for _, size := range []int{1, 3, 7, 16, len(body)} {
		var got bytes.Buffer
		m := &maskedLines{w: &got, secrets: redact.NewSet(redact.Secret{Value: "hunter2-secret"})}
		for b := []byte(body); len(b) > 0; b = b[min(size, len(b)):] {
			if n, err := m.Write(b[:min(size, len(b))]); err != nil || n != min(size, len(b)) {
				t.Fatalf("Write = %d, %v", n, err)
			}
		}
		if strings.Contains(got.String(), "hunter2") || got.String() != "progress token=[redacted] ok\nsecond [redacted]\n" {
			t.Errorf("reads of %d bytes: live output %q, want the two whole lines masked", size, got.String())
		}
	}
}

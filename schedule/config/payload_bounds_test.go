package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/scheduler-run/scheduler/queue"
)

// TestConfigPayloadWithinEnqueueBounds: a schedule whose payload, or an
// item's merged payload, no enqueue would take is a config error naming
// the schedule and the field.
func TestConfigPayloadWithinEnqueueBounds(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", queue.MaxPayloadSize/2+1)
	head := "[tasks.t]\ncommand = [\"true\"]\n\n[[schedule]]\nname = \"s\"\ncron = \"@hourly\"\ntask = \"t\"\n"
	tests := []struct {
		name, body, want string
	}{
		{"payload", "payload = {a = \"" + big + big + "\"}\n", `:8: schedule "s": field payload: payload too large`},
		{"item", "payload = {a = \"" + big + "\"}\nfor_each = [{b = \"x\"}, {b = \"" + big + "\"}]\n", `:9: schedule "s": field for_each: item 2: payload too large`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("c.toml", []byte(head+tc.body))
			if !errors.Is(err, queue.ErrPayloadTooLarge) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse = %.200v, want an error containing %q", err, tc.want)
			}
		})
	}
}

package schedule

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// TestTriggerPayloadWithinEnqueueBounds: a trigger's payload nested too
// deep, or too large once merged over the schedule's, is refused before
// anything is enqueued.
func TestTriggerPayloadWithinEnqueueBounds(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", queue.MaxPayloadSize/2+1)
	cfg, err := config.Parse("c.toml", []byte("[tasks.t]\ncommand = [\"true\"]\n\n[[schedule]]\nname = \"s\"\ncron = \"@hourly\"\ntask = \"t\"\npayload = {a = \""+big+"\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	deep := func(n int) json.RawMessage {
		return json.RawMessage(`{"b":` + strings.Repeat("[", n-1) + strings.Repeat("]", n-1) + `}`)
	}
	tests := []struct {
		name    string
		payload json.RawMessage
		want    error
	}{
		{"deep", deep(10000), queue.ErrPayloadTooDeep},
		{"just too deep", deep(queue.MaxPayloadDepth + 1), queue.ErrPayloadTooDeep},
		{"too large merged", json.RawMessage(`{"b":"` + big + `"}`), queue.ErrPayloadTooLarge},
	}
	for _, tc := range tests {
		err := CheckTrigger(cfg, "s", TriggerOptions{Payload: tc.payload, Now: now})
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: CheckTrigger = %.200v, want %v", tc.name, err, tc.want)
		}
	}
	if err := CheckTrigger(cfg, "s", TriggerOptions{Payload: deep(queue.MaxPayloadDepth), Now: now}); err != nil {
		t.Errorf("CheckTrigger at the depth bound: %v", err)
	}
}

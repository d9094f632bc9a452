package schedule

import (
	"encoding/json"
	"maps"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// fanInSpec is the fan-in of up's instant at: the job of down, the schedule
// after up, enqueued once every job of the instant has ended. The job
// stands for the upstream instant (its ScheduledAt), so down's deadlines
// count from it, and its payload names the upstream schedule and instant;
// the store adds the lists of items done, dead and cancelled.
func fanInSpec(cfg *config.Config, up, down *config.Schedule, at time.Time) store.FanInSpec {
	items := down.Items()
	payload := map[string]any{}
	if len(items) > 0 {
		var base map[string]any
		if json.Unmarshal(items[0].Payload, &base) == nil {
			maps.Copy(payload, base)
		}
	}
	payload["upstream"] = up.Name
	payload["instant"] = at.UTC().Format(time.RFC3339)
	b, _ := json.Marshal(payload) // strings, numbers, maps and slices of TOML values
	key := DedupKey(down.Name, "", at)
	then := runJob(down, cfg.Tasks[down.Task], "", key, b, at)
	return store.FanInSpec{Key: "fanin|" + key, Then: then, Require: store.Require(down.Require)}
}

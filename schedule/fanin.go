package schedule

import (
	"encoding/json"
	"maps"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// fanIns returns the fan-ins of up's instant at, one per schedule after
// up, each with those after it as its Next; nil when none follows up. A
// downstream's job stands for the upstream instant (its ScheduledAt), so
// its deadlines count from it, and its payload names the upstream schedule
// and instant; the store adds the lists of items done, dead and cancelled.
// A non-empty manual is the key of a manual run of up at at: the fan-ins
// and jobs are keyed as manual runs and stand for no instant, and a skip
// of one is recorded under the run's item (store.ManualRunItem).
func fanIns(cfg *config.Config, up *config.Schedule, at time.Time, manual string) []store.FanInSpec {
	downs := cfg.Downstream[up.Name]
	if len(downs) == 0 {
		return nil
	}
	specs := make([]store.FanInSpec, len(downs))
	for i, down := range downs {
		specs[i] = fanInSpec(cfg, up, down, at, manual)
		specs[i].Next = fanIns(cfg, down, at, manual)
	}
	return specs
}

func fanInSpec(cfg *config.Config, up, down *config.Schedule, at time.Time, manual string) store.FanInSpec {
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
	key := DedupKey(down.Name, "", at)
	if manual != "" {
		payload["manual"] = manual
		key = manualKey(down.Name, "", manual)
	}
	b, _ := json.Marshal(payload) // strings, numbers, maps and slices of TOML values
	then := runJob(down, cfg.Tasks[down.Task], "", key, b, at)
	spec := store.FanInSpec{Key: "fanin|" + key, Then: then, Require: store.Require(down.Require)}
	if manual != "" {
		// Its skip is recorded under the run's item (store.ManualRunItem),
		// its key is store.ManualFanInKey's, which the alarms read.
		spec.Then.ScheduledAt, spec.Run = time.Time{}, manual
	}
	return spec
}

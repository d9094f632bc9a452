package cli

import "github.com/scheduler-run/scheduler/schedule/config"

// scheduleZones maps each schedule of cfg to its zone, the TZ its command
// jobs get. A job carries its schedule's name, so the zone it runs in is
// the one the running config gives that schedule: after a reload that
// changes a zone, jobs already queued run in the new one.
func scheduleZones(cfg *config.Config) map[string]string {
	zones := make(map[string]string, len(cfg.Schedules))
	for _, s := range cfg.Schedules {
		zones[s.Name] = s.Location.String()
	}
	return zones
}

// Package config turns schedules.toml into a validated Config: it decodes
// the file, checks every key, locates each problem's line, suggests the
// name probably meant, bounds what it reads, and compares two configs. It
// holds the daemon's settings: [scheduler], the tasks and their
// redaction, the [http] listener and logins, and [pools.NAME].
//
// It knows what a config says, not what is done with it: it schedules,
// stores and runs nothing. It checks payloads against the queue's bounds,
// so a config loads only if every job it makes can be enqueued.
//
// # The file
//
//	[scheduler]                   # see Scheduler
//	timezone = "UTC"
//
//	[tasks.report]                # see Task
//	command = ["./report.sh", "--customer", "{{.customer}}"]
//
//	[[schedule]]                  # see Schedule
//	name = "nightly-report"
//	cron = "0 3 * * *"            # see cron.Expr
//	timezone = "Europe/Istanbul"
//	task = "report"
//	payload = { format = "pdf" }
//	for_each = [ { customer = "acme" }, { customer = "globex" } ]
//	catch_up = "latest"           # or "all" (with catch_up_limit), "none"
//	overlap = "skip"              # or "allow", the default
//	start_within = "5m"           # late alarm; see Schedule.StartWithin
//	deadline = "1h"               # missed alarm; see Schedule.Deadline
//	notify = ["page-ops"]         # tasks that get each incident's notices (AlarmPayload)
//	renotify = "4h"               # remind while unacknowledged; see Schedule.Renotify
//
// Load reports every problem at once, each with file, line, table, name
// and key, and returns no Config unless the whole file is valid.
// ExampleLoad loads testdata/schedules.toml.
package config

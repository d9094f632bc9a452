// Package config turns schedules.toml into a validated Config: it decodes
// the file, checks every key, locates each problem's line, suggests the
// name that was probably meant, bounds what it reads, compares two configs
// (Compare), and holds the settings the daemon reads from the file: the
// [scheduler] table, the tasks and their redaction, the [http] listener and
// dashboard logins, and the [pools.NAME] tables.
//
// It knows what a config says and nothing of what is done with it: it does
// not schedule, store or run anything. It parses cron expressions with the
// cron package and checks payloads against the queue's bounds, so that a
// config loads only if every job it makes can be enqueued.
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
//	notify = ["page-ops"]         # tasks that get each alarm (AlarmPayload)
//
// Load reports every problem at once, each with file, line, table, name and
// key, and returns no Config unless the whole file is valid. ExampleLoad
// loads testdata/schedules.toml.
package config

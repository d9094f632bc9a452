// Package schedule owns schedules.toml and the beat: it loads and validates
// the file, computes the instants of cron expressions (with explicit rules
// for daylight saving), and turns every due instant into exactly one queue
// row, across crashes, restarts, downtime, clock jumps and concurrent beats.
//
// It knows nothing of SQL or of how tasks execute. Everything durable goes
// through the queue package: a schedule's cursor (the last instant
// materialised or deliberately passed), its jobs and its skip records move
// together in one store.Advance (the schedules due in one pass share
// transactions through queue.AdvanceBatch). Task execution belongs to the
// tasks package; this package only checks, at load time, that a command's
// argument templates can be filled from every payload a schedule makes.
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
//	cron = "0 3 * * *"            # see Spec
//	timezone = "Europe/Istanbul"
//	task = "report"
//	payload = { format = "pdf" }
//	for_each = [ { customer = "acme" }, { customer = "globex" } ]
//	catch_up = "latest"           # or "all" (with catch_up_limit), "none"
//	overlap = "skip"              # or "allow", the default
//	start_within = "5m"           # late alarm; see Schedule.StartWithin
//	deadline = "1h"               # missed alarm; see Schedule.Deadline
//	notify = ["page-ops"]         # tasks that get each alarm
//
// After each pass the beat judges the alarms of the watched schedules from
// the database (see AlarmPayload and the README's "Alarms"): late, missed,
// dead, misfire and recovered, each raised once under its key with its
// notification jobs, through store.Engine's RaiseAlarms.
//
// Load reports every problem at once, each with file, line, table, name and
// key, and returns no Config unless the whole file is valid.
//
// # Instants and jobs
//
// Each instant makes one job per fan-out Item, with payload the schedule's
// payload merged with the item, and dedup key DedupKey(schedule, item,
// instant): materialising an instant twice, by a restarted beat, a second
// beat or Backfill, inserts nothing. An instant that does not run is
// recorded as a store.Skip with its reason: misfire (missed while nothing
// ran the schedule, dropped by its catch-up policy), overlap (overlap =
// "skip" and the item's previous job still pending or running; recorded per
// item), paused (missed during a pause) or dst (the repeat of a wall time
// at a fall-back). Misfire, paused and dst skips concern every item and are
// recorded with Item "".
//
// # Missed instants
//
// An instant materialised at most Scheduler.MisfireGrace (default 1m) after
// it is on time and always runs. Later ones, after downtime or a forward
// clock jump, are missed: catch_up = "latest" runs the most recent one
// unless an on-time instant runs anyway, "all" runs the newest
// catch_up_limit of them, "none" runs none. At Resume every instant since
// the pause is missed, however recent: catch_up alone decides. A new schedule, and one whose
// expression a reload changed, starts from now: it catches nothing up.
package schedule

// Package schedule is the beat: it turns every due instant of a config's
// schedules into exactly one queue row, across crashes, restarts,
// downtime, clock jumps and concurrent beats, and it holds the operator's
// actions on schedules: Trigger, Pause, Resume, Backfill and the preview
// of the next runs.
//
// It knows nothing of SQL or of how tasks execute, nor of the file: the
// config package loads and validates schedules.toml, the cron package
// computes instants, and everything durable goes through the queue
// package. A schedule's cursor (the last instant materialised or
// deliberately passed), its jobs and its skip records move together in one
// store.Advance (the schedules due in one pass share transactions through
// queue.AdvanceBatch).
//
// After each pass the beat judges the alarms of the watched schedules from
// the database (see the README's "Alarms"): late, missed, dead, misfire
// and recovered, each raised once under its key with its notification
// jobs, through store.Engine's RaiseAlarms.
//
// # Instants and jobs
//
// Each instant makes one job per fan-out config.Item, with payload the
// schedule's payload merged with the item, and dedup key
// DedupKey(schedule, item, instant): materialising an instant twice, by a
// restarted beat, a second beat or Backfill, inserts nothing. An instant
// that does not run is recorded as a store.Skip with its reason: misfire
// (missed while nothing ran the schedule, dropped by its catch-up policy),
// overlap (overlap = "skip" and the item's previous job still pending or
// running; recorded per item), paused (missed during a pause) or dst (the
// repeat of a wall time at a fall-back). Misfire, paused and dst skips
// concern every item and are recorded with Item "".
//
// # Missed instants
//
// An instant materialised at most config.Scheduler.MisfireGrace (default
// 1m) after it is on time and always runs. Later ones, after downtime or a
// forward clock jump, are missed: catch_up = "latest" runs the most recent
// one unless an on-time instant runs anyway, "all" runs the newest
// catch_up_limit of them, "none" runs none (see cron.Plan). At Resume
// every instant since the pause is missed, however recent: catch_up alone
// decides. A new schedule, and one whose expression a reload changed,
// starts from now: it catches nothing up.
//
// ExampleNextN previews the runs of a loaded schedule.
package schedule

// Package schedule is the beat: it turns every due instant of a config's
// schedules into exactly one queue row, across crashes, restarts,
// downtime, clock jumps and concurrent beats. It also holds the
// operator's actions: Trigger, Pause, Resume, Backfill and the preview of
// the next runs.
//
// It knows nothing of SQL, of how tasks execute, or of the file: config
// loads schedules.toml, cron computes instants, and everything durable
// goes through queue. A schedule's cursor (the last instant materialised
// or deliberately passed), its jobs and its skip records move together in
// one store.Advance; the schedules due in one pass share transactions
// through queue.AdvanceBatch.
//
// After each pass the beat judges the watched schedules' alarms (see
// package alarm and the README's "Alarms").
//
// # Instants and jobs
//
// Each instant makes one job per fan-out config.Item, its payload the
// schedule's merged with the item, its dedup key DedupKey(schedule, item,
// instant): materialising an instant twice, by a restarted beat, a second
// beat or Backfill, inserts nothing. An instant that does not run is
// recorded as a store.Skip with its reason: misfire (missed, dropped by
// the catch-up policy), overlap (overlap = "skip" and the item's previous
// job still pending or running; per item), paused (missed during a pause)
// or dst (a fall-back's repeated wall time). Misfire, paused and dst
// skips concern every item and have Item "".
//
// # Missed instants
//
// An instant materialised at most config.Scheduler.MisfireGrace (default
// 1m) late is on time and always runs. Later ones, after downtime or a
// forward clock jump, are missed, and catch_up decides (see cron.Plan).
// At Resume every instant since the pause is missed, however recent. A
// new schedule, and one whose expression a reload changed, starts from
// now: it catches nothing up.
//
// # Driving it by hand
//
// Run is the daemon's loop. RunOnce runs one pass at the clock's now, for
// tests and tools; package scheduletest builds on it to tick a
// schedules.toml's beat at chosen instants on a clock.Fake and report what
// each pass enqueued, skipped and alarmed (see its examples: a fan-out
// schedule, an alarm's notify task).
//
// ExampleNextN previews the runs of a loaded schedule.
package schedule

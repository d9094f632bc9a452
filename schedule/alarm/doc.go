// Package alarm judges, from the database, whether watched schedules ran
// as their start_within and deadline ask, and raises late, missed, dead,
// misfire and recovered alarms, each once under its key. Alarms of one
// schedule and kind count on one open incident: its first occurrence, its
// reminders (renotify) and its resolution by the schedule's next success
// each send one notification job per notify task (payload
// config.AlarmPayload). DeadlineOf is the one rule for a schedule's deadline state, which
// -status, the metrics and the dashboard show.
//
// It owns the alarm marks and the judgement, not the beat's loop: the
// beat calls Evaluate after each pass, and wakes early when Finished says
// so. It knows nothing of SQL, TOML or how tasks run. The schedule
// package tests it end to end (alarm_test.go and incident_test.go there).
package alarm

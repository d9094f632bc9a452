// Package alarm judges, from the database, whether the watched schedules
// of a config ran as their start_within and deadline ask, and raises the
// incidents that follow: late, missed, dead, misfire and recovered alarms,
// each once under its key, with one notification job per task the
// schedule's notify names (payload config.AlarmPayload). DeadlineStateOf
// sums a schedule's alarms up for -status and the dashboard.
//
// It owns the alarm marks and the judgement, not the beat's loop: the beat
// calls Evaluate after each pass, with the cursors that pass read and left,
// and wakes itself when Finished says a job's end calls for a judgement
// now. It knows nothing of SQL, TOML or how tasks run. Its judgement is
// tested end to end through a running beat, in the schedule package
// (alarm_test.go there); ExampleDeadlineStateOf shows the states.
package alarm

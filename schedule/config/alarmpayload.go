package config

// AlarmPayload is the JSON payload of an alarm's notification jobs, what a
// task named in notify receives, and the detail stored with the alarm. The
// loader runs a notify task's templates over it (see the README's
// "Alarms"). Times are RFC 3339 in the schedule's zone; empty when there
// is none.
type AlarmPayload struct {
	Schedule string `json:"schedule"`
	Item     string `json:"item"`
	// Instant is the instant the alarm is about; empty for a manual run's
	// job. For a misfire, the newest instant skipped.
	Instant string `json:"instant"`
	Kind    string `json:"kind"`
	// Deadline is the limit the alarm is about: the instant plus
	// start_within for a late alarm, plus deadline otherwise (empty when
	// the schedule has none).
	Deadline string `json:"deadline"`
	// LastSuccess is when the schedule's newest successful instant
	// finished, as the alarm was raised.
	LastSuccess string `json:"last_success"`
	JobID       int64  `json:"job_id"`
	LastError   string `json:"last_error"`
	// Skipped counts the instants a misfire skipped (one alarm per beat
	// step that skipped any); 0 for the other kinds. Always present, so
	// that a notify command's template may read it whatever the kind.
	Skipped int `json:"skipped"`
}

package config

// AlarmPayload is the JSON payload a notify task receives, also stored
// with the alarm. The loader checks notify tasks' templates against it.
// Times are RFC 3339 in the schedule's zone, or empty.
type AlarmPayload struct {
	Schedule string `json:"schedule"`
	Item     string `json:"item"`
	// Instant is empty for a manual run; for a misfire, the newest skip.
	Instant string `json:"instant"`
	Kind    string `json:"kind"`
	// Deadline is the instant plus start_within for a late alarm, else
	// plus deadline.
	Deadline string `json:"deadline"`
	// LastSuccess is when the newest successful instant finished.
	LastSuccess string `json:"last_success"`
	JobID       int64  `json:"job_id"`
	LastError   string `json:"last_error"`
	// Skipped counts a misfire's skipped instants; 0 for other kinds.
	// Always present, so any template may read it.
	Skipped int `json:"skipped"`
}

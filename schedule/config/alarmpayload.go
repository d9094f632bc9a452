package config

// AlarmPayload is the JSON payload a notify task receives: a notice of an
// incident, the alarms of one schedule and kind while open. The loader
// checks notify tasks' templates against it. Times are RFC 3339 in the
// schedule's zone, or empty.
type AlarmPayload struct {
	Schedule string `json:"schedule"`
	// Item, Instant, JobID and LastError are of the occurrence that opened
	// the incident.
	Item string `json:"item"`
	// Instant is empty for a manual run; for a misfire, the newest skip.
	Instant string `json:"instant"`
	// Kind is the incident's kind (late, missed, dead, misfire), or
	// recovered for its resolution.
	Kind string `json:"kind"`
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

	// Incident is the incident's id (scheduler -ack ID).
	Incident int64 `json:"incident"`
	// IncidentKind is the incident's kind, also for its resolution.
	IncidentKind string `json:"incident_kind"`
	// Notice is first (the incident opened), reminder (still open and
	// unacknowledged after renotify) or resolved (a run succeeded).
	Notice string `json:"notice"`
	// Count is how many occurrences the incident has counted.
	Count int64 `json:"count"`
	// First and Last are when its first and newest occurrences happened.
	First string `json:"first"`
	Last  string `json:"last"`
}

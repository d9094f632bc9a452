package store

import (
	"errors"
	"strconv"
	"time"
)

// An incident groups the alarms of one schedule and kind while it is open:
// the first occurrence opens it and notifies, later ones are counted on it,
// reminders repeat its notice while nobody acknowledges it, and the
// schedule's next success resolves it and notifies once. At most one
// incident of a schedule and kind is open; every count, reminder and
// resolution commits with its notification jobs, so each happens once
// however many engines evaluate.

// NoticeKind says which notice of an incident a notification carries.
type NoticeKind string

// The notices of an incident.
const (
	NoticeFirst    NoticeKind = "first"    // the occurrence that opened it
	NoticeReminder NoticeKind = "reminder" // it is still open, unacknowledged
	NoticeResolved NoticeKind = "resolved" // a success resolved it
)

// IncidentKeyPrefix starts every incident's key (see IncidentKey).
const IncidentKeyPrefix = "incident:"

// IncidentKey returns the key of incident id: the AlarmKey of its
// notification jobs.
func IncidentKey(id int64) string { return IncidentKeyPrefix + strconv.FormatInt(id, 10) }

// NoticeKeyPrefix returns the start of the keys of every notification job of
// incident id.
func NoticeKeyPrefix(id int64) string { return NotifyKeyPrefix + IncidentKey(id) + ":" }

// noticeKey names one notice of incident id: first, reminder:N or resolved.
func noticeKey(n Notice) string {
	k := IncidentKey(n.Incident.ID) + ":" + string(n.Kind)
	if n.Kind == NoticeReminder {
		k += ":" + strconv.Itoa(n.Incident.Reminders)
	}
	return k
}

// GroupsIntoIncident reports whether alarms of kind k are counted on
// incidents: every kind but recovered.
func GroupsIntoIncident(k AlarmKind) bool {
	return k == AlarmLate || k == AlarmMissed || k == AlarmDead || k == AlarmMisfire || k == AlarmUpstream
}

// Incident is a stored incident.
type Incident struct {
	ID       int64
	Schedule string
	Kind     AlarmKind
	Open     bool
	Count    int64     // occurrences counted on it
	FirstAt  time.Time // when its first occurrence happened
	LastAt   time.Time // when its newest occurrence happened
	OpenedAt time.Time
	// NotifiedAt is when its last notice (first or reminder) was due,
	// sent or silenced.
	NotifiedAt time.Time
	Reminders  int       // reminders since the first notice
	AckedAt    time.Time // zero until acknowledged
	AckedBy    string
	ResolvedAt time.Time // zero while open
	// Notifying is true while a notification job of it has not ended (read
	// by OpenIncidents only): its resolution waits, so a receiver never
	// gets the resolution before the notice.
	Notifying bool
}

// Notice is a notification of an incident, for AlarmBatch.NoticeFunc.
type Notice struct {
	Kind     NoticeKind
	Incident Incident  // as it stands after the notice's change
	Alarm    *NewAlarm // the occurrence that opened it, for NoticeFirst
	// Silenced is true when the schedule's silence suppressed it: no job
	// was enqueued.
	Silenced bool
}

// Reminder asks for incident ID's next reminder, due when Reminders
// reminders were sent: it is sent unless another engine sent it first, or
// the incident was acknowledged or resolved.
type Reminder struct {
	ID        int64
	Reminders int
}

// Occurrence is an alarm raised and counted on an incident.
type Occurrence struct {
	Alarm    Alarm
	Incident Incident // as it stands after the count
	Opened   bool     // the alarm opened the incident
}

// AlarmOutcome is what CommitAlarms did.
type AlarmOutcome struct {
	// Raised are the inserted alarms in AlarmBatch.Alarms order.
	Raised []Alarm
	// Occurrences are those of Raised counted on an incident.
	Occurrences []Occurrence
	// Notices are the notices due: first, reminders and resolutions, sent
	// or silenced.
	Notices []Notice
	// Waiting is true when a success would resolve an incident whose
	// notification has not ended yet: the resolution waits for it.
	Waiting bool
}

// Silence suppresses a schedule's notifications until Until.
type Silence struct {
	Schedule string
	Until    time.Time
	By       string
	At       time.Time
}

// ErrIncidentResolved is returned for an acknowledgement of a resolved
// incident.
var ErrIncidentResolved = errors.New("incident is resolved")

// IncidentColumns are the columns of an Incident, as ScanIncident reads them.
const IncidentColumns = `id, schedule, kind, open, count, first_at, last_at, opened_at, notified_at, reminders, acked_at, acked_by, resolved_at`

// ScanIncident reads a row of IncidentColumns.
func ScanIncident(r Row) (Incident, error) { return scanIncident(r) }

// ScanOpenIncident reads IncidentColumns, then whether a notification is
// under way.
func ScanOpenIncident(r Row) (Incident, error) {
	var notifying bool
	in, err := scanIncident(r, &notifying)
	in.Notifying = notifying
	return in, err
}

func scanIncident(r Row, extra ...any) (Incident, error) {
	var in Incident
	var first, last, opened, notified, acked, resolved Time
	dest := append([]any{&in.ID, &in.Schedule, &in.Kind, &in.Open, &in.Count, &first, &last, &opened, &notified,
		&in.Reminders, &acked, &in.AckedBy, &resolved}, extra...)
	if err := r.Scan(dest...); err != nil {
		return in, err
	}
	in.FirstAt, in.LastAt, in.OpenedAt, in.NotifiedAt = first.Time, last.Time, opened.Time, notified.Time
	in.AckedAt, in.ResolvedAt = acked.Time, resolved.Time
	return in, nil
}

// ScanSilence reads schedule, until_at, silenced_by, silenced_at.
func ScanSilence(r Row) (Silence, error) {
	var s Silence
	var until, at Time
	err := r.Scan(&s.Schedule, &until, &s.By, &at)
	s.Until, s.At = until.Time, at.Time
	return s, err
}

// IncidentStatements are the incidents' SQL texts, in the engine's dialect,
// with the arguments and columns their comments name.
type IncidentStatements struct {
	// CountIncident opens the schedule's incident of kind, or counts an
	// occurrence on the open one: schedule, kind, at, now; RETURNING
	// IncidentColumns (a count of 1 is a new incident).
	CountIncident string
	TagAlarm      string // incident id, alarm id
	// Remind compares and sets a reminder: now, id, reminders; RETURNING
	// IncidentColumns of an open unacknowledged incident.
	Remind string
	// Resolve resolves a schedule's open incidents whose last occurrence
	// is not after a success and whose notifications ended: now, schedule,
	// success; RETURNING IncidentColumns.
	Resolve string
	Waiting string // schedule, success: count of those left open by Resolve
	// Silenced reads a schedule's silence in force: schedule, now: until.
	Silenced string
	// Acknowledge: now, by, id; RETURNING IncidentColumns of an open
	// incident not yet acknowledged.
	Acknowledge   string
	IncidentByID  string // id: IncidentColumns
	OpenIncidents string // limit: IncidentColumns, notifying; oldest first
	// IncidentsAll and IncidentsOf list incidents, open first, then newest
	// first: [schedule,] limit.
	IncidentsAll, IncidentsOf string
	SetSilence                string // schedule, until, by, now
	Unsilence                 string // schedule
	Silences                  string // now: schedule, until, by, at of silences in force
	PurgeIncidents            string // before, limit: resolved incidents
}

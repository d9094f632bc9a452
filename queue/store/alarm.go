package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// AlarmKind says what an alarm reports; the store decides nothing from it but
// Open.
type AlarmKind string

// Alarm kinds.
const (
	AlarmLate      AlarmKind = "late"      // an instant's run had not started within its start_within
	AlarmMissed    AlarmKind = "missed"    // an instant's run had not succeeded within its deadline
	AlarmDead      AlarmKind = "dead"      // a job of the schedule went dead
	AlarmMisfire   AlarmKind = "misfire"   // runs were skipped by the catch-up (misfire) rule
	AlarmRecovered AlarmKind = "recovered" // a run succeeded after a late, missed or dead alarm
	// AlarmUpstream: a schedule with after was skipped for an instant
	// because its upstream's jobs did not all succeed (SkipUpstreamFailed).
	AlarmUpstream AlarmKind = "upstream"
)

// NotifyKeyPrefix starts every notification job's dedup key (see NotifyKey);
// such a job is told by its AlarmKey.
const NotifyKeyPrefix = "alarm:"

// AlarmKey returns an alarm's unique key: schedule, item, instant (Unix ms,
// or "run:" and the job id for a manual run) and kind, joined by "|".
func AlarmKey(schedule, item string, at time.Time, jobID int64, kind AlarmKind) string {
	instant := "run:" + strconv.FormatInt(jobID, 10)
	if !at.IsZero() {
		instant = strconv.FormatInt(at.UnixMilli(), 10)
	}
	return schedule + "|" + item + "|" + instant + "|" + string(kind)
}

// NotifyKey returns the dedup key of alarmKey's notification for task.
func NotifyKey(alarmKey, task string) string {
	return NotifyKeyPrefix + alarmKey + "|" + task
}

// NewAlarm is an alarm to raise (see RaiseAlarms).
type NewAlarm struct {
	Key         string // AlarmKey of the fields below; filled in when empty
	Schedule    string
	Item        string
	ScheduledAt time.Time // the instant; zero for a manual run's job
	Kind        AlarmKind
	JobID       int64  // the job concerned; 0 when none (misfire)
	Error       string // the job's last error, if any
	// At is when it happened (a job's death, a limit passed, a skip); an
	// incident's first and last times. Zero means now.
	At     time.Time
	Detail json.RawMessage // what the alarm says, its notifications' payload; empty means {}
	// Notify are the notification jobs enqueued with a new alarm, its key
	// as their AlarmKey.
	Notify []NewJob
	// Resolves are the ids of open alarms it closes (a recovery closes
	// those it follows), new or not.
	Resolves []int64
}

// Alarm is a stored alarm.
type Alarm struct {
	ID          int64
	Key         string
	Schedule    string
	Item        string
	ScheduledAt time.Time // zero for a manual run's job
	Kind        AlarmKind
	JobID       int64
	Error       string
	Detail      json.RawMessage
	Open        bool // late, missed or dead, and not yet closed by a recovery
	RaisedAt    time.Time
}

// OpenAlarm is an open alarm with its job as it stands now.
type OpenAlarm struct {
	Alarm
	JobState      State // empty when the job was purged (done)
	JobFinishedAt time.Time
	// Notifying is true while a notification job has not ended: the
	// recovery waits, so a receiver never gets it before the alarm.
	Notifying bool
}

// AlarmMark is how far a schedule's alarms were evaluated: instants up to
// Late for late starts and Missed for deadlines, misfire skips up to Misfire,
// dead jobs up to Dead. A schedule with after has no instants or misfires
// of its own: its Misfire is how far its upstream-failed skips were read
// by the time they were recorded. Marks only move forward.
type AlarmMark struct {
	Schedule string
	Late     time.Time
	Missed   time.Time
	Misfire  time.Time
	Dead     time.Time
}

// AlarmBatch is one transaction of the alarms' evaluation.
type AlarmBatch struct {
	Alarms []NewAlarm
	Marks  []AlarmMark
	// Reminders are the incidents' reminders due.
	Reminders []Reminder
	// Successes are schedules' newest successes: each resolves the
	// schedule's open incidents whose last occurrence is not newer.
	Successes map[string]time.Time
	// NoticeFunc returns the notification jobs of an incident's notice
	// (type, payload, priority, attempts, version; the key is set); nil
	// sends none. It is called in the transaction, maybe more than once.
	NoticeFunc func(Notice) ([]NewJob, error)
}

// InstantJob is an instant's job as the alarms' evaluation reads it.
type InstantJob struct {
	*Job
	FirstStartedAt time.Time // when its first attempt started, or zero
}

// MaxAlarmRows bounds the rows of one read of the alarms' evaluation.
const MaxAlarmRows = 10000

// PrepareAlarms checks alarms and fills keys, details and notification
// defaults at now.
func PrepareAlarms(alarms []NewAlarm, now time.Time) ([]NewAlarm, error) {
	out := make([]NewAlarm, len(alarms))
	for i, a := range alarms {
		switch a.Kind {
		case AlarmLate, AlarmMissed, AlarmDead, AlarmMisfire, AlarmRecovered, AlarmUpstream:
		default:
			return nil, fmt.Errorf("raise alarm %d: kind %q", i, a.Kind)
		}
		if a.Schedule == "" {
			return nil, errors.New("raise alarm: empty schedule")
		}
		if a.ScheduledAt.IsZero() && a.JobID == 0 {
			return nil, fmt.Errorf("raise alarm of %s: neither instant nor job", a.Schedule)
		}
		if a.Key == "" {
			a.Key = AlarmKey(a.Schedule, a.Item, a.ScheduledAt, a.JobID, a.Kind)
		}
		if len(a.Detail) == 0 {
			a.Detail = json.RawMessage("{}")
		} else if err := CheckPayload(a.Detail); err != nil {
			return nil, fmt.Errorf("raise alarm %s: detail: %w", a.Key, err)
		}
		jobs, err := PrepareJobs(a.Notify, now)
		if err != nil {
			return nil, fmt.Errorf("raise alarm %s: %w", a.Key, err)
		}
		for k := range jobs {
			jobs[k].AlarmKey = a.Key
		}
		a.Notify = jobs
		out[i] = a
	}
	return out, nil
}

// OpensAlarm reports whether kind k stays open until a recovery closes it.
func OpensAlarm(k AlarmKind) bool {
	return k == AlarmLate || k == AlarmMissed || k == AlarmDead
}

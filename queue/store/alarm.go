package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// AlarmKind says what an alarm reports. The store keeps the kind opaque
// but for Open: it decides nothing from it.
type AlarmKind string

// Alarm kinds.
const (
	AlarmLate      AlarmKind = "late"      // an instant's run had not started within its start_within
	AlarmMissed    AlarmKind = "missed"    // an instant's run had not succeeded within its deadline
	AlarmDead      AlarmKind = "dead"      // a job of the schedule went dead
	AlarmMisfire   AlarmKind = "misfire"   // runs were skipped by the catch-up (misfire) rule
	AlarmRecovered AlarmKind = "recovered" // a run succeeded after a late, missed or dead alarm
)

// NotifyKeyPrefix starts the dedup key of every notification job: the job
// that hands an alarm to a notify task (see NotifyKey). What tells a
// notification job from others is its AlarmKey.
const NotifyKeyPrefix = "alarm:"

// AlarmKey returns the unique key of an alarm: the schedule, the fan-out
// item, the instant (Unix milliseconds) and the kind, separated by "|".
// The alarm of a job that stands for no instant (a manual run) has
// "run:" and the job's id in place of the instant. At most one alarm with
// a given key is ever stored.
func AlarmKey(schedule, item string, at time.Time, jobID int64, kind AlarmKind) string {
	instant := "run:" + strconv.FormatInt(jobID, 10)
	if !at.IsZero() {
		instant = strconv.FormatInt(at.UnixMilli(), 10)
	}
	return schedule + "|" + item + "|" + instant + "|" + string(kind)
}

// NotifyKey returns the dedup key of the notification job of the alarm
// with key alarmKey for task: NotifyKeyPrefix, the alarm's key, "|" and
// the task.
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
	// Detail is what the alarm says, kept with it (the payload of its
	// notifications). Empty means {}.
	Detail json.RawMessage
	// Notify are the notification jobs enqueued with the alarm, in its
	// transaction, only when the alarm is new. Their AlarmKey is the
	// alarm's key.
	Notify []NewJob
	// Resolves are the ids of open alarms this one closes (a recovered
	// alarm closes the alarms it follows), whether it is new or not.
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
	// Open is true for a late, missed or dead alarm no recovered alarm
	// has closed yet.
	Open     bool
	RaisedAt time.Time
}

// OpenAlarm is an open alarm with the job it concerns as it stands now.
type OpenAlarm struct {
	Alarm
	// JobState is the job's state; empty when the job no longer exists
	// (only a done job is purged).
	JobState      State
	JobFinishedAt time.Time
	// Notifying is true while a notification job of the alarm has not
	// ended (it is pending, retrying or running): its recovery waits, so
	// that a receiver never gets the recovery before the alarm.
	Notifying bool
}

// AlarmMark is how far a schedule's alarms were evaluated: the instants up
// to Late were judged for late starts, up to Missed for missed deadlines,
// the misfire skips up to Misfire, and the dead jobs that finished up to
// Dead. Marks only move forward.
type AlarmMark struct {
	Schedule string
	Late     time.Time
	Missed   time.Time
	Misfire  time.Time
	Dead     time.Time
}

// AlarmBatch is one transaction of the alarms' evaluation: the alarms to
// raise and the marks to move.
type AlarmBatch struct {
	Alarms []NewAlarm
	Marks  []AlarmMark
}

// InstantJob is a job of an instant, as the alarms' evaluation reads it.
type InstantJob struct {
	*Job
	// FirstStartedAt is when the job's first attempt started; zero when
	// it never started.
	FirstStartedAt time.Time
}

// MaxAlarmRows bounds the rows of one read of the alarms' evaluation.
const MaxAlarmRows = 10000

// PrepareAlarms checks alarms and fills their keys and details, and the
// defaults of their notification jobs at now.
func PrepareAlarms(alarms []NewAlarm, now time.Time) ([]NewAlarm, error) {
	out := make([]NewAlarm, len(alarms))
	for i, a := range alarms {
		switch a.Kind {
		case AlarmLate, AlarmMissed, AlarmDead, AlarmMisfire, AlarmRecovered:
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

// OpensAlarm reports whether an alarm of kind k stays open until a
// recovered alarm closes it.
func OpensAlarm(k AlarmKind) bool {
	return k == AlarmLate || k == AlarmMissed || k == AlarmDead
}

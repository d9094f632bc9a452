-- Alarms: one row per alarm raised, under a unique key (schedule, item,
-- instant, kind; see store.AlarmKey), so that an alarm is raised once
-- however many processes evaluate it. The row is inserted with ON CONFLICT
-- DO NOTHING in the transaction that enqueues its notification jobs, which
-- happens only when the row was new. job_id has no foreign key: a job may be
-- purged before its alarm. open marks a late, missed or dead alarm that no
-- recovered alarm has closed yet.
CREATE TABLE alarms (
	id           INTEGER PRIMARY KEY,
	key          TEXT    NOT NULL UNIQUE,
	schedule     TEXT    NOT NULL,
	item         TEXT    NOT NULL,
	scheduled_at INTEGER,
	kind         TEXT    NOT NULL CHECK (kind IN ('late', 'missed', 'dead', 'misfire', 'recovered')),
	job_id       INTEGER NOT NULL DEFAULT 0,
	error        TEXT    NOT NULL DEFAULT '',
	detail       TEXT    NOT NULL DEFAULT '{}',
	open         INTEGER NOT NULL CHECK (open IN (0, 1)),
	raised_at    INTEGER NOT NULL
) STRICT;
-- The open alarms, read at every pass of the beat for their recovery: the
-- index holds a row only while its alarm is open.
CREATE INDEX alarms_open ON alarms (id) WHERE open = 1;
-- A schedule's alarms newest first.
CREATE INDEX alarms_schedule ON alarms (schedule, id);

-- Alarm marks: per schedule, how far its alarms were evaluated. They move
-- in the transaction of the alarms they raise, so that a restarted daemon
-- goes on from there and judges the instants its downtime passed.
CREATE TABLE alarm_marks (
	schedule   TEXT    PRIMARY KEY,
	late_at    INTEGER NOT NULL,
	missed_at  INTEGER NOT NULL,
	misfire_at INTEGER NOT NULL,
	dead_at    INTEGER NOT NULL,
	updated_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

-- The schedules' dead jobs in the order they went dead, for the dead
-- alarms: one range per pass for every schedule; the index holds dead jobs
-- only.
CREATE INDEX jobs_dead_finished ON jobs (finished_at) WHERE state = 'dead' AND schedule IS NOT NULL;

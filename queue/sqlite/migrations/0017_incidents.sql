-- Incidents: the alarms of one schedule and kind grouped while open. The
-- first occurrence opens one and notifies; later ones count on it; the
-- schedule's next success resolves it and notifies once. At most one is
-- open per schedule and kind (incidents_open), so that nodes raising the
-- same kind at once count on one row: an occurrence is counted in the
-- transaction that inserts its alarm row, under the alarm's unique key.
-- notified_at and reminders are the last notice and how many reminders
-- followed the first, compared and set by the node that sends the next.
CREATE TABLE incidents (
	id          INTEGER PRIMARY KEY,
	schedule    TEXT    NOT NULL,
	kind        TEXT    NOT NULL CHECK (kind IN ('late', 'missed', 'dead', 'misfire')),
	open        INTEGER NOT NULL CHECK (open IN (0, 1)),
	count       INTEGER NOT NULL CHECK (count > 0),
	first_at    INTEGER NOT NULL,
	last_at     INTEGER NOT NULL,
	opened_at   INTEGER NOT NULL,
	notified_at INTEGER NOT NULL,
	reminders   INTEGER NOT NULL DEFAULT 0,
	acked_at    INTEGER,
	acked_by    TEXT    NOT NULL DEFAULT '',
	resolved_at INTEGER
) STRICT;
CREATE UNIQUE INDEX incidents_open ON incidents (schedule, kind) WHERE open = 1;
-- A schedule's incidents newest first.
CREATE INDEX incidents_schedule ON incidents (schedule, id);
-- The incident an alarm was counted on; NULL for recoveries and for the
-- alarms raised before incidents.
ALTER TABLE alarms ADD COLUMN incident_id INTEGER;

-- Silences: a schedule whose notifications are suppressed until until_at.
CREATE TABLE silences (
	schedule    TEXT    PRIMARY KEY,
	until_at    INTEGER NOT NULL,
	silenced_by TEXT    NOT NULL,
	silenced_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

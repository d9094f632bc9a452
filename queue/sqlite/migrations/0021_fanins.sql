-- Fan-ins: a set of member jobs and one job (then) enqueued once every
-- member has ended. ended and done count the members in a terminal state
-- and in done; each transaction that moves a member into or out of a
-- terminal state adds its moves here and, when ended reaches expected,
-- inserts the job under its unique key in the same transaction (see
-- store.SettleFanIns). then_job is the job to enqueue, as JSON; type, schedule,
-- item and scheduled_at repeat its fields for the views.
CREATE TABLE fanins (
	id           INTEGER PRIMARY KEY,
	key          TEXT    NOT NULL UNIQUE,
	require      TEXT    NOT NULL CHECK (require IN ('ended', 'done')),
	state        TEXT    NOT NULL DEFAULT 'waiting' CHECK (state IN ('waiting', 'fired', 'skipped')),
	expected     INTEGER NOT NULL DEFAULT 0 CHECK (expected >= 0),
	ended        INTEGER NOT NULL DEFAULT 0,
	done         INTEGER NOT NULL DEFAULT 0,
	job_id       INTEGER,
	then_job     TEXT    NOT NULL,
	type         TEXT    NOT NULL,
	schedule     TEXT,
	item         TEXT    NOT NULL DEFAULT '',
	scheduled_at INTEGER,
	created_at   INTEGER NOT NULL,
	updated_at   INTEGER NOT NULL
) STRICT;
-- A downstream schedule's fan-ins newest first (-status, -next, dashboard).
CREATE INDEX fanins_schedule ON fanins (schedule, id) WHERE schedule IS NOT NULL;

-- The fan-in a job is a member of; NULL for the others, which the finish
-- path passes over with a NULL check.
ALTER TABLE jobs ADD COLUMN fanin_id INTEGER;
-- A fan-in's members, read once when it fires.
CREATE INDEX jobs_fanin ON jobs (fanin_id) WHERE fanin_id IS NOT NULL;

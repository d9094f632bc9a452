-- Jobs: one row per unit of work. Instants are Unix milliseconds (UTC).
CREATE TABLE jobs (
	id           INTEGER PRIMARY KEY,
	key          TEXT    NOT NULL UNIQUE,
	type         TEXT    NOT NULL,
	payload      TEXT    NOT NULL DEFAULT '{}',
	state        TEXT    NOT NULL CHECK (state IN ('pending', 'running', 'done', 'dead', 'cancelled')),
	attempt      INTEGER NOT NULL DEFAULT 0 CHECK (attempt >= 0),
	max_attempts INTEGER NOT NULL CHECK (max_attempts >= 1),
	priority     INTEGER NOT NULL DEFAULT 0,
	run_at       INTEGER NOT NULL,
	schedule     TEXT,
	item         TEXT    NOT NULL DEFAULT '',
	scheduled_at INTEGER,
	lease_until  INTEGER,
	owner        TEXT,
	last_error   TEXT    NOT NULL DEFAULT '',
	created_at   INTEGER NOT NULL,
	started_at   INTEGER,
	finished_at  INTEGER,
	CHECK ((state = 'running') = (owner IS NOT NULL AND lease_until IS NOT NULL))
) STRICT;

-- Claim order: the walk of this index is the claim order, so a claim reads
-- only the rows it takes (plus future ones of higher priority). It also
-- answers when the next pending job becomes ready (a skip-scan by priority).
CREATE INDEX jobs_ready ON jobs (priority DESC, run_at, id) WHERE state = 'pending';
-- Expired leases, for reclaim.
CREATE INDEX jobs_lease ON jobs (lease_until) WHERE state = 'running';
-- Purge of old done jobs.
CREATE INDEX jobs_done ON jobs (finished_at) WHERE state = 'done';
CREATE INDEX jobs_dead ON jobs (id) WHERE state = 'dead';
-- Overlap checks: is a run of this schedule item still queued or running?
CREATE INDEX jobs_active_series ON jobs (schedule, item) WHERE state IN ('pending', 'running') AND schedule IS NOT NULL;
-- Last run per schedule.
CREATE INDEX jobs_schedule_at ON jobs (schedule, scheduled_at) WHERE schedule IS NOT NULL;

-- Attempts: one row per finished (or abandoned) run of a job.
CREATE TABLE attempts (
	id          INTEGER PRIMARY KEY,
	job_id      INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
	attempt     INTEGER NOT NULL,
	worker      TEXT    NOT NULL,
	started_at  INTEGER NOT NULL,
	finished_at INTEGER NOT NULL,
	outcome     TEXT    NOT NULL CHECK (outcome IN ('done', 'retry', 'dead', 'released', 'lease_expired', 'stale')),
	error       TEXT    NOT NULL DEFAULT '',
	output      TEXT    NOT NULL DEFAULT ''
) STRICT;
CREATE INDEX attempts_job ON attempts (job_id, attempt);

-- Cursors: per schedule, the last instant materialised or deliberately passed.
CREATE TABLE cursors (
	schedule   TEXT    PRIMARY KEY,
	at         INTEGER NOT NULL,
	paused     INTEGER NOT NULL DEFAULT 0 CHECK (paused IN (0, 1)),
	paused_at  INTEGER,
	updated_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

-- Skips: instants of a schedule that were deliberately not run, and why.
CREATE TABLE skips (
	schedule     TEXT    NOT NULL,
	item         TEXT    NOT NULL,
	scheduled_at INTEGER NOT NULL,
	reason       TEXT    NOT NULL,
	recorded_at  INTEGER NOT NULL,
	PRIMARY KEY (schedule, item, scheduled_at)
) STRICT, WITHOUT ROWID;
CREATE INDEX skips_recorded ON skips (recorded_at);

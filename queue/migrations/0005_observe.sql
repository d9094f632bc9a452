-- Daemons: one row per running daemon process, refreshed every few seconds
-- (last_seen) and deleted at a clean stop. A crashed daemon's row stays with
-- its last heartbeat, so an operator sees when a daemon was last alive.
CREATE TABLE daemons (
	owner      TEXT    PRIMARY KEY,
	pid        INTEGER NOT NULL,
	host       TEXT    NOT NULL,
	version    TEXT    NOT NULL,
	started_at INTEGER NOT NULL,
	last_seen  INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

-- Job lists newest first by state use the partial index of their state;
-- cancelled jobs, rare, get one here. Lists by type or schedule have no
-- index of their own (see queue.ListScanBound).
CREATE INDEX jobs_cancelled ON jobs (id) WHERE state = 'cancelled';

-- Skip lists newest first, of one schedule or of all.
CREATE INDEX skips_schedule_at ON skips (schedule, scheduled_at);
CREATE INDEX skips_at ON skips (scheduled_at);

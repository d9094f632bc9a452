-- Cancel requests. -cancel of a running job records the request in the job
-- row; the pool holding the lease sees it and stops the attempt. The request
-- outlives that pool: a lease reclaimed from a job whose cancel was requested
-- ends it cancelled, never pending. cancelled_by says who asked.
ALTER TABLE jobs ADD COLUMN cancel_requested_at INTEGER;
ALTER TABLE jobs ADD COLUMN cancelled_by TEXT;
-- A pool looks here for the requests on its running jobs at every commit of
-- another connection: the index holds a row only from the request until the
-- pool records the job's end.
CREATE INDEX jobs_cancel_requested ON jobs (owner) WHERE state = 'running' AND cancel_requested_at IS NOT NULL;

-- An attempt stopped by a cancel has the outcome 'cancelled'. SQLite cannot
-- change a CHECK constraint in place, so the table is rebuilt.
CREATE TABLE attempts_new (
	id          INTEGER PRIMARY KEY,
	job_id      INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
	attempt     INTEGER NOT NULL,
	worker      TEXT    NOT NULL,
	started_at  INTEGER NOT NULL,
	finished_at INTEGER NOT NULL,
	outcome     TEXT    NOT NULL CHECK (outcome IN ('done', 'retry', 'dead', 'released', 'lease_expired', 'stale', 'cancelled')),
	error       TEXT    NOT NULL DEFAULT '',
	output      TEXT    NOT NULL DEFAULT ''
) STRICT;
INSERT INTO attempts_new (id, job_id, attempt, worker, started_at, finished_at, outcome, error, output)
	SELECT id, job_id, attempt, worker, started_at, finished_at, outcome, error, output FROM attempts;
DROP TABLE attempts;
ALTER TABLE attempts_new RENAME TO attempts;
CREATE INDEX attempts_job ON attempts (job_id, attempt);

-- Discarded jobs: an operator ends a dead job as 'discarded' when it is not
-- to run again. The job is kept for the record, with when and by whom
-- (discarded_at, discarded_by); it counts as discarded, not dead, and stays
-- until a retry by id takes the discard back. Like dead and cancelled jobs,
-- the purge keeps it.
ALTER TABLE jobs ADD COLUMN discarded_at INTEGER;
ALTER TABLE jobs ADD COLUMN discarded_by TEXT;

-- The states' CHECK constraints of jobs and job_counts gain 'discarded'.
-- SQLite cannot change a CHECK constraint in place, and a rebuild of jobs
-- would copy every row and, with foreign keys on, cascade the drop of the
-- old table to the attempts. A constraint that only admits more values
-- changes nothing on disk: every row meets it. So the tables' definitions
-- are edited in sqlite_schema, the change SQLite's documentation gives for
-- constraints (https://sqlite.org/lang_altertable.html#otheralter), in
-- constant time whatever the number of jobs. The index created after it
-- bumps the schema cookie, so other connections read the new definitions;
-- RESET makes this one read them again.
PRAGMA writable_schema = ON;
UPDATE sqlite_schema SET sql = replace(sql, '''dead'', ''cancelled'')', '''dead'', ''cancelled'', ''discarded'')')
WHERE type = 'table' AND name IN ('jobs', 'job_counts');
CREATE INDEX jobs_discarded ON jobs (id) WHERE state = 'discarded';
PRAGMA writable_schema = RESET;

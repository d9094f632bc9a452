-- Discarded jobs: an operator ends a dead job as 'discarded' when it is not
-- to run again. The job is kept for the record, with when and by whom
-- (discarded_at, discarded_by); it counts as discarded, not dead, and stays
-- until a retry by id takes the discard back. Like dead and cancelled jobs,
-- the purge keeps it.
--
-- The new columns and the new state are written into the tables'
-- definitions in sqlite_schema, the change SQLite's documentation gives for
-- what leaves the rows on disk as they are
-- (https://sqlite.org/lang_altertable.html#otheralter), so the migration
-- takes the same time however many jobs there are. Both leave every row as
-- it is: a row without a trailing column reads it as NULL, as after ALTER
-- TABLE ADD COLUMN, and a CHECK that only admits more values holds for every
-- row. ALTER TABLE ADD COLUMN on a STRICT table would read every row to check
-- it; a rebuild of jobs would copy every row and, with foreign keys on,
-- cascade the drop of the old table to the attempts.
PRAGMA writable_schema = ON;
-- The columns go after the last one, before the table's constraint, where
-- ADD COLUMN puts them.
UPDATE sqlite_schema
SET sql = replace(replace(sql, '''dead'', ''cancelled'')', '''dead'', ''cancelled'', ''discarded'')'),
	'CHECK ((state = ''running'')', 'discarded_at INTEGER, discarded_by TEXT, CHECK ((state = ''running'')')
WHERE type = 'table' AND name = 'jobs';
UPDATE sqlite_schema
SET sql = replace(sql, '''dead'', ''cancelled'')', '''dead'', ''cancelled'', ''discarded'')')
WHERE type = 'table' AND name = 'job_counts';
-- The index bumps the schema's version, so other connections read the new
-- definitions; RESET makes this one read them again.
CREATE INDEX jobs_discarded ON jobs (id) WHERE state = 'discarded';
PRAGMA writable_schema = RESET;
-- Fails, and so rolls the migration back, unless the columns are there.
SELECT discarded_at, discarded_by FROM jobs LIMIT 0;

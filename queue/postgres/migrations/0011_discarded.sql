-- Discarded jobs: an operator ends a dead job as 'discarded' when it is not
-- to run again. The job is kept for the record, with when and by whom
-- (discarded_at, discarded_by); it counts as discarded, not dead, and stays
-- until a retry by id takes the discard back. Like dead and cancelled jobs,
-- the purge keeps it. Nullable columns: adding them rewrites no row.
ALTER TABLE jobs ADD COLUMN discarded_at timestamptz;
ALTER TABLE jobs ADD COLUMN discarded_by text;

-- The states' CHECK constraints gain 'discarded'. The new constraints are
-- added NOT VALID, so no row is read under the table's lock: every row meets
-- them, since they only admit more than the old ones did.
ALTER TABLE jobs DROP CONSTRAINT jobs_state_check,
	ADD CONSTRAINT jobs_state_check CHECK (state IN ('pending', 'running', 'done', 'dead', 'cancelled', 'discarded')) NOT VALID;
ALTER TABLE job_counts DROP CONSTRAINT job_counts_state_check,
	ADD CONSTRAINT job_counts_state_check CHECK (state IN ('pending', 'running', 'done', 'dead', 'cancelled', 'discarded')) NOT VALID;

-- Lists of discarded jobs, newest first.
CREATE INDEX jobs_discarded ON jobs (id) WHERE state = 'discarded';

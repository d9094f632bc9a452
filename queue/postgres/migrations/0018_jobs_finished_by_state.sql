-- One index on the ended jobs, written once per job that ends: by state,
-- then by when they ended, with when their last attempt became due and
-- started. The charts count a window of each end state by an index-only
-- scan, and purge walks the old done jobs in it, so jobs_done, which held
-- the done jobs a second time, goes.
DROP INDEX jobs_done;
DROP INDEX jobs_finished;
CREATE INDEX jobs_finished ON jobs (state, finished_at, started_at, run_at) WHERE finished_at IS NOT NULL;

-- The ended jobs by when they ended, with when their last attempt became
-- due and started: the dashboard's charts count a window of them (runs
-- and failures, start latency, queue depth) by an index-only scan.
CREATE INDEX jobs_finished ON jobs (finished_at, state, started_at, run_at) WHERE finished_at IS NOT NULL;

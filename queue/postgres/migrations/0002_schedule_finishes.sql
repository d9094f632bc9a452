-- A schedule's newest finish of each end state, read by an index seek per
-- schedule (Store.Finishes, for the metrics). Jobs of no schedule, the bulk
-- of a busy queue, are not in it and cost it nothing.
CREATE INDEX jobs_schedule_finished ON jobs (schedule, state, finished_at)
	WHERE schedule IS NOT NULL AND finished_at IS NOT NULL;

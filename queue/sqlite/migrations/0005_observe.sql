-- Job lists newest first by state use the partial index of their state;
-- cancelled jobs, rare, get one here. Lists by type or schedule have no
-- index of their own (see queue.ListScanBound).
CREATE INDEX jobs_cancelled ON jobs (id) WHERE state = 'cancelled';

-- Skip lists newest first, of one schedule or of all.
CREATE INDEX skips_schedule_at ON skips (schedule, scheduled_at);
CREATE INDEX skips_at ON skips (scheduled_at);

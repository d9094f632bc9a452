-- When an operator last retried a job (Retry, RetryAllDead), in Unix
-- milliseconds; NULL until one does. A job's give_up_after budget counts
-- from it when it is later than the job's instant or enqueue, so that a
-- job which gave up can be run again by hand.
ALTER TABLE jobs ADD COLUMN retried_at INTEGER;

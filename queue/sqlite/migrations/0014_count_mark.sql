-- Inserted jobs are counted without a trigger. job_counts_mark holds the
-- largest job id whose insert job_counts holds; the jobs past it count as
-- pending of their type on top of job_counts (the view job_counts_now),
-- whatever their state is now, since every job is inserted pending and
-- every later change of its state is in job_counts already. An autocommit
-- INSERT (a single unsynced enqueue) so needs no other write: the trigger
-- that counted it cost such an enqueue a third of its rate, and every row
-- of a tick its invocation. A transaction whose jobs, with those past the
-- mark, would be many counts them all and moves the mark; so does a purge
-- before it deletes any (see txn.writeCounts and countPastMark).
DROP TRIGGER jobs_counted;
DROP TABLE job_counts_paused;

CREATE TABLE job_counts_mark (
	id      INTEGER PRIMARY KEY CHECK (id = 1),
	last_id INTEGER NOT NULL
) STRICT;

INSERT INTO job_counts_mark (id, last_id) SELECT 1, coalesce(max(id), 0) FROM jobs;

CREATE VIEW job_counts_now (type, state, n) AS
SELECT type, state, sum(n) FROM (
	SELECT type, state, n FROM job_counts
	UNION ALL
	SELECT type, 'pending', count(*) FROM jobs
	WHERE id > (SELECT last_id FROM job_counts_mark)
	GROUP BY type
) GROUP BY type, state;

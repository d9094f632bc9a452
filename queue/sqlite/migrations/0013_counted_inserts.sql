-- Jobs inserted in a transaction are counted by the transaction, with its
-- other count changes, once before it commits (see txn.counts): an upsert
-- of job_counts per inserted row, by the trigger, was a sixth of a tick of
-- 10,000 schedules. The trigger counts only while job_counts_paused is
-- empty: an autocommit INSERT (a single unsynced enqueue) has no
-- transaction to count it. A transaction that inserts jobs adds the row
-- before its first insert and deletes it before it commits, so that no
-- other connection ever sees it.
CREATE TABLE job_counts_paused (
	id INTEGER PRIMARY KEY CHECK (id = 1)
) STRICT;

DROP TRIGGER jobs_counted;

CREATE TRIGGER jobs_counted AFTER INSERT ON jobs
WHEN NOT EXISTS (SELECT 1 FROM job_counts_paused)
BEGIN
	INSERT INTO job_counts (type, state, n) VALUES (new.type, new.state, 1)
	ON CONFLICT (type, state) DO UPDATE SET n = n + 1;
END;

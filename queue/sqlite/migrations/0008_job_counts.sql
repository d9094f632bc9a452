-- The jobs by type and state, kept beside them so that Stats (-status and
-- a metrics scrape) reads a few rows instead of counting every job. An
-- insert counts itself (the trigger: a single enqueue is one autocommit
-- statement); every statement that changes a job's state or deletes jobs
-- adds its change to the transaction's deltas, which the transaction
-- writes once, aggregated, before it commits (see txn.counts).
CREATE TABLE job_counts (
	type  TEXT    NOT NULL,
	state TEXT    NOT NULL CHECK (state IN ('pending', 'running', 'done', 'dead', 'cancelled')),
	n     INTEGER NOT NULL,
	PRIMARY KEY (type, state)
) STRICT, WITHOUT ROWID;

INSERT INTO job_counts (type, state, n) SELECT type, state, count(*) FROM jobs GROUP BY type, state;

CREATE TRIGGER jobs_counted AFTER INSERT ON jobs BEGIN
	INSERT INTO job_counts (type, state, n) VALUES (new.type, new.state, 1)
	ON CONFLICT (type, state) DO UPDATE SET n = n + 1;
END;

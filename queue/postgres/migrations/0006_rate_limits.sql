-- Rate limits: the SQLite engine's rate_limits in PostgreSQL's types (see
-- it). A claim locks the rows of the buckets it reads, in (type, key) order,
-- so that pools on several nodes take starts from a bucket one at a time.
CREATE TABLE rate_limits (
	type text        COLLATE "C" NOT NULL,
	key  text        COLLATE "C" NOT NULL,
	tat  timestamptz NOT NULL,
	PRIMARY KEY (type, key)
) WITH (fillfactor = 70);

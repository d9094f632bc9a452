-- Rate limits: one bucket per rate-limited type, or per type and key, that
-- claims read and move in their transaction, so that a limit holds across
-- every process on the file. tat is the bucket's theoretical arrival time
-- (Unix milliseconds) of the generic cell rate algorithm (see
-- store.RateLimit); a row whose tat is past is a full bucket, the same as no
-- row, and the purge deletes it.
CREATE TABLE rate_limits (
	type TEXT    NOT NULL,
	key  TEXT    NOT NULL,
	tat  INTEGER NOT NULL,
	PRIMARY KEY (type, key)
) STRICT, WITHOUT ROWID;

-- Pools: the job types each running pool has a handler for. A pool claims
-- only those types; this table lets another process (-status) tell which
-- ready jobs no running pool can run. A pool writes its row at start, when
-- a handler is registered and every 30 s; it deletes it when it stops. A
-- crashed pool's row goes stale: seen_at stops moving.
CREATE TABLE pools (
	owner      TEXT    PRIMARY KEY,
	types      TEXT    NOT NULL CHECK (json_type(types) = 'array'),
	started_at INTEGER NOT NULL,
	seen_at    INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

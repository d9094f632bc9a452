-- Pools: one row per running worker pool, written by the pool itself at
-- start, when a handler is registered and every 30 s; deleted when it stops.
-- types lists the job types it has a handler for: a pool claims only those,
-- and this table lets another process (-status) tell which ready jobs no
-- running pool can run. pid, host and version describe the process, so an
-- operator can tell whether a daemon runs and which. A crashed pool's row
-- goes stale (seen_at stops moving) and is kept a week, so -status can say
-- when it was last seen.
CREATE TABLE pools (
	owner      TEXT    PRIMARY KEY,
	types      TEXT    NOT NULL CHECK (json_type(types) = 'array'),
	pid        INTEGER NOT NULL,
	host       TEXT    NOT NULL,
	version    TEXT    NOT NULL,
	started_at INTEGER NOT NULL,
	seen_at    INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

-- The configuration the daemon runs: the file's bytes as the daemon loaded
-- them at its start or its last successful reload, so that operator commands
-- can work from it while the file on disk is broken. One row, replaced at
-- each load; the queue keeps the bytes opaque and never parses them.
CREATE TABLE running_config (
	id        INTEGER PRIMARY KEY CHECK (id = 1),
	path      TEXT    NOT NULL,
	data      BLOB    NOT NULL,
	sha256    TEXT    NOT NULL,
	loaded_at INTEGER NOT NULL
) STRICT;

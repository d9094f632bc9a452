-- The configuration each daemon runs: config_sha256 is the hex SHA-256 of
-- its file, config_at when the daemon loaded it (Unix ms), so that the
-- daemons on one database can tell whether they agree on the config and
-- which of them loaded theirs last. '' and 0 for a pool that records none.
ALTER TABLE pools ADD COLUMN config_sha256 TEXT NOT NULL DEFAULT '';
ALTER TABLE pools ADD COLUMN config_at INTEGER NOT NULL DEFAULT 0;

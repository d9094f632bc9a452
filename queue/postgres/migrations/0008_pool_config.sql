-- The configuration each daemon runs: config_sha256 is the hex SHA-256 of
-- its file, config_at when the daemon loaded it, so that the daemons on
-- one database can tell whether they agree on the config and which of them
-- loaded theirs last. '' and NULL for a pool that records none. A constant
-- default and a nullable column: adding them rewrites no row.
ALTER TABLE pools ADD COLUMN config_sha256 text NOT NULL DEFAULT '';
ALTER TABLE pools ADD COLUMN config_at timestamptz;

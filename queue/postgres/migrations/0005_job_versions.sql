-- Versioned job contracts: the SQLite engine's migration 0010 in
-- PostgreSQL's types (see it for the reasons). Adding a column with a
-- constant default rewrites no row; a CHECK on it would read every row
-- under the table's exclusive lock, so version >= 1 is the enqueue's rule
-- (store.PrepareJobs) alone.
ALTER TABLE jobs ADD COLUMN version integer NOT NULL DEFAULT 1;

ALTER TABLE pools ADD COLUMN versions jsonb NOT NULL DEFAULT '{}';

CREATE INDEX jobs_versioned ON jobs (type, version) WHERE state = 'pending' AND version <> 1;

-- The growing output of running attempts: the redacted tail (at most
-- MaxOutput bytes) a pool stores every few seconds while it changes, so
-- that every node's dashboard shows it. A row is deleted in the
-- transaction that records its attempt's end; a row whose attempt no
-- longer runs (its lease was reclaimed) is hidden by the reads, replaced
-- by the next attempt's and deleted by maintenance. Rows are rewritten
-- often: leave room for HOT updates.
CREATE TABLE live_output (
	job_id     bigint      PRIMARY KEY,
	attempt    integer     NOT NULL,
	output     text        NOT NULL,
	updated_at timestamptz NOT NULL
) WITH (fillfactor = 50);
-- How many jobs each pool runs at once (its workers); 0 for a row written
-- before the column. A constant default: adding it rewrites no row.
ALTER TABLE pools ADD COLUMN workers integer NOT NULL DEFAULT 0;

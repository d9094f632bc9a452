-- The growing output of running attempts: the redacted tail (at most
-- MaxOutput bytes) a pool stores every few seconds while it changes, so
-- that any process reading the file shows it. A row is deleted in the
-- transaction that records its attempt's end; a row whose attempt no
-- longer runs (its lease was reclaimed) is hidden by the reads, replaced
-- by the next attempt's and deleted by maintenance. updated_at is Unix ms.
CREATE TABLE live_output (
	job_id     INTEGER PRIMARY KEY,
	attempt    INTEGER NOT NULL,
	output     TEXT    NOT NULL,
	updated_at INTEGER NOT NULL
) STRICT;
-- How many jobs each pool runs at once (its workers); 0 for a row written
-- before the column.
ALTER TABLE pools ADD COLUMN workers INTEGER NOT NULL DEFAULT 0;

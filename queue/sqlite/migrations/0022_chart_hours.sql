-- The charts' hours: what the jobs that ended in one hour (hour, Unix ms of
-- its start) add to the charts, as store.Base computed it from their rows
-- (groups, JSON), and the fingerprint of those rows. A cache: a reader
-- recomputes an hour whose rows' fingerprint no longer matches (a retry,
-- a purge, a late finish) and never trusts a row without checking it.
CREATE TABLE chart_hours (
	hour        INTEGER PRIMARY KEY,
	fingerprint INTEGER NOT NULL,
	groups      TEXT    NOT NULL
) STRICT;

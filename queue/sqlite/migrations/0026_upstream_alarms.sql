-- Upstream alarms: a schedule with after that is skipped for an instant
-- because its upstream's jobs did not all succeed raises an alarm of kind
-- 'upstream', grouped into incidents like the other kinds.
--
-- The kind is added to the CHECK constraints of alarms and incidents in
-- their definitions in sqlite_schema, as 0018_discarded does for the jobs'
-- states: a CHECK that only admits more values holds for every row, so no
-- row is read or copied.
PRAGMA writable_schema = ON;
UPDATE sqlite_schema
SET sql = replace(sql, '''misfire'', ''recovered'')', '''misfire'', ''recovered'', ''upstream'')')
WHERE type = 'table' AND name = 'alarms';
UPDATE sqlite_schema
SET sql = replace(sql, '''dead'', ''misfire'')', '''dead'', ''misfire'', ''upstream'')')
WHERE type = 'table' AND name = 'incidents';
-- The alarms' evaluation reads a downstream schedule's upstream failures
-- by when they were recorded. The index also bumps the schema's version,
-- so other connections read the new definitions; RESET makes this one read
-- them again.
CREATE INDEX skips_upstream_failed ON skips (schedule, recorded_at) WHERE reason = 'upstream failed';
PRAGMA writable_schema = RESET;
-- Fail, and so roll the migration back, unless both tables take the kind.
INSERT INTO alarms (key, schedule, item, kind, open, raised_at) VALUES ('', '', '', 'upstream', 0, 0);
DELETE FROM alarms WHERE key = '' AND kind = 'upstream';
INSERT INTO incidents (schedule, kind, open, count, first_at, last_at, opened_at, notified_at)
VALUES ('', 'upstream', 0, 1, 0, 0, 0, 0);
DELETE FROM incidents WHERE schedule = '' AND kind = 'upstream';

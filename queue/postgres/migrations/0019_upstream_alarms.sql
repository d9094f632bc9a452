-- Upstream alarms: a schedule with after that is skipped for an instant
-- because its upstream's jobs did not all succeed raises an alarm of kind
-- 'upstream', grouped into incidents like the other kinds. The new
-- constraints are added NOT VALID, so no row is read under the tables'
-- locks: every row meets them, since they only admit more than the old ones.
ALTER TABLE alarms DROP CONSTRAINT alarms_kind_check,
	ADD CONSTRAINT alarms_kind_check CHECK (kind IN ('late', 'missed', 'dead', 'misfire', 'recovered', 'upstream')) NOT VALID;
ALTER TABLE incidents DROP CONSTRAINT incidents_kind_check,
	ADD CONSTRAINT incidents_kind_check CHECK (kind IN ('late', 'missed', 'dead', 'misfire', 'upstream')) NOT VALID;

-- The alarms' evaluation reads a downstream schedule's upstream failures
-- by when they were recorded.
CREATE INDEX skips_upstream_failed ON skips (schedule, recorded_at) WHERE reason = 'upstream failed';

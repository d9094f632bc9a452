-- The alarm a notification job carries: the key of the alarm whose
-- notification the job hands to a notify task; NULL for every other job.
-- The jobs enqueued before the column tell it by their own key, which is
-- 'alarm:', the alarm's key, '|' and the task's name (which has no '|'):
-- they are a range of the key index, and rtrim(key, <every character of
-- key but '|'>) is the key up to its last '|'. The index holds the
-- notification jobs alone, for the open alarms' look at theirs.
ALTER TABLE jobs ADD COLUMN alarm_key TEXT;
UPDATE jobs SET alarm_key = substr(rtrim(key, replace(key, '|', '')), 7, length(rtrim(key, replace(key, '|', ''))) - 7)
WHERE key >= 'alarm:' AND key < 'alarm;' AND key GLOB 'alarm:*|*';
CREATE INDEX jobs_alarm ON jobs (alarm_key) WHERE alarm_key IS NOT NULL;

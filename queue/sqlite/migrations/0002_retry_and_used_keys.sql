-- attempt_base: attempts spent before the job was last revived by a retry
-- (0 if never). max_attempts - attempt_base is the job's own number of
-- attempts, which every retry grants anew.
ALTER TABLE jobs ADD COLUMN attempt_base INTEGER NOT NULL DEFAULT 0 CHECK (attempt_base >= 0);

-- used_keys: the keys of purged jobs that were enqueued with a key of their
-- own (schedule instants, backfills, -trigger -key, Enqueue with Key set),
-- and when each job finished. Purge moves a key here in the transaction
-- that deletes its job, and every enqueue treats a key found here as used,
-- as it does the key of a job that exists, so that purging what ran does
-- not let it run again. Keys the queue generated (job|<32 hex digits>) are
-- not kept: nothing can repeat them. Kept for ever: about the key's length
-- plus 15 bytes per purged keyed job, up to half again in pages partly
-- filled.
CREATE TABLE used_keys (
	key         TEXT    PRIMARY KEY,
	finished_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

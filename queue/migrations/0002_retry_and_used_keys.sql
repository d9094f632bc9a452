-- attempt_base: attempts spent before the job was last revived by a retry
-- (0 if never). max_attempts - attempt_base is the job's own number of
-- attempts, which every retry grants anew.
ALTER TABLE jobs ADD COLUMN attempt_base INTEGER NOT NULL DEFAULT 0 CHECK (attempt_base >= 0);

-- Versioned job contracts: a job carries the version of its payload's
-- format, and a pool claims only the versions it accepts of each type
-- (recorded in its row, so that -status can tell which ready jobs wait for
-- a pool that accepts them). Every job so far is of version 1.
ALTER TABLE jobs ADD COLUMN version INTEGER NOT NULL DEFAULT 1 CHECK (version >= 1);

-- versions maps a type of types to the versions the pool accepts, for the
-- types it takes at other versions than 1 alone: '{}' in the common case.
ALTER TABLE pools ADD COLUMN versions TEXT NOT NULL DEFAULT '{}' CHECK (json_type(versions) = 'object');

-- The pending jobs of other versions than 1: Handlers looks here first, so
-- that while every job is of version 1 it reads none to find that none
-- waits for its version. An UPDATE of a job of version 1 (a claim, a
-- completion) evaluates the condition and writes nothing here.
CREATE INDEX jobs_versioned ON jobs (type, version) WHERE state = 'pending' AND version <> 1;

-- Fan-ins: a set of member jobs and one job (then_job) enqueued once every
-- member has ended. ended and done count the members in a terminal state
-- and in done; each transaction that moves a member into or out of a
-- terminal state adds its moves here, under the row's lock, and, when ended
-- reaches expected, inserts the job under its unique key in the same
-- transaction (see store.SettleFanIns): of two transactions ending the last
-- members, the second reads the first's counts. then_job is the job to
-- enqueue, as JSON; type, schedule, item and scheduled_at repeat its fields
-- for the views.
CREATE TABLE fanins (
	id           bigserial   PRIMARY KEY,
	key          text        NOT NULL UNIQUE,
	require      text        NOT NULL CHECK (require IN ('ended', 'done')),
	state        text        NOT NULL DEFAULT 'waiting' CHECK (state IN ('waiting', 'fired', 'skipped')),
	expected     integer     NOT NULL DEFAULT 0 CHECK (expected >= 0),
	ended        integer     NOT NULL DEFAULT 0,
	done         integer     NOT NULL DEFAULT 0,
	job_id       bigint,
	then_job     text        NOT NULL,
	type         text        NOT NULL,
	schedule     text,
	item         text        NOT NULL DEFAULT '',
	scheduled_at timestamptz,
	created_at   timestamptz NOT NULL,
	updated_at   timestamptz NOT NULL
);
-- A downstream schedule's fan-ins newest first (-status, -next, dashboard).
CREATE INDEX fanins_schedule ON fanins (schedule, id) WHERE schedule IS NOT NULL;

-- The fan-in a job is a member of; NULL for the others, which the finish
-- path passes over with a NULL check. A nullable column: adding it rewrites
-- no row.
ALTER TABLE jobs ADD COLUMN fanin_id bigint;
-- A fan-in's members, read once when it fires.
CREATE INDEX jobs_fanin ON jobs (fanin_id) WHERE fanin_id IS NOT NULL;

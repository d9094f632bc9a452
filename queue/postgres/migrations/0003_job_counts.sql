-- The jobs by type and state, kept beside them so that Stats (-status and
-- a metrics scrape) reads a few rows instead of counting every job. Every
-- transaction that changes jobs' states adds its changes, aggregated, just
-- before it commits, to the rows of one slot it picks at random: nodes
-- committing at once mostly write different rows instead of queueing on
-- one, and a transaction locks its rows in (type, state) order, last, so
-- that two never wait for each other in a cycle. Stats sums the slots.
--
-- The counts start from the rows, with writes held off while they are
-- counted. Every node must run a program that keeps them from then on:
-- upgrade them all together.
CREATE TABLE job_counts (
	type  text     COLLATE "C" NOT NULL,
	state text     NOT NULL CHECK (state IN ('pending', 'running', 'done', 'dead', 'cancelled')),
	slot  smallint NOT NULL,
	n     bigint   NOT NULL,
	PRIMARY KEY (type, state, slot)
) WITH (fillfactor = 50, autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 200);

LOCK TABLE jobs IN SHARE MODE;
INSERT INTO job_counts (type, state, slot, n) SELECT type, state, 0, count(*) FROM jobs GROUP BY type, state;

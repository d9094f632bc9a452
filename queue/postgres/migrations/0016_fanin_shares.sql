-- A fan-in that shares another's members: several schedules after one
-- upstream get a fan-in each over the same jobs, whose fanin_id names the
-- first. Its sharers' counts move under the first's row lock, in the same
-- transaction (store.SettleFanIns), so every transaction locks a group in
-- one order. A nullable column: adding it rewrites no row.
ALTER TABLE fanins ADD COLUMN share_of bigint;
CREATE INDEX fanins_share_of ON fanins (share_of) WHERE share_of IS NOT NULL;

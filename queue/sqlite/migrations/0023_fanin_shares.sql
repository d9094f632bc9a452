-- A fan-in that shares another's members: several schedules after one
-- upstream get a fan-in each over the same jobs, whose fanin_id names the
-- first. The first's row is locked (on SQLite, the file's turn) before its
-- sharers' counts move with it, in the same transaction (store.SettleFanIns).
ALTER TABLE fanins ADD COLUMN share_of INTEGER;
CREATE INDEX fanins_share_of ON fanins (share_of) WHERE share_of IS NOT NULL;

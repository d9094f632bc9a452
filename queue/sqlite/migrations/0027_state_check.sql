-- A job's state is checked as a chain of comparisons rather than an IN
-- list. SQLite codes a constant IN list of more than two values in a CHECK
-- as a lookup table that it builds again for every row it checks, and it
-- checks the state of every row an INSERT or an UPDATE of the state writes:
-- each job's enqueue, claim and completion. The comparisons admit the same
-- values.
--
-- The definition is rewritten in sqlite_schema, as migration 0018 did,
-- which leaves the rows on disk as they are
-- (https://sqlite.org/lang_altertable.html#otheralter): an equivalent
-- CHECK holds for every row, so the migration takes the same time however
-- many jobs there are.
PRAGMA writable_schema = ON;
UPDATE sqlite_schema
SET sql = replace(sql, 'CHECK (state IN (''pending'', ''running'', ''done'', ''dead'', ''cancelled'', ''discarded''))',
	'CHECK (state = ''pending'' OR state = ''running'' OR state = ''done'' OR state = ''dead'' OR state = ''cancelled'' OR state = ''discarded'')')
WHERE type = 'table' AND name = 'jobs';
-- Creating a table bumps the schema's version, so other connections read
-- the new definition; RESET makes this one read it again.
CREATE TABLE schema_0027 (x);
DROP TABLE schema_0027;
PRAGMA writable_schema = RESET;

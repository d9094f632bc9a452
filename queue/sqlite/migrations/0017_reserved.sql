-- Reserved: the number of a migration of a branch not yet merged here. It
-- changes nothing; the merge replaces this file with that branch's.
SELECT 1;

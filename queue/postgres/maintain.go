package postgres

import (
	"context"
)

// purgeDoneSQL deletes a batch of old done jobs (attempts cascade), keeping
// their non-generated keys in used_keys.
const purgeDoneSQL = `WITH b AS (
	SELECT id, key, finished_at FROM jobs WHERE state = 'done' AND finished_at < $1
	ORDER BY finished_at, id LIMIT $2
	FOR UPDATE SKIP LOCKED
), k AS (
	INSERT INTO used_keys (key, finished_at)
	SELECT key, finished_at FROM b WHERE key !~ '` + generatedKey + `'
	ON CONFLICT (key) DO NOTHING
)
DELETE FROM jobs USING b WHERE jobs.id = b.id
RETURNING jobs.type`

// maintenanceLock keys, with the schema's hash, the session advisory lock
// under which one node at a time maintains a schema.
const maintenanceLock = 0x5343_4845 // "SCHE"

// lockMaintenance takes the maintenance lock on a connection of its own; ok
// is false when another node holds it.
func (s *Store) lockMaintenance(ctx context.Context) (unlock func(), ok bool, err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, false, err
	}
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, hashtext(current_schema()))`, maintenanceLock).Scan(&ok); err != nil || !ok {
		conn.Release()
		return nil, false, err
	}
	return func() {
		// A lock that cannot be released goes with its session.
		if _, err := conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1, hashtext(current_schema()))`, maintenanceLock); err != nil {
			conn.Conn().Close(context.WithoutCancel(ctx))
		}
		conn.Release()
	}, true, nil
}

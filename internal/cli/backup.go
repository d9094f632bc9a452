package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
)

// backupTo is -backup: a consistent copy of a SQLite database, to a new file.
func (a *app) backupTo(ctx context.Context) error {
	if isDSN(a.db) {
		return usagef("-backup copies a SQLite file; database %s is PostgreSQL: back it up with pg_dump (pg_dump -Fc -f scheduler.dump \"$%s\")", a.dbPath, envDB)
	}
	if _, err := os.Stat(a.o.backup); err == nil {
		return usagef("-backup %s: file exists", a.o.backup)
	}
	q, err := a.openQueue(ctx, false)
	if err != nil {
		return err
	}
	defer q.Close()
	if err := q.Backup(ctx, a.o.backup); err != nil {
		// The file was new: what a failed VACUUM INTO left is no backup.
		if rerr := os.Remove(a.o.backup); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			err = errors.Join(err, rerr)
		}
		return err
	}
	fmt.Fprintf(a.stdout, "backed up %s to %s\n", a.dbPath, a.o.backup)
	return nil
}

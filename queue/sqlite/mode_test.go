//go:build unix

package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestFilesArePrivate checks that the database, its -wal and -shm, the lock
// files and a backup are created 0600 under the common umask 0022: they
// hold job output and errors. Not parallel: the umask is the process's.
func TestFilesArePrivate(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)

	dir := t.TempDir()
	path := filepath.Join(dir, "q.db")
	ctx := context.Background()
	q, err := Open(ctx, path, Config{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer q.Close()
	if _, err := q.Enqueue(ctx, NewJob{Type: "t", Key: "k"}); err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	backup := filepath.Join(dir, "q.db-backup")
	if err := q.Backup(ctx, backup); err != nil {
		t.Fatalf("Backup: %v", err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm", path + "-lock", path + "-gate", backup} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Errorf("stat: %v", err)
			continue
		}
		if got := fi.Mode().Perm(); got != 0o600 {
			t.Errorf("%s has mode %v, want -rw-------", filepath.Base(p), got)
		}
	}
}

// TestExistingFileKeepsItsMode checks that Open does not change the mode an
// operator gave an existing database file.
func TestExistingFileKeepsItsMode(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "q.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	q, err := Open(context.Background(), path, Config{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer q.Close()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o640 {
		t.Errorf("mode %v after Open, want -rw-r----- as the operator left it", got)
	}
}

// TestBackupRefusesAnExistingFile checks that a backup never overwrites a
// file, and leaves it as it was.
func TestBackupRefusesAnExistingFile(t *testing.T) {
	t.Parallel()
	q, _ := newTestQueue(t)
	path := filepath.Join(t.TempDir(), "copy.db")
	if err := os.WriteFile(path, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := q.Backup(context.Background(), path); err == nil {
		t.Fatal("Backup over an existing file succeeded, want an error")
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "precious" {
		t.Errorf("existing file now %q (%v), want it untouched", b, err)
	}
}

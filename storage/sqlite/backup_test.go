package sqlite

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/threadsmith/threadsmith/storage"
)

// A backup of a database in use (by a DB of this process, as by a running
// bot) is a database with what was committed, written while writes go on;
// it never overwrites a file.
func TestBackupCopiesAnOpenDatabaseAndRefusesToOverwrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	db, err := Open(ctx, filepath.Join(dir, FileName), WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	key := storage.ThreadKey{Platform: "test", Team: "T", Channel: "C", Thread: "1"}
	if _, err := db.AcceptInboundInThread(ctx, key, storage.ThreadInit{Repo: "app"}, storage.Inbound{Platform: "test", Channel: "C", EventID: "e1", Text: "hello", Mode: storage.ModePrompt}); err != nil {
		t.Fatal(err)
	}

	for name, backup := range map[string]func(string) error{
		"file":   func(dst string) error { return BackupFile(ctx, filepath.Join(dir, FileName), dst) },
		"method": func(dst string) error { return db.Backup(ctx, dst) },
	} {
		dst := filepath.Join(t.TempDir(), "backup.db")
		if err := backup(dst); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if st, err := os.Stat(dst); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: backup file %v, %v; want it private (0600)", name, st, err)
		}
		copy, err := Open(ctx, dst, WithLogger(nil))
		if err != nil {
			t.Fatalf("%s: opening the backup: %v", name, err)
		}
		if _, err := copy.GetThread(ctx, key); err != nil {
			t.Errorf("%s: the backup lacks the thread: %v", name, err)
		}
		copy.Close()

		before, _ := os.ReadFile(dst)
		if err := backup(dst); !errors.Is(err, os.ErrExist) {
			t.Errorf("%s: a second backup to the same file: %v, want it refused", name, err)
		}
		if after, _ := os.ReadFile(dst); string(after) != string(before) {
			t.Errorf("%s: the refused backup changed the file", name)
		}
		if entries, _ := os.ReadDir(filepath.Dir(dst)); len(entries) != 1 {
			t.Errorf("%s: left %v beside the backup", name, entries)
		}
	}
	// Nothing to back up is an error, and creates nothing.
	missing := filepath.Join(t.TempDir(), FileName)
	if err := BackupFile(ctx, missing, filepath.Join(t.TempDir(), "b.db")); err == nil {
		t.Error("a backup of no database succeeded")
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Error("the backup created the database it was to copy")
	}
}

package postgres_test

import (
	"context"
	"testing"

	"github.com/threadsmith/threadsmith/storage/postgres"
	"github.com/threadsmith/threadsmith/storage/storagetest"
)

// Two replicas of one database: only one holds the retention lock at a time,
// and released, the other takes it.
func TestRetentionLockBetweenReplicas(t *testing.T) {
	ctx := context.Background()
	dsn := storagetest.FreshSchema(t, storagetest.PostgresDSN(t))
	a, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	b, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	defer a.Close()
	releaseA, ok, err := a.TryRetentionLock(ctx)
	if err != nil || !ok {
		t.Fatalf("replica a: %v, %v", ok, err)
	}
	if _, ok, err := b.TryRetentionLock(ctx); err != nil || ok {
		t.Fatalf("replica b while a holds the lock: %v, %v; want not ok", ok, err)
	}
	releaseA()
	release, ok, err := b.TryRetentionLock(ctx)
	if err != nil || !ok {
		t.Fatalf("replica b after a closed: %v, %v", ok, err)
	}
	release()
}

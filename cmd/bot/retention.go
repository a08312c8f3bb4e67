package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/threadsmith/threadsmith/config"
	"github.com/threadsmith/threadsmith/internal/retention"
	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/workspace"
)

// startRetention runs the retention sweeper (storage.retention) until ctx
// ends: at start, then daily. Off, it does nothing.
func (m *Main) startRetention(ctx context.Context, cfg *config.Config, db storage.Store, ws *workspace.Manager, log *slog.Logger) {
	age := time.Duration(cfg.Storage.Retention)
	if age <= 0 {
		return
	}
	s := &retention.Sweeper{Store: db, Files: ws, Age: age, Now: m.now, Log: log.With("component", "retention")}
	m.swept = make(chan struct{})
	go func() {
		defer close(m.swept)
		s.Run(ctx)
	}()
}

// now is the bot's clock.
func (m *Main) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

// retentionLine is -check's report of what the retention sweep would delete
// now ("retention 90d: 12 threads, 3.4 MB"), deleting nothing; "" when
// retention is off.
func (m *Main) retentionLine(ctx context.Context, cfg *config.Config, db storage.Store) string {
	age := cfg.Storage.Retention
	if age <= 0 {
		return ""
	}
	r, err := retention.Plan(ctx, db, cfg.DataDir, time.Duration(age), m.now())
	if err != nil {
		return fmt.Sprintf("retention %s: cannot tell what it would delete: %v", age, err)
	}
	return fmt.Sprintf("retention %s: %s would be deleted", age, r)
}

-- 0003: when a person last wrote in a thread. A reconnect catches up only on
-- the threads in use (RecentThreads) instead of on every thread ever opened:
-- each costs a rate-limited history call. Existing threads start from their
-- last update.
ALTER TABLE threads ADD COLUMN active_at INTEGER NOT NULL DEFAULT 0;
UPDATE threads SET active_at = updated_at;
CREATE INDEX threads_recent ON threads (platform, active_at) WHERE state = 'active';

-- 0003 (mirrors SQLite's): when a person last wrote in a thread, for
-- RecentThreads.
ALTER TABLE threads ADD COLUMN active_at BIGINT NOT NULL DEFAULT 0;
UPDATE threads SET active_at = updated_at;
CREATE INDEX threads_recent ON threads (platform, active_at) WHERE state = 'active';

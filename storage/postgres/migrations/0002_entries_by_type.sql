-- 0002 (mirrors SQLite's): a session's entries of one type without visiting
-- the others, for LoadLiveEntries.
CREATE INDEX entries_by_type ON entries (session_id, type, seq);

-- 0002: find a session's entries of one type without visiting the others, so a
-- resume reads only the live context (LoadContext) plus the few model and
-- thinking-level changes before it.
CREATE INDEX entries_by_type ON entries (session_id, type, seq);

-- 0007 (mirrors SQLite's): a thread's input by thread, for the session
-- pages' ThreadInbound and ThreadVersion.
CREATE INDEX inbound_thread ON inbound (thread_id, id);

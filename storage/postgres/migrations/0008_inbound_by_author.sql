-- 0008 (mirrors SQLite's): a person's input by platform and author, for
-- AuthorThreadSummaries.
CREATE INDEX inbound_author ON inbound (platform, author_id, thread_id);

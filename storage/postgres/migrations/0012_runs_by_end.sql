-- 0012 (mirrors SQLite's): runs by when they ended, for AuthorSpend.
CREATE INDEX runs_ended ON runs (ended_at);

-- 0013 (mirrors SQLite's): active threads by branch and by origin, for
-- FindActiveThread.
CREATE INDEX threads_by_branch ON threads (repo, branch) WHERE state = 'active';
CREATE INDEX threads_by_origin ON threads (repo, origin) WHERE state = 'active' AND origin <> '';

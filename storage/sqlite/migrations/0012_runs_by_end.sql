-- 0012: runs by when they ended, for AuthorSpend (a person's daily budget,
-- read before each run and between its model calls): without it each read
-- scans every run ever made.
CREATE INDEX runs_ended ON runs (ended_at);

-- 0013: active threads by the branch they work on and by where they came
-- from, for FindActiveThread (every forge webhook about a pull request or
-- an issue asks): without them each read scans every thread.
CREATE INDEX threads_by_branch ON threads (repo, branch) WHERE state = 'active';
CREATE INDEX threads_by_origin ON threads (repo, origin) WHERE state = 'active' AND origin <> '';

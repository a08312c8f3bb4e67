-- 0014: each session's live entries in one value (storage.SnapshotSession),
-- the last seq it holds beside it, so that a resume reads one row and the
-- entries stored after upto instead of a row per live entry.
CREATE TABLE session_snapshots (
    session_id INTEGER PRIMARY KEY REFERENCES sessions (id),
    upto       INTEGER NOT NULL,
    snapshot   BLOB    NOT NULL
) STRICT;

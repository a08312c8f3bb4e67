-- 0011: the decisions people made in a thread (plans offered, approved,
-- revised, cancelled; pushes approved), for the session page and for the
-- plan that waits for approval across a restart.
CREATE TABLE decisions (
    id         INTEGER PRIMARY KEY,
    thread_id  INTEGER NOT NULL REFERENCES threads (id),
    session_id TEXT    NOT NULL DEFAULT '',
    kind       TEXT    NOT NULL CHECK (kind IN ('plan', 'approve', 'revise', 'cancel', 'push')),
    user_id    TEXT    NOT NULL CHECK (user_id <> ''),
    user_name  TEXT    NOT NULL DEFAULT '',
    detail     TEXT    NOT NULL DEFAULT '',
    decided_at INTEGER NOT NULL
) STRICT;
CREATE INDEX decisions_thread ON decisions (thread_id, id);

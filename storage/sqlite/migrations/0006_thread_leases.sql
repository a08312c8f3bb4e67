-- 0006: thread ownership between replicas sharing one database (issue 15).
-- A replica owns a thread while its lease is live (expires_at in the future)
-- and renews it; fence grows on every new acquisition, and a write carrying
-- an older fence is refused (storage.ErrFenced). The row is never deleted, so
-- a thread's fence only grows; a released lease has expires_at 0.
CREATE TABLE thread_leases (
    thread_id  INTEGER PRIMARY KEY REFERENCES threads (id),
    owner      TEXT    NOT NULL CHECK (owner <> ''),
    fence      INTEGER NOT NULL CHECK (fence > 0),
    expires_at INTEGER NOT NULL
) STRICT;

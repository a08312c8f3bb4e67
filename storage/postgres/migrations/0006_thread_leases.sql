-- 0006 (mirrors SQLite's): thread leases with fencing numbers (issue 15).
CREATE TABLE thread_leases (
    thread_id  BIGINT PRIMARY KEY REFERENCES threads (id),
    owner      TEXT   NOT NULL CHECK (owner <> ''),
    fence      BIGINT NOT NULL CHECK (fence > 0),
    expires_at BIGINT NOT NULL
);

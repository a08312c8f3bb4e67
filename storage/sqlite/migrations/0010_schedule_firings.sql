-- 0010: the firings of the configured schedules (FiringStore): a firing is
-- leased to the replica that runs it (owner, expires_at) and done once it
-- ran. Only a schedule's latest firings are kept.
CREATE TABLE schedule_firings (
    schedule   TEXT    NOT NULL,
    at         INTEGER NOT NULL,
    owner      TEXT    NOT NULL,
    expires_at INTEGER NOT NULL,
    done       INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (schedule, at)
) STRICT;

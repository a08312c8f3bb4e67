-- 0010 (mirrors SQLite's): the firings of the configured schedules.
CREATE TABLE schedule_firings (
    schedule   TEXT    NOT NULL,
    at         BIGINT  NOT NULL,
    owner      TEXT    NOT NULL,
    expires_at BIGINT  NOT NULL,
    done       BOOLEAN NOT NULL DEFAULT false,
    PRIMARY KEY (schedule, at)
);

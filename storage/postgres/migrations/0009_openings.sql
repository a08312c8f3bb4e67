-- 0009 (mirrors SQLite's): a thread's origin, and the openings that map a
-- caller's key to the thread the bot opened for it.
ALTER TABLE threads ADD COLUMN origin TEXT NOT NULL DEFAULT '';
CREATE TABLE openings (
    platform TEXT   NOT NULL,
    opening  TEXT   NOT NULL,
    team     TEXT   NOT NULL DEFAULT '',
    channel  TEXT   NOT NULL DEFAULT '',
    thread   TEXT   NOT NULL DEFAULT '',
    first_at BIGINT NOT NULL,
    PRIMARY KEY (platform, opening)
);

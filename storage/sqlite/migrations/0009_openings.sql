-- 0009: threads the bot opens itself. A thread's origin says where it came
-- from (a schedule, an issue); an opening maps the caller's key to the
-- thread it opened, so that an opening asked for again finds that thread
-- instead of posting a second one. thread is '' while the post is under way.
ALTER TABLE threads ADD COLUMN origin TEXT NOT NULL DEFAULT '';
CREATE TABLE openings (
    platform TEXT    NOT NULL,
    opening  TEXT    NOT NULL,
    team     TEXT    NOT NULL DEFAULT '',
    channel  TEXT    NOT NULL DEFAULT '',
    thread   TEXT    NOT NULL DEFAULT '',
    first_at INTEGER NOT NULL,
    PRIMARY KEY (platform, opening)
) STRICT;

-- 0004: a run's closing messages (its answer and footer) are stored before
-- they are handed to the outbox, and marked once the platform accepted them
-- (or refused them for good); at start the bot posts again what was stored
-- and never marked, so that a crash between "model finished" and "platform
-- accepted" does not lose the answer (issue 14). post_key is the post's
-- idempotency key (Slack metadata, Discord nonce), the same on every attempt.
CREATE TABLE pending_posts (
    id         INTEGER PRIMARY KEY,
    thread_id  INTEGER NOT NULL REFERENCES threads (id),
    run_id     INTEGER REFERENCES runs (id),
    post_key   TEXT    NOT NULL UNIQUE CHECK (post_key <> ''),
    text       TEXT    NOT NULL CHECK (text <> ''),
    created_at INTEGER NOT NULL,
    done_at    INTEGER,
    message_id TEXT
) STRICT;
CREATE INDEX pending_posts_open ON pending_posts (id) WHERE done_at IS NULL;

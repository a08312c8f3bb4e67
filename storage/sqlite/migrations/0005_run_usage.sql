-- 0005: each run's usage as its own record, written when the run ends:
-- the tokens and cost of the model replies the run received and the models
-- that gave them. last_seq is the session's last entry when the run ended;
-- the next run of the session counts the replies after it.
CREATE TABLE run_usage (
    run_id             INTEGER PRIMARY KEY REFERENCES runs (id),
    last_seq           INTEGER NOT NULL,
    replies            INTEGER NOT NULL DEFAULT 0,
    input_tokens       INTEGER NOT NULL DEFAULT 0,
    output_tokens      INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    cost               REAL    NOT NULL DEFAULT 0,
    models             TEXT    NOT NULL DEFAULT '[]'
) STRICT;

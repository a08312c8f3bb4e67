-- 0005 (mirrors SQLite's): each run's usage as its own record, written when
-- the run ends (FinishRun and InterruptRuns sum the run's replies, as
-- storage/runusage.go does for SQLite).
CREATE TABLE run_usage (
    run_id             BIGINT PRIMARY KEY REFERENCES runs (id),
    last_seq           BIGINT NOT NULL,
    replies            BIGINT NOT NULL DEFAULT 0,
    input_tokens       BIGINT NOT NULL DEFAULT 0,
    output_tokens      BIGINT NOT NULL DEFAULT 0,
    cache_read_tokens  BIGINT NOT NULL DEFAULT 0,
    cache_write_tokens BIGINT NOT NULL DEFAULT 0,
    cost               DOUBLE PRECISION NOT NULL DEFAULT 0,
    models             TEXT   NOT NULL DEFAULT '[]'
);

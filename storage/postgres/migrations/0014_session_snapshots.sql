-- 0014 (mirrors SQLite's): each session's live entries in one value, for
-- a resume that reads one row. Stored uncompressed: pglz would cost the
-- resume more to undo than the bytes it saves.
CREATE TABLE session_snapshots (
    session_id BIGINT PRIMARY KEY REFERENCES sessions (id),
    upto       BIGINT NOT NULL,
    snapshot   bytea  NOT NULL
);
ALTER TABLE session_snapshots ALTER COLUMN snapshot SET STORAGE EXTERNAL;

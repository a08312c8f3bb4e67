-- 0001: threadsmith's first schema.
--
-- Times are Unix milliseconds (INTEGER). Tables are STRICT so a wrong type is an
-- error rather than a silent conversion. Nothing here is deleted by the bot except
-- processed_events, which only remembers recent platform event ids.

-- A chat thread that hosts a session: one per (platform, team/guild, channel, thread).
CREATE TABLE threads (
    id                INTEGER PRIMARY KEY,
    platform          TEXT    NOT NULL CHECK (platform <> ''),
    team              TEXT    NOT NULL DEFAULT '',
    channel           TEXT    NOT NULL CHECK (channel <> ''),
    thread            TEXT    NOT NULL CHECK (thread <> ''),
    -- The thread's current session; older sessions (before a !reset) keep their rows.
    session_id        INTEGER REFERENCES sessions (id),
    repo              TEXT    NOT NULL DEFAULT '',
    branch            TEXT    NOT NULL DEFAULT '',
    workspace_path    TEXT    NOT NULL DEFAULT '',
    state             TEXT    NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'closed')),
    -- Platform id (Slack ts, Discord snowflake) of the newest message seen, for catch-up.
    last_seen_message TEXT    NOT NULL DEFAULT '',
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL,
    UNIQUE (platform, team, channel, thread)
) STRICT;

-- One conversation with the model. The public id (uid) is what the agent sees.
CREATE TABLE sessions (
    id            INTEGER PRIMARY KEY,
    uid           TEXT    NOT NULL UNIQUE,
    thread_id     INTEGER NOT NULL REFERENCES threads (id),
    model         TEXT    NOT NULL DEFAULT '',
    system_prompt TEXT    NOT NULL DEFAULT '',
    settings      TEXT CHECK (settings IS NULL OR json_valid(settings)),
    created_at    INTEGER NOT NULL
) STRICT;
CREATE INDEX sessions_thread ON sessions (thread_id);

-- A session's record, in seq order (never time order). payload is the JSON of the
-- entry's type-specific part: the message, the compaction, the model change, ...
CREATE TABLE entries (
    session_id INTEGER NOT NULL REFERENCES sessions (id),
    seq        INTEGER NOT NULL CHECK (seq >= 0),
    type       TEXT    NOT NULL CHECK (type <> ''),
    ts         INTEGER NOT NULL DEFAULT 0,
    payload    TEXT    NOT NULL,
    PRIMARY KEY (session_id, seq)
) STRICT;

-- Every accepted chat input, committed before the platform event is acknowledged.
CREATE TABLE inbound (
    id           INTEGER PRIMARY KEY,
    platform     TEXT    NOT NULL CHECK (platform <> ''),
    event_id     TEXT,
    channel      TEXT    NOT NULL CHECK (channel <> ''),
    message_id   TEXT,
    thread_id    INTEGER NOT NULL REFERENCES threads (id),
    author_id    TEXT    NOT NULL DEFAULT '',
    author_name  TEXT    NOT NULL DEFAULT '',
    author_email TEXT    NOT NULL DEFAULT '',
    text         TEXT    NOT NULL DEFAULT '',
    attachments  TEXT CHECK (attachments IS NULL OR json_valid(attachments)),
    mode         TEXT    NOT NULL CHECK (mode IN ('prompt', 'steer', 'followUp', 'command')),
    state        TEXT    NOT NULL DEFAULT 'received'
                         CHECK (state IN ('received', 'queued', 'delivered', 'dropped')),
    -- Which queue it waited in; kept after delivery as history.
    queue        TEXT CHECK (queue IN ('steer', 'followUp')),
    reason       TEXT    NOT NULL DEFAULT '',
    received_at  INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    CHECK (state <> 'queued' OR queue IS NOT NULL),
    CHECK (state <> 'dropped' OR reason <> '')
) STRICT;
-- Slack sends one mention as app_mention and as message (two event ids, one ts) and
-- redelivers on timeouts; Discord replays on resume. Either key identifies a repeat.
CREATE UNIQUE INDEX inbound_event ON inbound (platform, event_id);
CREATE UNIQUE INDEX inbound_message ON inbound (platform, channel, message_id);
CREATE INDEX inbound_pending ON inbound (thread_id, id) WHERE state IN ('received', 'queued');

-- A run of the agent (one prompt and everything it triggered). ended_at and outcome
-- are NULL while it runs; a run found running at start was cut off by a crash.
CREATE TABLE runs (
    id         INTEGER PRIMARY KEY,
    thread_id  INTEGER NOT NULL REFERENCES threads (id),
    session_id INTEGER NOT NULL REFERENCES sessions (id),
    inbound_id INTEGER REFERENCES inbound (id),
    started_at INTEGER NOT NULL,
    ended_at   INTEGER,
    outcome    TEXT,
    CHECK ((ended_at IS NULL) = (outcome IS NULL)),
    CHECK (outcome IS NULL OR outcome <> '')
) STRICT;
CREATE INDEX runs_running ON runs (id) WHERE ended_at IS NULL;
CREATE INDEX runs_thread ON runs (thread_id);

-- Messages the bot posted, so it can edit them later, even after a restart.
CREATE TABLE outbound (
    id         INTEGER PRIMARY KEY,
    thread_id  INTEGER NOT NULL REFERENCES threads (id),
    run_id     INTEGER REFERENCES runs (id),
    kind       TEXT    NOT NULL CHECK (kind IN ('status', 'answer', 'notice', 'ack')),
    channel    TEXT    NOT NULL CHECK (channel <> ''),
    message_id TEXT    NOT NULL CHECK (message_id <> ''),
    text       TEXT    NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) STRICT;
CREATE INDEX outbound_run ON outbound (run_id) WHERE run_id IS NOT NULL;
CREATE INDEX outbound_thread ON outbound (thread_id);

-- Every push attempt of a thread's branch.
CREATE TABLE pushes (
    id        INTEGER PRIMARY KEY,
    thread_id INTEGER NOT NULL REFERENCES threads (id),
    branch    TEXT    NOT NULL CHECK (branch <> ''),
    sha       TEXT    NOT NULL,
    result    TEXT    NOT NULL CHECK (result IN ('ok', 'rejected', 'error')),
    detail    TEXT    NOT NULL DEFAULT '',
    pushed_at INTEGER NOT NULL
) STRICT;
CREATE INDEX pushes_thread ON pushes (thread_id, id);

-- Platform events that are not input (retried envelopes of ignored events, ...),
-- remembered for a while so a redelivery is recognised. Pruned by age.
CREATE TABLE processed_events (
    platform TEXT    NOT NULL,
    event_id TEXT    NOT NULL,
    seen_at  INTEGER NOT NULL,
    PRIMARY KEY (platform, event_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX processed_events_age ON processed_events (seen_at);

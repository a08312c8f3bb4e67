-- 0007: a thread's input by thread. The session pages read it (ThreadInbound
-- at every page build, ThreadVersion's count at every poll of a live page,
-- once a second): without this index each read scanned every message ever
-- received (22 ms a poll at 200,000 rows, 0.6 ms with it).
CREATE INDEX inbound_thread ON inbound (thread_id, id);

-- 0008: a person's input by platform and author, for !sessions and the Slack
-- Home tab (AuthorThreadSummaries): without it each listing reads every
-- message ever received.
CREATE INDEX inbound_author ON inbound (platform, author_id, thread_id);

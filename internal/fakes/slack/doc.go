// Package slackfake is a protocol-faithful fake of Slack for tests: the Web API under
// /api/, the Socket Mode websocket and HTTP Events API delivery, all on 127.0.0.1.
//
// It speaks what github.com/slack-go/slack v0.36.0 speaks, so production code is
// tested through the real client:
//
//	srv := slackfake.New(t)
//	api := slack.New(srv.BotToken(), slack.OptionAPIURL(srv.APIURL()),
//		slack.OptionAppLevelToken(srv.AppToken()))
//	client := socketmode.New(api)
//
// # Web API
//
// Bodies are form-encoded or JSON; the token comes from the form or the
// Authorization header. A missing token answers not_authed, a wrong one
// invalid_auth, a token of the wrong kind not_allowed_token_type. Errors are HTTP 200
// with {"ok":false,"error":code}, as Slack answers them; an unknown method answers
// unknown_method. Every request is recorded (Calls, CallsTo) before the response is
// written, so a test that saw the response also sees the call.
//
// As strict as Slack where a bot can go wrong: chat.update refuses text over 4,000
// characters and chat.postMessage over 40,000 (msg_too_long); with WithScopes a
// method the granted scopes do not cover answers missing_scope; with WithRateLimits
// every method the bot calls has its limit (chat.postMessage per channel,
// chat.update per message and workspace, the others by tier); an ephemeral message
// posted into a thread without replies is recorded as not Visible, and one to a user
// who is not in the channel fails with user_not_in_channel (a user joins a channel
// by writing or sharing a file in it, or with ChannelJoin; LeaveChannel takes them
// out; the user of an im is always in it). Notices records
// every post or update whose text would notify someone (<!here>, <!subteam^…>,
// <@U…>, or plain @channel when parsed as a client would, which chat.update does
// unless told parse=none). The streaming methods (chat.startStream, appendStream,
// stopStream) stream only replies in a thread or a DM, to a named recipient
// outside a DM, take at most 12,000 characters of markdown_text a call, refuse
// appends and stops once stopped (message_not_in_streaming_state), and record
// mentions the streamed markdown writes, read as a markdown block (a plain
// @channel notifies); WithoutStreaming makes a workspace refuse
// them. LoseResponseNext makes a call take effect without an
// answer, as after a timeout.
//
// Messages get unique, strictly increasing ts values ("1700000000.000100") from the
// server's clock. The fake keeps every channel's messages and threads (Messages),
// reactions (Reactions), ephemeral messages (Ephemerals), file uploads (Uploads) and
// assistant statuses (Statuses, AssistantStatus) and agent sessions (AgentStatuses,
// AgentSessionOf) for assertions.
//
// # Events
//
// Scenario helpers (Mention, UserMessage, DM, EditMessage, ShareFile, …) store the
// message as a user typed it and deliver the events Slack would send for it. Events
// go over Socket Mode unless UseHTTPEvents switched the server to the HTTP Events API.
// Over Socket Mode, events are sent in order to the newest connection that has not
// been asked to disconnect; with no such connection they wait, in order, for the next
// one. With SpreadEvents they go to the open connections in turn, as Slack spreads
// an app's events over its connections, and an event a connection took and did not
// acknowledge before closing is delivered again (retry_attempt+1) to another;
// Delivery.Conn says which connection got each envelope. Every delivery and every acknowledgement is recorded (Deliveries, Acks,
// WaitAck, WaitAllAcked). Unacknowledged envelopes are delivered again only when
// WithRedelivery is set, as Slack does after 3 s, at most three times. Disconnect
// sends a disconnect frame, DropSocket cuts the connection, and Outage also refuses
// reconnects and loses the events raised meanwhile (their messages stay stored, for
// tests of catching up through conversations.replies).
//
// Click has a user click a button of a message's actions block (Buttons lists
// them): a block_actions payload as Slack sends it, over Socket Mode as an
// "interactive" envelope, over HTTP form-encoded (payload=…) and signed, to
// HTTPEvents.InteractiveURL. A button the message does not have cannot be
// clicked (the test fails), and chat.postMessage/chat.update refuse blocks
// Block Kit refuses (invalid_blocks).
//
// The bot's own posts, edits, deletions and uploads come back as events too (Slack
// sends them to an app subscribed to message events), unless WithoutBotEcho is set.
//
// # Time
//
// Rate limiting and message timestamps read the clock given by WithClock (default
// time.Now). Tests of rate limits should inject a ManualClock and advance it rather
// than sleep. The fake serves real loopback sockets, which testing/synctest does not
// count as durably blocking, so a synctest bubble cannot drive the fake's timers;
// websocket pings and redelivery therefore run on real timers whose intervals are
// options (WithPingInterval, WithRedelivery) and short by default.
//
// The server and everything it started stop at t.Cleanup.
package slackfake

// Package discordfake is a protocol-faithful fake of Discord for tests: the REST
// API under /api/v9 and the JSON gateway, speaking what
// github.com/bwmarrin/discordgo v0.29.0 sends and expects, on 127.0.0.1.
//
// A test starts one with New, points its discordgo session at it and drives it
// like a Discord user would:
//
//	fake := discordfake.New(t)
//	s, _ := discordgo.New("Bot " + fake.Token())
//	s.Client = &http.Client{Transport: rewriteTo(fake.URL())} // https://discord.com/ -> fake.URL()
//	s.Open()                                                  // GET /api/v9/gateway, then ws://…/gateway/
//	fake.UserMessage(discordfake.DefaultChannelID, discordfake.AliceID, "hi")
//
// discordgo computes its Endpoint* strings once at init from
// "https://discord.com/", so the fake is reached by rewriting requests in the
// session's http.Client Transport: every REST path is served exactly as Discord
// serves it (/api/v9/…), GET /api/v9/gateway answers with a ws:// URL on this
// server, and discordgo then dials /gateway/ (with the trailing slash it adds).
//
// What the fake guarantees:
//
//   - Ordering: each gateway session receives dispatches in the order they
//     happened, with sequence numbers 1, 2, 3, …; READY is 1.
//   - Loss: dispatches that happen while a session's connection is down are
//     kept and replayed on RESUME (then RESUMED), as Discord does. A session
//     closed with code 1000/1001 by the client, or invalidated with
//     InvalidateSession(false), cannot be resumed and its backlog is gone: the
//     client must identify again and catch up over REST (GET messages ?after=).
//   - Blocking: driving helpers (UserMessage, SlashCommand, DropGateway, …) never
//     wait for the client; each gateway connection has its own unbounded
//     outbound queue. Every WaitFor… helper blocks until its condition holds or
//     its context ends, so tests never sleep.
//   - Recording: every REST request (method, path, route, JSON body or multipart
//     parts, status), every gateway payload in both directions (tokens
//     redacted), every identify, interaction, command registration, reaction,
//     typing call and 429 is kept for assertions.
//
// Behaviour that tests may rely on because Discord does the same:
//
//   - The bot's own messages, edits, deletions and reactions are dispatched back
//     to it (MESSAGE_CREATE/UPDATE/DELETE, MESSAGE_REACTION_ADD/REMOVE).
//   - Events are filtered by the identify intents; without MESSAGE_CONTENT the
//     content, embeds and attachments of other users' guild messages that do not
//     mention the bot arrive empty. Requesting a privileged intent that
//     WithDisabledPrivilegedIntents turned off closes the gateway with 4014
//     ("Disallowed intent(s).").
//   - A thread started from a message has the message's id and type 11; a
//     second thread on the same message fails with code 160004.
//   - An interaction callback later than the deadline (3 s, see
//     WithInteractionDeadline) fails with 404 code 10062 "Unknown interaction";
//     a second callback fails with 400 code 40060; interaction tokens (webhook
//     edits and followups) expire after 15 minutes.
//   - Click has a user click a button of the bot's message: INTERACTION_CREATE
//     of type 3 (MESSAGE_COMPONENT) with the message. Link buttons send none,
//     and a button the message does not have cannot be clicked. A click is
//     answered with 4, 5, 6 (DEFERRED_UPDATE_MESSAGE: nothing changes) or 7
//     (UPDATE_MESSAGE); 6 and 7 answer nothing but a click. Messages and
//     edits whose components Discord would refuse (rows of 1–5 buttons, a
//     custom_id or else a url, unique ids, labels of 80) fail with 50035.
//   - A deferred response (type 5) creates a "thinking" message (flag 128);
//     PATCH @original fills it in. The first followup after a deferral edits
//     that message instead of creating a new one.
//   - GET /channels/{id}/messages returns newest first, also with ?after=
//     (where it returns the oldest `limit` messages after the id).
//   - Content over 2,000 characters (counted in runes) is rejected with 50035,
//     an empty message with 50006, a reaction given as a shortcode ("eyes")
//     instead of the emoji itself with 10014.
//   - allowed_mentions decides who a message pings: Notices records every
//     message, edit, interaction answer or followup of the bot whose content
//     would ping someone (no allowed_mentions: every mention in it), and a
//     parse type given with a list of ids of that type is rejected (50035).
//   - A message created with a nonce and enforce_nonce: true is created once;
//     the same nonce again within a few minutes returns the first message.
//   - Attachment links are signed as Discord's CDN signs them (ex, is, hm)
//     and answer 404 "This content is no longer available." once ex has
//     passed on the Clock (AttachmentURLLifetime, a day); a message rendered
//     again (fetched, dispatched) carries a fresh link.
//   - LoseResponseNext (LoseResponseWhen, for a request picked by its
//     content) makes a request take effect without an answer, as after a
//     timeout.
//
// Every REST request is checked against Discord's OpenAPI description
// (package discordspec): a method and path Discord does not have, a bad path
// or query parameter, or a JSON body its schema rejects fails the test and is
// answered 400 50035 (WithSpecViolationsAllowed for tests of the fake's own
// refusals).
//
// Rate limits are off unless WithRateLimits is given; then every route has
// its bucket (DefaultRateLimits: messages, edits, deletions, reactions, reads,
// thread creation, typing, DMs, members, interaction callbacks, webhooks,
// commands and the rest), every response of a limited route carries
// X-RateLimit-Limit/Remaining/Reset/Reset-After/Bucket headers and
// over-limit requests get 429 with Retry-After and a JSON body
// {"message":"You are being rate limited.","retry_after":s,"global":b}. Windows,
// the interaction deadline, token lifetimes, timestamps and snowflakes all read
// the Clock (WithClock): give a ManualClock to drive them without sleeping.
// discordgo itself waits in real time on Reset-After and retry_after, so tests
// that let discordgo retry should use short windows.
package discordfake

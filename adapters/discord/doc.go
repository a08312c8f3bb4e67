// Package discord is threadsmith's Discord adapter: it implements chat.Adapter
// and every optional capability (Editor, Reactor, Uploader, StatusSetter,
// Whisperer, HistoryReader, Downloader, MarkupConverter, Actioner) on
// github.com/bwmarrin/discordgo, over the gateway and the REST API v9. It does
// platform I/O only; sessions, de-duplication, commands, rendering and rate
// budgets belong to the bridge and its outbox.
//
// # Connection
//
// New builds a discordgo session whose http.Client rewrites
// https://discord.com/ to discord.api_url (discordgo computes its Endpoint*
// strings once at init, so only the transport can redirect them): REST calls
// and the gateway lookup go there, and the websocket is dialled at whatever
// URL that lookup returns. The identify asks for guilds, guild messages,
// MESSAGE_CONTENT (privileged) and direct messages; not for reactions, which
// the bot adds but never reads.
// If Discord refuses MESSAGE_CONTENT (close 4014), or the token (4004), Run
// returns an error that says what to fix; other connection failures are
// retried with backoff.
//
// discordgo's own reconnect loop is turned off: Run reconnects itself, so that
// it can stop at once when its context ends. A reconnect resumes the gateway
// session when Discord still has it (and Discord replays what was missed);
// after every READY and RESUMED, Run asks the handler for its active threads
// and fetches the messages after the newest one seen in each (GET
// messages?after=), delivering them through Receive, which de-duplicates. So a
// gateway drop loses no message, and neither does a restart of the bot.
//
// # Ordering and blocking
//
// discordgo calls the adapter's handlers synchronously (SyncEvents), in
// gateway order, on its reading goroutine; they never block: each event is put
// on an unbounded queue that one worker goroutine processes in order. So input
// reaches the handler in the order Discord sent it, catch-up messages of a
// reconnect before anything that arrived after it.
//
// A slash command is answered at once by a goroutine of its own (a deferred
// response, or a final ephemeral reply), so Discord's 3-second interaction
// deadline holds however busy the worker is; the worker then does the rest,
// in order with the other events.
//
// # Slash commands
//
// The commands are /code, the adapter's own, and the bridge's chat commands
// given in Options.Commands (each becomes the slash command of that name, its
// argument a string option); they are bulk-overwritten on every start, per
// guild in discord.guild_ids or else globally, so they always match the
// code. /code in a text channel turns its deferred response (@original) into
// the starter message (request, repo, branch), opens a public thread on it
// (the thread takes the message's id, which is how the branch is known before
// the thread exists) and hands the prompt to the handler as a mention in that
// thread. /code inside a thread or DM and the commands whose words go to the
// model (CommandSpec.Input: /steer, /followup, /review) are input to that
// conversation: their public response shows what was asked and is the
// message acknowledgement reactions go on. The other commands become the
// bridge's text commands (!stop, !status, !compact <focus>, …) and are
// answered ephemerally ("✓", or why nothing happened). Interaction tokens are
// only used for these first answers and for Whisper, never for the work that
// follows (they die after 15 minutes).
//
// discord.allowed_users and discord.allowed_roles are applied to slash
// commands here, before anything visible happens (no starter message, no
// thread): a refused user gets an ephemeral note and the handler never sees
// the command. Plain messages are checked by the handler, which calls Whisper.
//
// # Buttons
//
// SetActions (chat.Actioner) edits a message's content together with one
// action row of buttons: a command button's custom_id is the action's id
// (Danger red, others grey), a link button (style 5) has the url and sends
// no interaction; no actions clear the row. A click is an INTERACTION_CREATE
// of type 3 (MESSAGE_COMPONENT): answered at once on a goroutine of its own
// with a deferred update (type 6: the message stays; the bridge edits it),
// then delivered on the worker, in order with everything else, as the
// command's chat.Inbound ("!stop") with the interaction's id as EventID. As
// for slash commands, discord.allowed_users/allowed_roles are applied here:
// a click from someone they leave out is answered with an ephemeral note
// (type 4, flag 64) through its interaction token, and nothing reaches the
// handler. An allowed click's interaction is held for Whisper, whose note
// is then an ephemeral followup. A click on a component that is not one of
// these buttons is answered (a deferred update) and dropped.
//
// # Whisper
//
// Discord has no ephemeral messages outside interactions. Whisper answers
// through the user's most recent interaction in that channel while its token
// is alive (editing the ephemeral response if it has not been given, else an
// ephemeral followup); otherwise it sends the note as a direct message. It
// never writes in the channel: a public reply would name the person. If the
// person takes no direct messages, a ⛔ reaction on their message is all
// that shows.
//
// # Mentions
//
// Nothing the bot writes can ping anyone but the requester: every message,
// edit and upload carries allowed_mentions with no parse types and, as its
// only user, the last person whose input the handler accepted in that
// conversation. Posts and edits carry SUPPRESS_EMBEDS: Discord would fetch
// the model's URLs unasked to preview them. Posts and uploads carry a nonce
// with enforce_nonce (PostOnce, UploadOnce), so a post or file retried after
// a timeout is created once. Discord holds a nonce for a few
// minutes only: an answer posted again at the next start, longer after a
// crash that cut off its first attempt, may show twice (Slack's PostOnce
// looks for its key in the thread instead).
//
// # Code blocks
//
// Text is sent as written, but for code blocks (Text): Discord knows ```
// fences only and ends a block at the next ``` wherever it stands, so a
// block fenced with ~~~ or ```` is sent fenced with ```, and backtick runs
// inside a block are broken with a zero-width space. The bridge splits by
// the length of that text (Limits().Measure).
//
// # Rate limits and errors
//
// discordgo's built-in retry on 429 is off for the chat-facing calls (Post,
// Edit, React, Upload, SetStatus): a 429 comes back as *chat.RateLimitError
// with Discord's retry_after and whether it is global. discordgo also sleeps
// before a request when its bucket headers say the bucket is empty; those
// calls return *chat.RateLimitError instead of sleeping, so the outbox keeps
// control of its waits. The adapter's own bookkeeping calls (interaction
// answers, thread creation, catch-up reads, command registration) let
// discordgo wait and retry. Errors never carry request URLs (interaction
// tokens live in them) or the bot token.
package discord

// Package chat is the platform-neutral vocabulary between chat platforms and the
// bridge: who said what in which thread (Inbound, ThreadRef), what a platform
// adapter must do (Adapter) and may do (Editor, Reactor, Uploader, …), and how
// the bridge receives messages (Handler).
//
// Adapters do platform I/O only. They deliver every message to a Handler and
// acknowledge the platform's event only once Receive has made it durable.
//
// # Buttons
//
// A message may carry Actions (Actioner): buttons that stand for commands
// ("stop" for !stop) or links. The bridge says what they are; each adapter
// renders them its platform's way (Slack Block Kit buttons, Discord message
// components). A click on a command button reaches the Handler as an
// ordinary Inbound whose Text is "!" + Action.ID, with an EventID unique to
// the click (the same on every redelivery of it) and no MessageID: routing,
// de-duplication, allowlists and refusal notes are the same as for the
// command typed, and a click from someone not allowed is refused with a
// Whisper as a message would be. Link buttons open their URL in the
// person's browser and reach the bot, if at all, only to be acknowledged.
// An Action with Options is a select menu: a choice reaches the Handler as
// "!" + Action.ID + " " + the option's value, which the adapter took only
// if it is a ValidChoice among the options the message carries.
package chat

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// ThreadRef names one conversation on one platform. Its Key is the session key.
type ThreadRef struct {
	Platform string // "slack", "discord", "console", …
	Team     string // Slack team id, Discord guild id; "" for DMs
	Channel  string // the channel the thread lives in (Discord: the thread's id)
	Thread   string // Slack: the thread root ts; Discord: the thread's channel id
}

// Key is the stable identity of the thread across restarts.
func (r ThreadRef) Key() string {
	return r.Platform + "/" + r.Team + "/" + r.Channel + "/" + r.Thread
}

func (r ThreadRef) String() string { return r.Key() }

// Author is who wrote a message.
type Author struct {
	ID    string
	Name  string
	Email string // "" when the platform does not share it
	// Roles are the author's role ids (Discord), for allowed_roles.
	Roles []string
}

// Attachment is a file shared with a message. The bridge downloads it through
// the adapter's Downloader (with the platform's credentials) when the message is
// processed, which may be after a restart: so it is described, not opened.
// Where links expire (ExpiringDownloader) the bridge downloads it when it
// accepts the message instead, and Stored says where it keeps it.
type Attachment struct {
	Name     string `json:"name"`
	MimeType string `json:"mimeType"`
	Size     int64  `json:"size"`
	URL      string `json:"url"`
	// Stored is the file's path in its thread's scratch folder once the
	// bridge downloaded it on accepting the message; adapters leave it "".
	Stored string `json:"stored,omitempty"`
}

// Inbound is one message a person sent that may be input to a session.
type Inbound struct {
	Thread ThreadRef
	// EventID is the platform's id of the delivery (Slack event_id, Discord
	// interaction or message id); redeliveries carry the same one.
	EventID string
	// MessageID is the platform's id of the message (Slack ts, Discord message
	// id): the target of acknowledgement reactions. Empty for slash commands.
	MessageID string
	Author    Author
	// Text is the message as the person typed it: an adapter whose platform
	// escapes text (Slack's &amp; &lt; &gt;, <@U…>, <url|label>) hands it on
	// unescaped, once, and escapes only what it sends. Mention markup left in
	// the text (Discord's <@id>) is converted for the model by the adapter's
	// PlainText, if any.
	Text string
	// Mention says the bot was addressed (Slack app_mention, Discord /code): it
	// opens a session in a thread that has none. Other messages only reach
	// threads that already have one.
	Mention bool
	// DM says the message came from a direct conversation with the bot.
	DM bool
	// Parent is the channel a thread hangs off when the thread is a channel
	// of its own (Discord): the channel mappings name it. "" means
	// Thread.Channel.
	Parent string
	// Repo is a repository named explicitly by the platform's command (Discord
	// /code repo:); "repo=<name>" in the text of a first message works too.
	Repo        string
	Attachments []Attachment
	Time        time.Time
}

// Limits are a platform's message limits.
type Limits struct {
	// MaxMessageChars is where long text is split (Slack 3,500 for readability,
	// Discord 2,000), counted on the text as the platform receives it.
	MaxMessageChars int
	// Measure is the length of Markdown text as the adapter sends it, in the
	// platform's characters: Slack's mrkdwn escapes &, < and > into
	// entities, so "a<b" costs 6. Nil means the text is sent as it is (rune
	// count).
	Measure func(markdown string) int
	// MaxChoices is how many options a select menu shows (Slack 100,
	// Discord 25); 0 for a platform without select menus.
	MaxChoices int
}

// Adapter connects the bridge to one chat platform: it does platform I/O only.
// Optional capabilities are separate one-method interfaces below; the bridge
// uses them when an adapter implements them.
type Adapter interface {
	// Platform names the platform ("slack", "discord", "console").
	Platform() string
	// Run connects and delivers messages to h until ctx ends. It acknowledges a
	// platform event only after h.Receive returned without error.
	Run(ctx context.Context, h Handler) error
	// Post writes a message (Markdown) into a thread and returns its id.
	Post(ctx context.Context, thread ThreadRef, text string) (id string, err error)
	Limits() Limits
}

// Editor edits a message the bot posted. On an adapter that is also an
// Actioner, an edit leaves the message without buttons: only SetActions
// gives it some.
type Editor interface {
	Edit(ctx context.Context, thread ThreadRef, id, text string) error
}

// Action is a button on a message: a command the thread runs when it is
// clicked, or a link.
type Action struct {
	// ID names the command ("stop", "diff", "pr"): a click arrives as the
	// Inbound text "!" + ID. Lower-case letters only, so that a click can
	// never be read as anything but that command.
	ID string
	// Label is the button's text.
	Label string
	// URL, when set, makes the button a link that opens in the browser;
	// its click is not input.
	URL string
	// Danger marks a destructive action (Stop), shown in red where the
	// platform can.
	Danger bool
	// Options, when set, make the action a select menu whose placeholder
	// is Label (Slack static_select, Discord string select): choosing an
	// option arrives as the Inbound text ChoiceText(ID, value). An adapter
	// shows the first Limits.MaxChoices options (the bridge says where
	// there are more) and leaves out an option whose value is not
	// ValidChoice; a choice is taken only if its value is ValidChoice and
	// one of the options of the message it was made on.
	Options []Option
}

// SameActions says whether a and b are the same actions, options and all.
func SameActions(a, b []Action) bool {
	return slices.EqualFunc(a, b, func(x, y Action) bool {
		return x.ID == y.ID && x.Label == y.Label && x.URL == y.URL && x.Danger == y.Danger && slices.Equal(x.Options, y.Options)
	})
}

// Option is one choice of a select menu.
type Option struct {
	// Value is what choosing it sends: ValidChoice.
	Value string
	// Label is what the menu shows; adapters cut it to the platform's
	// limit.
	Label string
}

// Actioner replaces the buttons of a message the bot posted (none removes
// them). text is the message's current text: platforms replace a message's
// content and components together, so the adapter sends both.
type Actioner interface {
	SetActions(ctx context.Context, thread ThreadRef, id, text string, actions []Action) error
}

// ValidActionID says whether id may name an Action: 1 to 32 lower-case
// ASCII letters. Adapters check clicks with it, so that no payload can turn
// a click into other input.
func ValidActionID(id string) bool {
	if id == "" || len(id) > 32 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 'a' || id[i] > 'z' {
			return false
		}
	}
	return true
}

// ActionText is the Inbound text of a click on the command button id.
func ActionText(id string) string { return "!" + id }

// MaxChoiceLen is the longest option value a select menu takes: Discord's
// limit (Slack's is 150).
const MaxChoiceLen = 100

// ValidChoice says whether v may be an Option's value: 1 to MaxChoiceLen
// ASCII letters, digits, '.', '_' or '-', starting with a letter, digit or
// '_'. With a valid action id, ChoiceText is then that command and one word,
// whatever the payload of a choice says.
func ValidChoice(v string) bool {
	if v == "" || len(v) > MaxChoiceLen || v[0] == '.' || v[0] == '-' {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// MenuOptions are the options a select menu of act shows: its first n
// whose value is ValidChoice, each Label "" or blank given its Value.
func MenuOptions(act Action, n int) []Option {
	var opts []Option
	for _, o := range act.Options {
		if len(opts) == n {
			break
		}
		if !ValidChoice(o.Value) {
			continue
		}
		if strings.TrimSpace(o.Label) == "" {
			o.Label = o.Value
		}
		opts = append(opts, o)
	}
	return opts
}

// MenuPlaceholder is what a select menu of act shows before a choice: its
// Label, or "Choose…" when that is blank.
func MenuPlaceholder(act Action) string {
	if strings.TrimSpace(act.Label) == "" {
		return "Choose…"
	}
	return act.Label
}

// ChoiceText is the Inbound text of choosing value in the select menu id.
func ChoiceText(id, value string) string { return "!" + id + " " + value }

// ParentFinder tells the channel a thread hangs off where a thread is a
// channel of its own (Discord), for input that does not carry it
// (Inbound.Parent): "" when there is none or it cannot be told.
type ParentFinder interface {
	ParentChannel(ctx context.Context, thread ThreadRef) string
}

// Reactor adds and removes the bot's reactions. Emoji are Slack-style names
// ("hourglass_flowing_sand", "arrow_right_hook", "eyes"); adapters translate.
type Reactor interface {
	React(ctx context.Context, thread ThreadRef, messageID, emoji string, add bool) error
}

// Uploader attaches a file to a thread.
type Uploader interface {
	Upload(ctx context.Context, thread ThreadRef, filename string, content []byte, comment string) error
}

// OnceUploader uploads so that an upload repeated after a failure of
// unknown outcome (a timeout: the platform may have shared the file) shows
// once, as OncePoster does for posts. The outbox uses it instead of
// Uploader.Upload when an adapter implements it; key.Notify is unused.
type OnceUploader interface {
	UploadOnce(ctx context.Context, thread ThreadRef, filename string, content []byte, comment string, key PostKey) error
}

// StatusSetter shows that the bot is working (Slack assistant status, Discord
// typing). An empty status clears it. The bridge calls it again every few seconds
// while working, because some platforms expire it.
type StatusSetter interface {
	SetStatus(ctx context.Context, thread ThreadRef, status string) error
}

// TitledStatusSetter is a StatusSetter whose platform can name the work too
// (Slack's agent sessions carry a title). SetTitledStatus is SetStatus with
// title, the request being worked on as its author wrote it.
type TitledStatusSetter interface {
	SetTitledStatus(ctx context.Context, thread ThreadRef, status, title string) error
}

// Whisperer sends a note only one person sees, in answer to a message of
// theirs (Slack ephemeral messages, Discord ephemeral replies or a direct
// message). The adapter picks where the person will see it; the note never
// names or pings anyone in public.
type Whisperer interface {
	Whisper(ctx context.Context, to Inbound, text string) error
}

// OncePoster posts so that a post repeated after a failure of unknown outcome
// (a timeout: the platform may have created the message) shows once. The
// outbox uses it instead of Adapter.Post when an adapter implements it.
type OncePoster interface {
	PostOnce(ctx context.Context, thread ThreadRef, text string, key PostKey) (id string, err error)
}

// Opener starts a thread of the bot's own: it posts text (Markdown) as a new
// top-level message in channel and returns the thread that message starts
// (Slack: the message's ts is the thread's root; Discord: a thread is
// started from the message). The bridge opens threads for work that does
// not begin in chat (a schedule's firing, an issue).
type Opener interface {
	Open(ctx context.Context, channel, text string) (ThreadRef, error)
}

// OnceOpener opens so that an opening repeated after a failure of unknown
// outcome (key.Retry: a timeout, or a process that died after posting)
// opens one thread: the adapter first looks for the message it posted for
// key.ID since key.First and, found, returns its thread. The bridge uses it
// instead of Opener.Open when an adapter implements it; key.Notify and
// key.Stream are unused.
type OnceOpener interface {
	OpenOnce(ctx context.Context, channel, text string, key PostKey) (ThreadRef, error)
}

// PostKey identifies one message across the attempts to post it.
type PostKey struct {
	// ID is unique to the message and the same on every attempt (at most 25
	// characters: Discord's nonce).
	ID string
	// Retry says an earlier attempt may have been posted.
	Retry bool
	// First is when the first attempt was made.
	First time.Time
	// Notify is the id of a person the message mentions with the bot's own
	// mention (Slack <@U…>, Discord <@id> with allowed_mentions naming only
	// them), added by the adapter in front of the text: the person who asked
	// for a long run, told it ended. Mentions in the text itself stay inert.
	Notify string
	// Stream says the message will grow through edits (a run's status): an
	// adapter may post it as a stream and turn edits that only add text
	// into appends.
	Stream bool
}

// Streamer is an adapter that may stream messages (chat.PostKey.Stream):
// Streaming says whether message id is being streamed now, so that its
// edits (appends) draw from a budget of their own. It must not block.
type Streamer interface {
	Streaming(thread ThreadRef, id string) bool
}

// HistoryReader returns the human conversation of a thread before a message,
// oldest first, for the first mention in a thread that already has one.
type HistoryReader interface {
	History(ctx context.Context, thread ThreadRef, beforeID string) ([]HistoryMessage, error)
}

// HistoryMessage is one earlier message of a thread.
type HistoryMessage struct {
	Author Author
	Text   string
	Time   time.Time
}

// Linker gives a link to a thread, for commit messages.
type Linker interface {
	Permalink(ctx context.Context, thread ThreadRef) (string, error)
}

// Downloader fetches a shared file's content (Slack url_private with the bot
// token, Discord CDN URLs).
type Downloader interface {
	Download(ctx context.Context, url string) (io.ReadCloser, error)
}

// ExpiringDownloader is a Downloader whose links stop working after a while
// (Discord's CDN links are signed for about a day): a message queued behind a
// long run, or waiting out an outage, would lose its files. The bridge
// downloads them when it accepts the message, before storing it.
type ExpiringDownloader interface {
	Downloader
	LinksExpire() bool
}

// MarkupConverter turns the mention markup an adapter leaves in Inbound.Text
// (Discord's <@id>, <#id>, <:emoji:id>) into plain text for the model.
type MarkupConverter interface {
	PlainText(ctx context.Context, text string) string
}

// RateLimitError is returned by adapter calls the platform refused for rate
// limiting. The outbox waits RetryAfter and tries again.
type RateLimitError struct {
	RetryAfter time.Duration
	// Global says the limit applies to every call, not only to this route.
	Global bool
}

func (e *RateLimitError) Error() string {
	return fmt.Sprintf("rate limited; retry after %s", e.RetryAfter)
}

// IsRateLimit reports whether err is a *RateLimitError and returns it.
func IsRateLimit(err error) (*RateLimitError, bool) {
	var rl *RateLimitError
	ok := errors.As(err, &rl)
	return rl, ok
}

// Handler is what adapters deliver to: the bridge.
type Handler interface {
	// Receive makes the message durable and schedules it. It returns once the
	// message is committed (the adapter may then acknowledge the platform event)
	// or failed (the adapter must not acknowledge, so the platform redelivers).
	// Messages that are not input (a thread without session and no mention, a
	// duplicate) return a Receipt saying so and no error.
	Receive(ctx context.Context, in Inbound) (Receipt, error)
	// Describe resolves the repository and branch a new session started by
	// in would use (Discord shows them in the /code starter message): in.Repo
	// may be "". A name that place may not open, whether a repository or
	// not, is a *NotAllowedError whose note lists the ones open there; other
	// errors (no repository configured) may be said publicly.
	Describe(in Inbound) (repoName, branch string, err error)
	// ActiveThreads lists this platform's threads that have a session and were
	// active lately (a day), with the id of the newest message seen in each,
	// so that after a reconnect the adapter can fetch what was typed during
	// the gap (and Receive it; Receive de-duplicates). Dormant threads are left
	// out: a reconnect costs API calls per thread listed.
	ActiveThreads(ctx context.Context) ([]ThreadCursor, error)
}

// NotAllowedError is the operator's policy refusing a request (a repository
// the channel may not open). Its text is a note for the person who asked,
// meant to be shown to them alone.
type NotAllowedError struct{ Note string }

func (e *NotAllowedError) Error() string { return e.Note }

// ThreadCloser is implemented by handlers that want to hear of threads the
// platform no longer has (deleted, or the bot was removed from them), so
// that catching up stops asking for them.
type ThreadCloser interface {
	CloseThread(ctx context.Context, thread ThreadRef) error
}

// ThreadCursor is a thread and the newest message id seen in it.
type ThreadCursor struct {
	Thread   ThreadRef
	LastSeen string
}

// Receipt says what Receive did with a message.
type Receipt int

const (
	Accepted  Receipt = iota + 1 // durable and scheduled
	Duplicate                    // seen before (redelivery); nothing to do
	Ignored                      // not input (no session and no mention, a bot, …)
	Refused                      // the author is not allowed; they were told privately
)

func (r Receipt) String() string {
	switch r {
	case Accepted:
		return "accepted"
	case Duplicate:
		return "duplicate"
	case Ignored:
		return "ignored"
	case Refused:
		return "refused"
	}
	return "unknown"
}

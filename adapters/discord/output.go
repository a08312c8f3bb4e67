package discord

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"

	"github.com/threadsmith/threadsmith/chat"
)

// mentionsIn is what the bot's messages in a conversation may ping: no
// @everyone, @here or role, and no user but the requester (the last person
// whose input the handler accepted there), however the model spells a
// mention. Parse is empty, not nil, so that it is sent as [].
func (a *Adapter) mentionsIn(channelID string) *discordgo.MessageAllowedMentions {
	am := &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}}
	if user, ok := a.requesters.Load(channelID); ok {
		am.Users = []string{user}
	}
	return am
}

// noteRequester records who asked in a conversation, once the handler took
// their input.
func (a *Adapter) noteRequester(in chat.Inbound, rc chat.Receipt) {
	if rc == chat.Accepted && in.Author.ID != "" {
		a.requesters.Store(in.Thread.Channel, in.Author.ID)
	}
}

// Post implements chat.Adapter. text is Markdown of at most MaxMessageChars
// as sent (Measure); see Text.
func (a *Adapter) Post(ctx context.Context, thread chat.ThreadRef, text string) (string, error) {
	return a.PostOnce(ctx, thread, text, chat.PostKey{})
}

// messageCreate is the body of a new message: discordgo's MessageSend has no
// nonce fields.
type messageCreate struct {
	Content         string                            `json:"content"`
	AllowedMentions *discordgo.MessageAllowedMentions `json:"allowed_mentions"`
	Flags           discordgo.MessageFlags            `json:"flags,omitempty"`
	Nonce           string                            `json:"nonce,omitempty"`
	EnforceNonce    bool                              `json:"enforce_nonce,omitempty"`
}

// PostOnce implements chat.OncePoster with Discord's nonce: with
// enforce_nonce, a second message with the same nonce from the bot within a
// few minutes is not created, and the first one is returned instead. So a
// post retried after a timeout shows once.
func (a *Adapter) PostOnce(ctx context.Context, thread chat.ThreadRef, text string, key chat.PostKey) (string, error) {
	return a.postOnce(ctx, thread, text, key, a.mentionsIn(thread.Channel))
}

// postOnce is PostOnce with what the message may ping (am) when key.Notify
// names nobody.
func (a *Adapter) postOnce(ctx context.Context, thread chat.ThreadRef, text string, key chat.PostKey, am *discordgo.MessageAllowedMentions) (string, error) {
	body := messageCreate{Content: Text(text), AllowedMentions: am, Flags: noEmbeds}
	if isSnowflake(key.Notify) {
		// The bot's own mention of the person to tell, the only one the
		// message may ping.
		body.Content = "<@" + key.Notify + "> " + body.Content
		body.AllowedMentions = &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}, Users: []string{key.Notify}}
	}
	if key.ID != "" {
		body.Nonce, body.EnforceNonce = truncateRunes(key.ID, maxNonce), true
	}
	route := discordgo.EndpointChannelMessages(thread.Channel)
	var m discordgo.Message
	err := a.chatCall(ctx, "post", route, func(opts ...discordgo.RequestOption) error {
		raw, err := a.s.RequestWithBucketID(http.MethodPost, route, body, route, opts...)
		if err != nil {
			return err
		}
		return json.Unmarshal(raw, &m)
	})
	if err != nil {
		return "", err
	}
	return m.ID, nil
}

// isSnowflake says whether s is a Discord id (digits only).
func isSnowflake(s string) bool {
	if s == "" || len(s) > 20 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// noEmbeds are the flags of the bot's messages: no link previews, which
// Discord would make by fetching every URL the model wrote as soon as the
// message shows, with no one clicking (a URL could carry the workspace's
// code to any server).
const noEmbeds = discordgo.MessageFlagsSuppressEmbeds

// maxNonce is the longest nonce Discord takes.
const maxNonce = 25

// Edit implements chat.Editor.
func (a *Adapter) Edit(ctx context.Context, thread chat.ThreadRef, id, text string) error {
	text = Text(text)
	return a.chatCall(ctx, "edit", discordgo.EndpointChannelMessage(thread.Channel, ""), func(opts ...discordgo.RequestOption) error {
		// No components: an edit of text alone leaves no buttons (the
		// outbox edits a message with buttons through SetActions; a
		// message adopted after a restart loses those of the run cut off).
		none := []discordgo.MessageComponent{}
		_, err := a.s.ChannelMessageEditComplex(&discordgo.MessageEdit{
			ID: id, Channel: thread.Channel, Content: &text, Components: &none, AllowedMentions: a.mentionsIn(thread.Channel), Flags: noEmbeds,
		}, opts...)
		return err
	})
}

// React implements chat.Reactor. Slack-style names ("eyes") are translated to
// the Unicode emoji Discord wants; an emoji itself, or a custom emoji as
// name:id, is used as it is.
func (a *Adapter) React(ctx context.Context, thread chat.ThreadRef, messageID, emoji string, add bool) error {
	e, err := discordEmoji(emoji)
	if err != nil {
		return err
	}
	bucket := reactionBucket(thread.Channel)
	method := http.MethodPut
	if !add {
		method = http.MethodDelete
	}
	// Emoji such as #⃣ need their # escaped, as discordgo does.
	route := discordgo.EndpointMessageReaction(thread.Channel, messageID, strings.ReplaceAll(e, "#", "%23"), "@me")
	return a.chatCall(ctx, "react", bucket, func(opts ...discordgo.RequestOption) error {
		_, err := a.s.RequestWithBucketID(method, route, nil, bucket, opts...)
		return err
	})
}

// reactionBucket is the discordgo rate-limit bucket of a channel's reactions.
// discordgo's own key for them (…//reactions//) makes its limiter apply a
// fixed one per 200 ms and ignore Discord's rate-limit headers, while Discord
// allows one per 250 ms per channel: the preflight then lets reactions through
// that Discord answers with 429. Under a key of our own the bucket follows
// the headers, like every other route.
func reactionBucket(channelID string) string {
	return discordgo.EndpointChannelMessages(channelID) + "/reactions"
}

// Upload implements chat.Uploader: a message with the file attached and the
// comment as its text.
func (a *Adapter) Upload(ctx context.Context, thread chat.ThreadRef, filename string, content []byte, comment string) error {
	return a.UploadOnce(ctx, thread, filename, content, comment, chat.PostKey{})
}

// uploadCreate is the payload_json of a message with a file: discordgo's
// MessageSend has no nonce fields.
type uploadCreate struct {
	Content         string                            `json:"content"`
	AllowedMentions *discordgo.MessageAllowedMentions `json:"allowed_mentions"`
	Nonce           string                            `json:"nonce,omitempty"`
	EnforceNonce    bool                              `json:"enforce_nonce,omitempty"`
}

// UploadOnce implements chat.OnceUploader as PostOnce does: the multipart
// message carries the key as its nonce with enforce_nonce, so an upload
// retried after a timeout is created once.
func (a *Adapter) UploadOnce(ctx context.Context, thread chat.ThreadRef, filename string, content []byte, comment string, key chat.PostKey) error {
	body := uploadCreate{Content: truncateRunes(comment, MaxMessageChars), AllowedMentions: a.mentionsIn(thread.Channel)}
	if key.ID != "" {
		body.Nonce, body.EnforceNonce = truncateRunes(key.ID, maxNonce), true
	}
	route := discordgo.EndpointChannelMessages(thread.Channel)
	return a.chatCall(ctx, "upload", route, func(opts ...discordgo.RequestOption) error {
		// A fresh reader per attempt: discordgo's own retries resend it.
		files := []*discordgo.File{{Name: filename, ContentType: contentType(filename), Reader: bytes.NewReader(content)}}
		ctype, data, err := discordgo.MultipartBodyWithJSON(body, files)
		if err != nil {
			return err
		}
		_, err = a.s.RequestRaw(http.MethodPost, route, ctype, data, route, 0, opts...)
		return err
	})
}

// SetStatus implements chat.StatusSetter with the typing indicator, which
// Discord shows for about ten seconds (the bridge repeats it) and clears when
// the bot posts. An empty status sends nothing: typing cannot be cleared.
func (a *Adapter) SetStatus(ctx context.Context, thread chat.ThreadRef, status string) error {
	if status == "" {
		return nil
	}
	return a.chatCall(ctx, "typing", discordgo.EndpointChannelTyping(thread.Channel), func(opts ...discordgo.RequestOption) error {
		return a.s.ChannelTyping(thread.Channel, opts...)
	})
}

// contentType guesses a file's type from its name; diffs are text/x-diff so
// that Discord previews them.
func contentType(name string) string {
	switch ext := strings.ToLower(path.Ext(name)); ext {
	case ".diff", ".patch":
		return "text/x-diff"
	case "":
		return "application/octet-stream"
	default:
		if t := mime.TypeByExtension(ext); t != "" {
			return t
		}
		return "application/octet-stream"
	}
}

// emojiByName translates the Slack-style names the bridge uses (and a few
// more) to Unicode.
var emojiByName = map[string]string{
	"hourglass_flowing_sand": "⏳",
	"hourglass":              "⌛",
	"arrow_right_hook":       "↪️",
	"eyes":                   "👀",
	"white_check_mark":       "✅",
	"heavy_check_mark":       "✔️",
	"x":                      "❌",
	"no_entry":               "⛔",
	"warning":                "⚠️",
	"octagonal_sign":         "🛑",
	"stop_sign":              "🛑",
	"thumbsup":               "👍",
	"+1":                     "👍",
	"thumbsdown":             "👎",
	"-1":                     "👎",
	"rocket":                 "🚀",
	"tada":                   "🎉",
	"repeat":                 "🔁",
	"memo":                   "📝",
	"thinking_face":          "🤔",
}

// discordEmoji is the emoji Discord's reaction routes take for name.
func discordEmoji(name string) (string, error) {
	n := strings.Trim(name, ":")
	if e, ok := emojiByName[n]; ok {
		return e, nil
	}
	if n == "" {
		return "", fmt.Errorf("discord: react: empty emoji")
	}
	for _, r := range n {
		if r >= utf8.RuneSelf {
			return n, nil // already an emoji
		}
	}
	if strings.Contains(n, ":") {
		return n, nil // a custom emoji, name:id
	}
	return "", fmt.Errorf("discord: react: unknown emoji name %q", name)
}

package slack

import (
	"context"
	"strings"
	"unicode/utf8"

	slackapi "github.com/slack-go/slack"

	"github.com/threadsmith/threadsmith/chat"
)

// With slack.streaming "auto", a run's status message (a post with
// chat.PostKey.Stream) is started with chat.startStream, and its edits that
// only add text at its end become chat.appendStream calls of the added text.
// An edit that changes what was already shown (a tool line turning from
// running to done, the working line going away), that would take the
// message past maxTextRunes, or that comes after Slack stopped the stream,
// stops the stream and goes out as a chat.update of the whole text, as
// without streaming. A workspace that refuses chat.startStream for any
// reason but a rate limit is remembered: its messages are posted and edited
// from then on, and the log says so once.
//
// Streamed text is Markdown (markdown_text) escaped as every text the bot
// sends: &, < and > become entities, so that nothing the model writes is
// read as Slack markup (<!channel>, <@U…>), and the words Slack turns into
// mentions on their own (@channel, @here, @everyone) get a word joiner
// after their @. Each append is a suffix of what the next text renders to,
// so that it never splits an entity, and the whole stream stays within
// maxTextRunes, as a post does.

// liveStream is a message the adapter is streaming. Its fields belong to
// the calls for its message (Edit, SetActions), which the outbox makes one
// at a time; streamMu guards the maps that hold it, not its fields.
type liveStream struct {
	// sent is the rendered text Slack shows: what chat.startStream and the
	// appends carried.
	sent string
	// buttons says the message's buttons were streamed into it: actions.
	buttons bool
	actions []chat.Action
	// unsure says an append failed without an answer: it may have been
	// added, so the next edit replaces the whole text.
	unsure bool
}

// streamOn says whether posts in thread may be streamed.
func (a *Adapter) streamOn(thread chat.ThreadRef) bool {
	if !a.cfg.Streaming || thread.Thread == "" {
		return false
	}
	a.streamMu.Lock()
	defer a.streamMu.Unlock()
	return !a.noStream[thread.Team]
}

// maxAskers bounds the memory of who last wrote in each thread.
const maxAskers = 10000

// noteAsker remembers user as the person who last wrote in thread: the
// recipient Slack requires of a stream outside a DM.
func (a *Adapter) noteAsker(thread chat.ThreadRef, user string) {
	if !a.cfg.Streaming || !isUserID(user) {
		return
	}
	a.streamMu.Lock()
	defer a.streamMu.Unlock()
	if len(a.askers) >= maxAskers {
		clear(a.askers)
	}
	a.askers[thread.Key()] = user
}

var mentionWords = strings.NewReplacer("@channel", "@\u2060channel", "@here", "@\u2060here", "@everyone", "@\u2060everyone")

// streamBody is the markdown_text of Markdown md.
func streamBody(md string) string { return mentionWords.Replace(escapeText(md)) }

func streamKey(channel, ts string) string { return channel + "/" + ts }

// startStream posts text as a stream. ok is false when the message is not
// streamed (the caller posts it): no recipient is known, it is too long, or
// the workspace refuses streams. A rate limit or a call without an answer
// is returned with ok true: the outbox tries again.
func (a *Adapter) startStream(ctx context.Context, thread chat.ThreadRef, text string) (ts string, ok bool, err error) {
	body := streamBody(text)
	if body == "" || utf8.RuneCountInString(body) > maxTextRunes {
		return "", false, nil
	}
	team := thread.Team
	if team == "" {
		id, err := a.identity(ctx)
		if err != nil {
			return "", true, err
		}
		team = id.TeamID
	}
	a.streamMu.Lock()
	user := a.askers[thread.Key()]
	a.streamMu.Unlock()
	if user == "" {
		return "", false, nil
	}
	_, ts, err = a.api.StartStreamContext(ctx, thread.Channel, slackapi.MsgOptionTS(thread.Thread),
		slackapi.MsgOptionRecipientUserID(user), slackapi.MsgOptionRecipientTeamID(team),
		slackapi.MsgOptionMarkdownText(body))
	if err != nil {
		if rateLimit(err) != nil || slackCode(err) == "" {
			return "", true, apiError("chat.startStream", err)
		}
		a.streamMu.Lock()
		first := !a.noStream[thread.Team]
		a.noStream[thread.Team] = true
		a.streamMu.Unlock()
		if first {
			a.log.Info("slack: streaming refused in this workspace; editing messages instead", "team", thread.Team, "error", slackCode(err))
		}
		return "", false, nil
	}
	a.streamMu.Lock()
	a.streams[streamKey(thread.Channel, ts)] = &liveStream{sent: body}
	a.streamMu.Unlock()
	return ts, true, nil
}

// Streaming implements chat.Streamer.
func (a *Adapter) Streaming(thread chat.ThreadRef, id string) bool {
	return a.liveStreamOf(thread.Channel, id) != nil
}

// liveStreamOf returns the stream of message id, or nil.
func (a *Adapter) liveStreamOf(channel, id string) *liveStream {
	a.streamMu.Lock()
	defer a.streamMu.Unlock()
	return a.streams[streamKey(channel, id)]
}

// appendStream brings stream id up to text by appending what text adds,
// with the buttons of actions (none: left as they are) streamed after it
// the first time. done is false when the message must be edited instead:
// the stream was stopped (by this call or by Slack) and forgotten.
func (a *Adapter) appendStream(ctx context.Context, thread chat.ThreadRef, id string, s *liveStream, text string, actions []chat.Action) (done bool, err error) {
	body := streamBody(text)
	var buttons []slackapi.Block
	if !s.buttons {
		if b := buttonsBlock(actions); b != nil {
			buttons = []slackapi.Block{b}
		}
	}
	if s.unsure || !strings.HasPrefix(body, s.sent) || utf8.RuneCountInString(body) > maxTextRunes {
		return a.stopStream(ctx, thread, id)
	}
	delta := body[len(s.sent):]
	if delta == "" && buttons == nil {
		return true, nil
	}
	var opts []slackapi.MsgOption
	if buttons != nil {
		chunks := []slackapi.StreamChunk{}
		if delta != "" {
			chunks = append(chunks, slackapi.NewMarkdownTextChunk(delta))
		}
		opts = append(opts, slackapi.MsgOptionChunks(append(chunks, slackapi.NewBlocksChunk(buttons...))...))
	} else {
		opts = append(opts, slackapi.MsgOptionMarkdownText(delta))
	}
	_, _, err = a.api.AppendStreamContext(ctx, thread.Channel, id, opts...)
	switch {
	case err == nil:
		s.sent = body
		if buttons != nil {
			s.buttons, s.actions = true, actions
		}
		return true, nil
	case rateLimit(err) != nil:
		// Nothing was added: the outbox sends the latest text later, and
		// its append carries everything not shown yet.
		return true, apiError("chat.appendStream", err)
	case slackCode(err) == "":
		s.unsure = true
		return true, apiError("chat.appendStream", err)
	}
	a.forgetStream(thread.Channel, id)
	return false, nil
}

// stopStream ends stream id, so that the message can be edited; done is
// true with a rate limit or no answer (the outbox tries again).
func (a *Adapter) stopStream(ctx context.Context, thread chat.ThreadRef, id string) (done bool, err error) {
	_, _, err = a.api.StopStreamContext(ctx, thread.Channel, id)
	if err != nil && (rateLimit(err) != nil || slackCode(err) == "") {
		return true, apiError("chat.stopStream", err)
	}
	// Stopped now, or already (message_not_in_streaming_state): an edit
	// from here on.
	a.forgetStream(thread.Channel, id)
	return false, nil
}

func (a *Adapter) forgetStream(channel, id string) {
	a.streamMu.Lock()
	delete(a.streams, streamKey(channel, id))
	a.streamMu.Unlock()
}

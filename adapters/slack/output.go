package slack

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	slackapi "github.com/slack-go/slack"

	"github.com/threadsmith/threadsmith/chat"
)

// render is the text the adapter sends for Markdown md.
func render(md string) string { return fitText(Mrkdwn(md)) }

// postKeyEvent is the metadata event type that carries a post's key.
const postKeyEvent = "threadsmith_post"

// textOptions are the options of every text the bot sends: the mrkdwn of
// text, at most maxTextRunes, with parse=none and link_names off, so that
// Slack turns no plain "@channel" or "@team" into a mention (chat.update
// parses as a client would unless told otherwise).
func textOptions(text string) []slackapi.MsgOption {
	return mentionOptions(text, "")
}

// mentionOptions are textOptions with the bot's own mention of user (a
// chat.PostKey.Notify) in front, when user is a Slack user id; the
// 4,000-character cap counts it.
func mentionOptions(text, user string) []slackapi.MsgOption {
	rendered := render(text)
	if isUserID(user) {
		rendered = fitText("<@" + user + "> " + Mrkdwn(text))
	}
	return []slackapi.MsgOption{
		slackapi.MsgOptionText(rendered, false),
		slackapi.MsgOptionParse(false),
		slackapi.MsgOptionLinkNames(false),
	}
}

// Post writes Markdown into the thread as Slack mrkdwn and returns the new
// message's ts. Replies stay in the thread; they are never broadcast.
func (a *Adapter) Post(ctx context.Context, thread chat.ThreadRef, text string) (string, error) {
	return a.post(ctx, thread, text, chat.PostKey{})
}

// PostOnce implements chat.OncePoster. Slack has no idempotency key, so each
// post carries its key in the message's metadata, and a retry after a call
// that failed without an answer first looks for the bot's message with that
// key among the thread's messages since the first attempt: found, it is the
// post, and nothing is posted twice.
func (a *Adapter) PostOnce(ctx context.Context, thread chat.ThreadRef, text string, key chat.PostKey) (string, error) {
	if key.Stream && !key.Retry && key.Notify == "" && a.streamOn(thread) {
		ts, ok, err := a.startStream(ctx, thread, text)
		if ok {
			return ts, err
		}
	}
	if key.Retry {
		ts, err := a.findPosted(ctx, thread, key)
		if err != nil {
			return "", err
		}
		if ts != "" {
			a.log.Info("slack: a post that seemed to fail had gone through; not posting it again", "thread", thread.Key())
			return ts, nil
		}
	}
	return a.post(ctx, thread, text, key)
}

// isUserID says whether s looks like a Slack user id (U… or W…, letters and
// digits): what may go inside the bot's own <@…>.
func isUserID(s string) bool {
	if len(s) < 2 || (s[0] != 'U' && s[0] != 'W') {
		return false
	}
	for _, c := range s {
		if (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

func (a *Adapter) post(ctx context.Context, thread chat.ThreadRef, text string, key chat.PostKey) (string, error) {
	// No previews: Slack would fetch the links the model wrote (media ones
	// by default) the moment the message is posted, with no one clicking, so
	// a URL could carry the workspace's code to any server.
	opts := append(mentionOptions(text, key.Notify), slackapi.MsgOptionDisableLinkUnfurl(), slackapi.MsgOptionDisableMediaUnfurl())
	if thread.Thread != "" {
		opts = append(opts, slackapi.MsgOptionTS(thread.Thread))
	}
	if key.ID != "" {
		opts = append(opts, slackapi.MsgOptionMetadata(slackapi.SlackMetadata{
			EventType: postKeyEvent, EventPayload: map[string]any{"key": key.ID},
		}))
	}
	_, ts, err := a.api.PostMessageContext(ctx, thread.Channel, opts...)
	if err != nil {
		return "", apiError("chat.postMessage", err)
	}
	return ts, nil
}

// lookBack is how much earlier than the first attempt findPosted looks, for
// the difference between the clock that timed the first attempt (this
// machine's, or the replica's that stored the post) and Slack's: well past
// the five minutes a clock may be off or step by.
const lookBack = 15 * time.Minute

// findPosted returns the ts of the bot's message carrying key in the thread
// (or the channel's top level), or "".
func (a *Adapter) findPosted(ctx context.Context, thread chat.ThreadRef, key chat.PostKey) (string, error) {
	id, err := a.identity(ctx)
	if err != nil {
		return "", err
	}
	return a.findMessage(ctx, thread, key.First, func(m slackapi.Message) bool {
		return (m.User == id.UserID || (id.BotID != "" && m.BotID == id.BotID)) &&
			m.Metadata.EventType == postKeyEvent && m.Metadata.EventPayload["key"] == key.ID
	})
}

// findMessage returns the ts of the first message of the thread (or of the
// channel's top level) since first (lookBack earlier; all of them when first
// is zero) that match accepts, or "".
func (a *Adapter) findMessage(ctx context.Context, thread chat.ThreadRef, first time.Time, match func(slackapi.Message) bool) (string, error) {
	oldest := ""
	if !first.IsZero() {
		oldest = strconv.FormatInt(first.Add(-lookBack).Unix(), 10) + ".000000"
	}
	var cursor string
	for {
		var msgs []slackapi.Message
		var more bool
		var method string
		var err error
		if thread.Thread != "" {
			method = "conversations.replies"
			msgs, more, cursor, err = a.api.GetConversationRepliesContext(ctx, &slackapi.GetConversationRepliesParameters{
				ChannelID: thread.Channel, Timestamp: thread.Thread, Oldest: oldest, Cursor: cursor,
				Limit: repliesPage, IncludeAllMetadata: true,
			})
		} else {
			method = "conversations.history"
			var res *slackapi.GetConversationHistoryResponse
			res, err = a.api.GetConversationHistoryContext(ctx, &slackapi.GetConversationHistoryParameters{
				ChannelID: thread.Channel, Oldest: oldest, Cursor: cursor, Limit: repliesPage, IncludeAllMetadata: true,
			})
			if res != nil {
				msgs, more, cursor = res.Messages, res.HasMore, res.ResponseMetaData.NextCursor
			}
		}
		if err != nil {
			return "", apiError(method, err)
		}
		for _, m := range msgs {
			if match(m) {
				return m.Timestamp, nil
			}
		}
		if !more || cursor == "" {
			return "", nil
		}
	}
}

// Edit replaces the text of a message the bot posted, and takes away its
// buttons, if any: Slack shows a message's blocks rather than its text, so
// a message edited with text alone must have none (the outbox edits a
// message with buttons through SetActions; a message adopted after a
// restart loses the buttons of the run that was cut off).
func (a *Adapter) Edit(ctx context.Context, thread chat.ThreadRef, id, text string) error {
	if s := a.liveStreamOf(thread.Channel, id); s != nil {
		if done, err := a.appendStream(ctx, thread, id, s, text, nil); done {
			return err
		}
	}
	opts := append(textOptions(text), slackapi.MsgOptionBlocks())
	_, _, _, err := a.api.UpdateMessageContext(ctx, thread.Channel, id, opts...)
	return apiError("chat.update", err)
}

// React adds or removes the bot's reaction on a message. Adding a reaction the
// bot already made, or removing one it did not, succeeds: the bridge asks for
// a state, not a change.
func (a *Adapter) React(ctx context.Context, thread chat.ThreadRef, messageID, emoji string, add bool) error {
	item := slackapi.NewRefToMessage(thread.Channel, messageID)
	name := strings.Trim(emoji, ":")
	if add {
		err := a.api.AddReactionContext(ctx, name, item)
		if slackCode(err) == "already_reacted" {
			return nil
		}
		return apiError("reactions.add", err)
	}
	err := a.api.RemoveReactionContext(ctx, name, item)
	if slackCode(err) == "no_reaction" {
		return nil
	}
	return apiError("reactions.remove", err)
}

// Upload shares a file in the thread (files upload v2: getUploadURLExternal,
// the upload, completeUploadExternal), with comment (Markdown) as its message.
func (a *Adapter) Upload(ctx context.Context, thread chat.ThreadRef, filename string, content []byte, comment string) error {
	return a.UploadOnce(ctx, thread, filename, content, comment, chat.PostKey{})
}

// uploadedFiles are the files the attempts of one upload were given ids
// for, and when the first was.
type uploadedFiles struct {
	ids   []string
	since time.Time
}

// uploadMemory is how long the adapter remembers the files of an upload
// for its retries: far longer than the outbox retries.
const uploadMemory = time.Hour

// UploadOnce implements chat.OnceUploader. Slack has no
// idempotency key for uploads, but getUploadURLExternal names the file
// before anything is shared: the adapter remembers the ids each attempt was
// given, and a retry after an attempt that failed without an answer first
// looks for those files among the thread's messages since the first
// attempt. Found, the file is in the thread and nothing is shared twice.
func (a *Adapter) UploadOnce(ctx context.Context, thread chat.ThreadRef, filename string, content []byte, comment string, key chat.PostKey) error {
	if len(content) == 0 {
		return errors.New("slack: upload: " + filename + " is empty; Slack refuses empty files")
	}
	if key.Retry && key.ID != "" {
		a.upMu.Lock()
		ids := slices.Clone(a.upFiles[key.ID].ids)
		a.upMu.Unlock()
		if len(ids) > 0 {
			found, err := a.findFile(ctx, thread, ids, key.First)
			if err != nil {
				return err
			}
			if found {
				a.forgetUpload(key.ID)
				a.log.Info("slack: an upload that seemed to fail had gone through; not sharing it again", "thread", thread.Key())
				return nil
			}
		}
	}
	u, err := a.api.GetUploadURLExternalContext(ctx, slackapi.GetUploadURLExternalParameters{FileName: filename, FileSize: len(content)})
	if err != nil {
		return apiError("files.getUploadURLExternal", err)
	}
	if key.ID != "" {
		a.rememberUpload(key.ID, u.FileID)
	}
	if err := a.api.UploadToURL(ctx, slackapi.UploadToURLParameters{
		UploadURL: u.UploadURL, Reader: bytes.NewReader(content), Filename: filename,
	}); err != nil {
		return apiError("files upload", err)
	}
	params := slackapi.CompleteUploadExternalParameters{
		Files:   []slackapi.FileSummary{{ID: u.FileID, Title: filename}},
		Channel: thread.Channel, ThreadTimestamp: thread.Thread,
	}
	if comment != "" {
		// files.completeUploadExternal has no parse option; the comment is
		// the bridge's own text (a stat line), escaped like every other.
		params.InitialComment = render(comment)
	}
	if _, err := a.api.CompleteUploadExternalContext(ctx, params); err != nil {
		return apiError("files.completeUploadExternal", err)
	}
	if key.ID != "" {
		a.forgetUpload(key.ID)
	}
	return nil
}

// rememberUpload notes that an attempt of the upload key made file id, and
// forgets uploads older than uploadMemory.
func (a *Adapter) rememberUpload(key, id string) {
	now := a.now()
	a.upMu.Lock()
	defer a.upMu.Unlock()
	for k, f := range a.upFiles {
		if now.Sub(f.since) > uploadMemory {
			delete(a.upFiles, k)
		}
	}
	f := a.upFiles[key]
	if f.since.IsZero() {
		f.since = now
	}
	f.ids = append(f.ids, id)
	a.upFiles[key] = f
}

func (a *Adapter) forgetUpload(key string) {
	a.upMu.Lock()
	delete(a.upFiles, key)
	a.upMu.Unlock()
}

// findFile says whether a message of the thread (or of the channel's top
// level) since first carries one of the files ids. File ids are Slack's
// own, given to this adapter alone: no one else's message can carry them
// unless the file was shared.
func (a *Adapter) findFile(ctx context.Context, thread chat.ThreadRef, ids []string, first time.Time) (bool, error) {
	ts, err := a.findMessage(ctx, thread, first, func(m slackapi.Message) bool {
		return slices.ContainsFunc(m.Files, func(f slackapi.File) bool { return slices.Contains(ids, f.ID) })
	})
	return ts != "", err
}

// SetStatus shows that the bot works in the thread (status), or that it is
// done ("").
func (a *Adapter) SetStatus(ctx context.Context, thread chat.ThreadRef, status string) error {
	return a.SetTitledStatus(ctx, thread, status, "")
}

// SetTitledStatus implements chat.TitledStatusSetter. By default status shows
// under the thread's composer, Slack's assistant "is working…" line
// (assistant.threads.setStatus, which every app with chat:write may call;
// status is also its one loading message), "" clearing it. With
// slack.agent_sessions (an app declared as an agent) the thread's agent
// session is "processing" instead, titled from title when this call creates
// it, and "closed" when status is ""; Slack then shows its own stop button
// (agent_session_stopped in inbound.go). A processing session already set is
// not set again: agent sessions do not expire.
//
// Where Slack refuses agent sessions for any reason but a rate limit, the
// adapter says so once (INFO) and uses the assistant status in that
// workspace from then on; where the assistant status is not allowed in a
// channel, it stops asking there. A rate limit is returned (the outbox drops
// the status rather than wait).
func (a *Adapter) SetTitledStatus(ctx context.Context, thread chat.ThreadRef, status, title string) error {
	if thread.Thread == "" {
		return nil
	}
	a.statusMu.Lock()
	skip, noAgent := a.noStatus[thread.Channel], a.noAgent[thread.Team]
	a.statusMu.Unlock()
	if a.cfg.AgentSessions && !noAgent {
		done, err := a.setAgentStatus(ctx, thread, status, title)
		if done {
			return err
		}
	}
	if skip {
		return nil
	}
	params := slackapi.AssistantThreadsSetStatusParameters{ChannelID: thread.Channel, ThreadTS: thread.Thread, Status: status}
	if status != "" {
		// slack-go sends the list comma-separated.
		params.LoadingMessages = []string{strings.ReplaceAll(status, ",", " ")}
	}
	err := a.api.SetAssistantThreadsStatusContext(ctx, params)
	switch code := slackCode(err); code {
	case "not_allowed", "missing_scope", "not_allowed_token_type", "channel_type_not_supported":
		a.statusMu.Lock()
		a.noStatus[thread.Channel] = true
		a.statusMu.Unlock()
		a.log.Info("slack: assistant status not allowed here; not asking again", "channel", thread.Channel, "error", code)
		return nil
	}
	return apiError("assistant.threads.setStatus", err)
}

// maxTitleRunes bounds an agent session's title: the first line of the
// request, cut with an ellipsis.
const maxTitleRunes = 80

// sessionTitle is the title of a session working on request.
func sessionTitle(request string) string {
	line := strings.TrimSpace(request)
	if i := strings.IndexByte(line, '\n'); i >= 0 {
		line = strings.TrimSpace(line[:i])
	}
	line = strings.Join(strings.Fields(line), " ")
	if r := []rune(line); len(r) > maxTitleRunes {
		line = strings.TrimSpace(string(r[:maxTitleRunes-1])) + "…"
	}
	return line
}

// setAgentStatus sets the thread's agent session: processing (created with
// title if it is new) while status is not "", closed after. done is false
// when Slack refused agent sessions (for any reason but a rate limit):
// remembered for the workspace, so that the caller and every later call use
// the assistant status.
func (a *Adapter) setAgentStatus(ctx context.Context, thread chat.ThreadRef, status, title string) (done bool, err error) {
	st := slackapi.AgentSessionStatusProcessing
	if status == "" {
		st = slackapi.AgentSessionStatusClosed
	}
	key := thread.Key()
	a.statusMu.Lock()
	same := a.agentShown[key] == st
	a.statusMu.Unlock()
	if same && st == slackapi.AgentSessionStatusProcessing {
		return true, nil
	}
	params := slackapi.AgentSessionSetStatusParameters{Status: st, ChannelID: thread.Channel, ThreadTS: thread.Thread}
	if st == slackapi.AgentSessionStatusProcessing {
		params.Title = sessionTitle(title)
	}
	res, err := a.api.SetAgentSessionStatusContext(ctx, params)
	if err != nil {
		if rateLimit(err) != nil || slackCode(err) == "" {
			// A rate limit or no answer: not a refusal.
			return true, apiError("agents.sessions.setStatus", err)
		}
		a.statusMu.Lock()
		delete(a.agentShown, key)
		first := !a.noAgent[thread.Team]
		a.noAgent[thread.Team] = true
		a.statusMu.Unlock()
		if first {
			a.log.Info("slack: agent sessions refused in this workspace; using the assistant status (declare the app as an agent, see slack-app-manifest-agent.yaml)",
				"team", thread.Team, "error", slackCode(err))
		}
		return false, nil
	}
	a.statusMu.Lock()
	if st == slackapi.AgentSessionStatusClosed {
		delete(a.agentShown, key)
	} else {
		a.agentShown[key] = st
	}
	warned := a.agentWarned
	if res != nil && res.Warning != "" {
		a.agentWarned = true
	}
	a.statusMu.Unlock()
	if res != nil && res.Warning != "" && !warned {
		// Without the agent_session_stopped subscription Slack shows no
		// stop button.
		a.log.Warn("slack: agents.sessions.setStatus warns; subscribe the app to agent_session_stopped", "warning", res.Warning)
	}
	return true, nil
}

// Whisper sends a note (Markdown) only the author of to sees, where they will
// see it. Slack shows an ephemeral message posted into a thread only when the
// thread has replies: the note of a message that is a thread's root (a
// top-level mention, which the bot leaves unanswered) goes to the channel
// itself, and a note about a reply goes into its thread.
func (a *Adapter) Whisper(ctx context.Context, to chat.Inbound, text string) error {
	opts := textOptions(text)
	// A click was on a button of the bot's message in the thread, which
	// therefore has replies.
	click := strings.HasPrefix(to.EventID, clickEventPrefix)
	if th := to.Thread.Thread; th != "" && (click || to.MessageID != "" && to.MessageID != th) {
		opts = append(opts, slackapi.MsgOptionTS(th))
	}
	_, err := a.api.PostEphemeralContext(ctx, to.Thread.Channel, to.Author.ID, opts...)
	return apiError("chat.postEphemeral", err)
}

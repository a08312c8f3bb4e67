package slack

import (
	"bytes"
	"context"
	"errors"
	"strings"

	slackapi "github.com/slack-go/slack"

	"github.com/threadsmith/threadsmith/chat"
)

// Post writes Markdown into the thread as Slack mrkdwn and returns the new
// message's ts. Replies stay in the thread; they are never broadcast.
func (a *Adapter) Post(ctx context.Context, thread chat.ThreadRef, text string) (string, error) {
	opts := []slackapi.MsgOption{slackapi.MsgOptionText(fitText(Mrkdwn(text)), false)}
	if thread.Thread != "" {
		opts = append(opts, slackapi.MsgOptionTS(thread.Thread))
	}
	_, ts, err := a.api.PostMessageContext(ctx, thread.Channel, opts...)
	if err != nil {
		return "", apiError("chat.postMessage", err)
	}
	return ts, nil
}

// Edit replaces the text of a message the bot posted.
func (a *Adapter) Edit(ctx context.Context, thread chat.ThreadRef, id, text string) error {
	_, _, _, err := a.api.UpdateMessageContext(ctx, thread.Channel, id,
		slackapi.MsgOptionText(fitText(Mrkdwn(text)), false))
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
	if len(content) == 0 {
		return errors.New("slack: upload: " + filename + " is empty; Slack refuses empty files")
	}
	params := slackapi.UploadFileParameters{
		Filename: filename, Title: filename, FileSize: len(content), Reader: bytes.NewReader(content),
		Channel: thread.Channel, ThreadTimestamp: thread.Thread,
	}
	if comment != "" {
		params.InitialComment = fitText(Mrkdwn(comment))
	}
	_, err := a.api.UploadFileContext(ctx, params)
	return apiError("files upload", err)
}

// SetStatus shows status under the thread's composer (Slack's assistant
// "is working…" line); "" clears it. Slack allows it only in some
// conversations: where it answered not_allowed (or the app lacks the scope),
// the adapter stops asking and SetStatus quietly does nothing.
func (a *Adapter) SetStatus(ctx context.Context, thread chat.ThreadRef, status string) error {
	if thread.Thread == "" {
		return nil
	}
	a.statusMu.Lock()
	skip := a.noStatus[thread.Channel]
	a.statusMu.Unlock()
	if skip {
		return nil
	}
	err := a.api.SetAssistantThreadsStatusContext(ctx, slackapi.AssistantThreadsSetStatusParameters{
		ChannelID: thread.Channel, ThreadTS: thread.Thread, Status: status,
	})
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

// Whisper sends a note (Markdown) only userID sees, in the thread.
func (a *Adapter) Whisper(ctx context.Context, thread chat.ThreadRef, userID, text string) error {
	opts := []slackapi.MsgOption{slackapi.MsgOptionText(fitText(Mrkdwn(text)), false)}
	if thread.Thread != "" {
		opts = append(opts, slackapi.MsgOptionTS(thread.Thread))
	}
	_, err := a.api.PostEphemeralContext(ctx, thread.Channel, userID, opts...)
	return apiError("chat.postEphemeral", err)
}

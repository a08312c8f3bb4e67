package slackfake_test

import (
	"strings"
	"testing"

	"github.com/slack-go/slack"

	slackfake "github.com/threadsmith/threadsmith/internal/fakes/slack"
)

// TestStreamingMethods plays the streaming protocol against the fake as
// Slack documents it: a reply in a thread to a named recipient, appends of
// at most 12,000 characters, nothing after the stop.
func TestStreamingMethods(t *testing.T) {
	srv := slackfake.New(t, slackfake.WithoutBotEcho())
	api := newAPI(srv)
	root := srv.Mention("C0DEV", "U0ALICE", "go", "")
	recipient := []slack.MsgOption{slack.MsgOptionRecipientUserID("U0ALICE"), slack.MsgOptionRecipientTeamID("T0FAKE0001")}

	if _, _, err := api.StartStream("C0DEV", append(recipient, slack.MsgOptionMarkdownText("top level"))...); slackError(err) != "invalid_arguments" {
		t.Errorf("chat.startStream outside a thread: %v, want invalid_arguments", err)
	}
	if _, _, err := api.StartStream("C0DEV", slack.MsgOptionTS(root), slack.MsgOptionMarkdownText("no recipient")); slackError(err) != "invalid_arguments" {
		t.Errorf("chat.startStream in a channel without a recipient: %v, want invalid_arguments", err)
	}
	if _, _, err := api.StartStream("C0DEV", append(recipient, slack.MsgOptionTS(root), slack.MsgOptionMarkdownText(strings.Repeat("x", 12001)))...); slackError(err) != "msg_too_long" {
		t.Errorf("chat.startStream of 12,001 characters: %v, want msg_too_long", err)
	}
	_, ts, err := api.StartStream("C0DEV", append(recipient, slack.MsgOptionTS(root), slack.MsgOptionMarkdownText("one "))...)
	if err != nil {
		t.Fatalf("chat.startStream: %v", err)
	}
	if _, _, err := api.AppendStream("C0DEV", ts, slack.MsgOptionMarkdownText("two ")); err != nil {
		t.Fatalf("chat.appendStream: %v", err)
	}
	if _, _, err := api.AppendStream("C0DEV", ts, slack.MsgOptionMarkdownText(strings.Repeat("é", 12001))); slackError(err) != "msg_too_long" {
		t.Errorf("chat.appendStream of 12,001 characters: %v, want msg_too_long", err)
	}
	if _, _, err := api.AppendStream("C0DEV", ts); slackError(err) != "invalid_arguments" {
		t.Errorf("chat.appendStream without text: %v, want invalid_arguments", err)
	}
	if _, _, err := api.AppendStream("C0DEV", ts, slack.MsgOptionChunks(slack.TaskUpdateChunk{Type: slack.StreamChunkTaskUpdate})); slackError(err) != "invalid_chunks" {
		t.Errorf("chat.appendStream with a task without id and title: %v, want invalid_chunks", err)
	}
	if _, _, err := api.AppendStream("C0DEV", ts, slack.MsgOptionChunks(slack.NewMarkdownTextChunk("three"), slack.NewTaskUpdateChunk("t1", "bash"))); err != nil {
		t.Errorf("chat.appendStream with chunks: %v", err)
	}
	if _, _, err := api.StopStream("C0DEV", ts); err != nil {
		t.Fatalf("chat.stopStream: %v", err)
	}
	if _, _, err := api.AppendStream("C0DEV", ts, slack.MsgOptionMarkdownText("late")); slackError(err) != "message_not_in_streaming_state" {
		t.Errorf("chat.appendStream after the stop: %v, want message_not_in_streaming_state", err)
	}
	if _, _, err := api.StopStream("C0DEV", ts); slackError(err) != "message_not_in_streaming_state" {
		t.Errorf("chat.stopStream twice: %v, want message_not_in_streaming_state", err)
	}
	if _, _, err := api.AppendStream("C0DEV", root, slack.MsgOptionMarkdownText("x")); slackError(err) != "message_not_owned_by_app" {
		t.Errorf("chat.appendStream to a person's message: %v, want message_not_owned_by_app", err)
	}
	msgs := srv.Messages("C0DEV", root)
	if got := msgs[len(msgs)-1].Text; got != "one two three" {
		t.Errorf("streamed message = %q, want %q", got, "one two three")
	}
}

func TestStreamingRefusedByTheWorkspace(t *testing.T) {
	srv := slackfake.New(t, slackfake.WithoutBotEcho(), slackfake.WithoutStreaming("not_allowed"))
	api := newAPI(srv)
	root := srv.Mention("C0DEV", "U0ALICE", "go", "")
	_, _, err := api.StartStream("C0DEV", slack.MsgOptionTS(root), slack.MsgOptionRecipientUserID("U0ALICE"),
		slack.MsgOptionRecipientTeamID("T0FAKE0001"), slack.MsgOptionMarkdownText("x"))
	if slackError(err) != "not_allowed" {
		t.Errorf("chat.startStream where streaming is not offered: %v, want not_allowed", err)
	}
}

// Slack reads a streamed message as a whole: mention markup split across
// appends notifies as if appended in one piece.
func TestStreamedMentionSplitAcrossAppendsNotifies(t *testing.T) {
	srv := slackfake.New(t, slackfake.WithoutBotEcho())
	api := newAPI(srv)
	root := srv.Mention("C0DEV", "U0ALICE", "go", "")
	_, ts, err := api.StartStream("C0DEV", slack.MsgOptionTS(root), slack.MsgOptionRecipientUserID("U0ALICE"),
		slack.MsgOptionRecipientTeamID("T0FAKE0001"), slack.MsgOptionMarkdownText("hi <!chan"))
	if err != nil {
		t.Fatalf("chat.startStream: %v", err)
	}
	if n := srv.Notices(); len(n) != 0 {
		t.Fatalf("notices after half the markup = %+v, want none", n)
	}
	if _, _, err := api.AppendStream("C0DEV", ts, slack.MsgOptionMarkdownText("nel> all")); err != nil {
		t.Fatalf("chat.appendStream: %v", err)
	}
	if n := srv.Notices(); len(n) != 1 || len(n[0].Special) != 1 || n[0].Special[0] != "channel" {
		t.Errorf("notices = %+v, want one of @channel", n)
	}
	if _, _, err := api.AppendStream("C0DEV", ts, slack.MsgOptionMarkdownText(" more")); err != nil {
		t.Fatalf("chat.appendStream: %v", err)
	}
	if n := srv.Notices(); len(n) != 1 {
		t.Errorf("notices after plain text = %+v, want still the one", n)
	}
}

// Streamed markdown is read for mentions as a markdown block is: a plain
// @here in markdown_text notifies, as written <!here> markup does.
func TestStreamedPlainMentionNotifies(t *testing.T) {
	srv := slackfake.New(t, slackfake.WithoutBotEcho())
	api := newAPI(srv)
	root := srv.Mention("C0DEV", "U0ALICE", "go", "")
	_, ts, err := api.StartStream("C0DEV", slack.MsgOptionTS(root), slack.MsgOptionRecipientUserID("U0ALICE"),
		slack.MsgOptionRecipientTeamID("T0FAKE0001"), slack.MsgOptionMarkdownText("hi"))
	if err != nil {
		t.Fatalf("chat.startStream: %v", err)
	}
	if _, _, err := api.AppendStream("C0DEV", ts, slack.MsgOptionMarkdownText(" @here look")); err != nil {
		t.Fatalf("chat.appendStream: %v", err)
	}
	if n := srv.Notices(); len(n) != 1 || len(n[0].Special) != 1 || n[0].Special[0] != "here" {
		t.Errorf("notices = %+v, want one of @here", n)
	}
}

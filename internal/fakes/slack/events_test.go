package slackfake_test

import (
	"testing"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	slackfake "github.com/threadsmith/threadsmith/internal/fakes/slack"
)

// nextMessage returns the next event, which must be a message event.
func (c *client) nextMessage(t *testing.T) *slackevents.MessageEvent {
	t.Helper()
	ev, req := c.nextEvent(t)
	if err := c.sm.Ack(*req); err != nil {
		t.Fatal(err)
	}
	m, ok := ev.InnerEvent.Data.(*slackevents.MessageEvent)
	if !ok {
		t.Fatalf("event %T, want *slackevents.MessageEvent", ev.InnerEvent.Data)
	}
	return m
}

func TestScenarioEventShapes(t *testing.T) {
	srv := slackfake.New(t)
	c := startClient(t, srv)

	root := srv.UserMessage("C0DEV", "U0ALICE", "original", "")
	if m := c.nextMessage(t); m.SubType != "" || m.User != "U0ALICE" || m.Text != "original" {
		t.Errorf("user message = %+v", m)
	}

	srv.EditMessage("C0DEV", root, "edited")
	m := c.nextMessage(t)
	if m.SubType != "message_changed" || m.Message == nil || m.Message.Text != "edited" || m.Message.Timestamp != root ||
		m.Message.Edited == nil || m.PreviousMessage == nil || m.PreviousMessage.Text != "original" {
		t.Errorf("message_changed = %+v (message %+v), want edited text with previous_message", m, m.Message)
	}

	reply := srv.UserMessage("C0DEV", "U0BOB", "reply", root)
	c.nextMessage(t)
	srv.DeleteMessage("C0DEV", reply)
	if m := c.nextMessage(t); m.SubType != "message_deleted" || m.DeletedTimeStamp != reply || m.PreviousMessage == nil {
		t.Errorf("message_deleted = %+v, want deleted_ts %s", m, reply)
	}

	srv.ChannelJoin("C0DEV", "U0CAROL")
	if m := c.nextMessage(t); m.SubType != "channel_join" || m.User != "U0CAROL" {
		t.Errorf("channel_join = %+v", m)
	}

	srv.BotMessage("C0DEV", "B0OTHER", "beep", "")
	if m := c.nextMessage(t); m.SubType != "bot_message" || m.BotID != "B0OTHER" {
		t.Errorf("bot_message = %+v", m)
	}

	dm, ts := srv.DM("U0ALICE", "psst")
	if m := c.nextMessage(t); m.ChannelType != "im" || m.Channel != dm || m.TimeStamp != ts || dm[0] != 'D' {
		t.Errorf("DM event = %+v, want channel_type im in %s", m, dm)
	}
	if dm2 := srv.DMChannel("U0ALICE"); dm2 != dm {
		t.Errorf("DMChannel = %s, want the same im %s", dm2, dm)
	}

	// The bot's own posts, edits and deletions come back as events.
	_, posted, err := c.api.PostMessage("C0DEV", slack.MsgOptionText("bot says", false), slack.MsgOptionTS(root))
	if err != nil {
		t.Fatal(err)
	}
	if m := c.nextMessage(t); m.BotID != srv.BotID() || m.User != srv.BotUserID() || m.TimeStamp != posted || m.ThreadTimeStamp != root {
		t.Errorf("echo of the bot's post = %+v, want bot_id %s user %s", m, srv.BotID(), srv.BotUserID())
	}
	if _, _, _, err := c.api.UpdateMessage("C0DEV", posted, slack.MsgOptionText("bot said", false)); err != nil {
		t.Fatal(err)
	}
	if m := c.nextMessage(t); m.SubType != "message_changed" || m.Message.BotID != srv.BotID() || m.Message.Text != "bot said" {
		t.Errorf("echo of the bot's edit = %+v", m)
	}
	if _, _, err := c.api.DeleteMessage("C0DEV", posted); err != nil {
		t.Fatal(err)
	}
	if m := c.nextMessage(t); m.SubType != "message_deleted" || m.DeletedTimeStamp != posted {
		t.Errorf("echo of the bot's delete = %+v", m)
	}
	if err := srv.WaitAllAcked(testContext(t)); err != nil {
		t.Fatal(err)
	}
}

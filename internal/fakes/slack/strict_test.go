package slackfake_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	slackfake "github.com/threadsmith/threadsmith/internal/fakes/slack"
)

func TestTextLimitsPerMethod(t *testing.T) {
	srv := slackfake.New(t, slackfake.WithoutBotEcho())
	api := newAPI(srv)
	root := srv.Mention("C0DEV", "U0ALICE", "go", "")
	_, ts, err := api.PostMessage("C0DEV", slack.MsgOptionText(strings.Repeat("é", 40000), false), slack.MsgOptionTS(root))
	if err != nil {
		t.Fatalf("chat.postMessage of 40,000 characters: %v, want accepted", err)
	}
	if _, _, err := api.PostMessage("C0DEV", slack.MsgOptionText(strings.Repeat("é", 40001), false)); slackError(err) != "msg_too_long" {
		t.Errorf("chat.postMessage of 40,001 characters: %v, want msg_too_long", err)
	}
	if _, _, _, err := api.UpdateMessage("C0DEV", ts, slack.MsgOptionText(strings.Repeat("x", 4000), false)); err != nil {
		t.Errorf("chat.update of 4,000 characters: %v, want accepted", err)
	}
	if _, _, _, err := api.UpdateMessage("C0DEV", ts, slack.MsgOptionText(strings.Repeat("x", 4001), false)); slackError(err) != "msg_too_long" {
		t.Errorf("chat.update of 4,001 characters: %v, want msg_too_long", err)
	}
}

func TestEphemeralVisibility(t *testing.T) {
	srv := slackfake.New(t, slackfake.WithoutBotEcho())
	api := newAPI(srv)
	lonely := srv.Mention("C0DEV", "U0ALICE", "no replies here", "")
	busy := srv.Mention("C0DEV", "U0ALICE", "a thread", "")
	reply := srv.UserMessage("C0DEV", "U0BOB", "a reply", busy)
	for _, thread := range []string{lonely, busy, reply, ""} {
		opts := []slack.MsgOption{slack.MsgOptionText("note", false)}
		if thread != "" {
			opts = append(opts, slack.MsgOptionTS(thread))
		}
		if _, err := api.PostEphemeral("C0DEV", "U0ALICE", opts...); err != nil {
			t.Fatal(err)
		}
	}
	var got []bool
	for _, e := range srv.Ephemerals() {
		got = append(got, e.Visible)
	}
	if want := []bool{false, true, true, true}; !slices.Equal(got, want) {
		t.Errorf("visible = %v, want %v (thread without replies, thread, reply, channel)", got, want)
	}
}

func TestNoticesRecordWhoWouldBeNotified(t *testing.T) {
	srv := slackfake.New(t, slackfake.WithoutBotEcho())
	srv.AddUserGroup("S0DEVS", "devs")
	api := newAPI(srv)
	root := srv.Mention("C0DEV", "U0ALICE", "go", "")
	post := func(text string, opts ...slack.MsgOption) string {
		t.Helper()
		_, ts, err := api.PostMessage("C0DEV", append([]slack.MsgOption{slack.MsgOptionText(text, false), slack.MsgOptionTS(root)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
	post("quiet: &lt;!channel&gt; @channel <https://x.io|<@U0> not a mention>")
	loud := post("hey <!here|here> <@U0BOB> <!subteam^S0DEVS|@devs> `<!everyone>`")
	post("@channel and @devs", slack.MsgOptionParse(true), slack.MsgOptionLinkNames(true))
	// chat.update parses like a client unless told parse=none.
	if _, _, _, err := api.UpdateMessage("C0DEV", loud, slack.MsgOptionText("@here again", false)); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := api.UpdateMessage("C0DEV", loud, slack.MsgOptionText("@here again", false), slack.MsgOptionParse(false)); err != nil {
		t.Fatal(err)
	}

	got := srv.Notices()
	if len(got) != 3 {
		t.Fatalf("notices = %+v, want 3 (not the quiet post, not the update with parse=none)", got)
	}
	check := func(i int, method string, special, groups, users []string) {
		t.Helper()
		n := got[i]
		if n.Method != method || !slices.Equal(n.Special, special) || !slices.Equal(n.Groups, groups) || !slices.Equal(n.Users, users) {
			t.Errorf("notice %d = %s %+v, want %s special %v groups %v users %v", i, n.Method, n.Mentioned, method, special, groups, users)
		}
	}
	// A code span does not protect <!everyone>; a < inside a link's label
	// (the quiet post) is part of the link, which ends at the first >.
	check(0, "chat.postMessage", []string{"here", "everyone"}, []string{"S0DEVS"}, []string{"U0BOB"})
	check(1, "chat.postMessage", []string{"channel"}, []string{"S0DEVS"}, nil)
	check(2, "chat.update", []string{"here"}, nil, nil)

	// A mrkdwn section that is not verbatim parses "@channel" on its own,
	// whatever parse the message says; a verbatim one does not.
	section := func(verbatim bool) slack.MsgOption {
		return slack.MsgOptionBlocks(slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, "@channel look", false, verbatim), nil, nil))
	}
	before := len(srv.Notices())
	post("x", section(true), slack.MsgOptionParse(false))
	post("x", section(false), slack.MsgOptionParse(false))
	if got := srv.Notices()[before:]; len(got) != 1 || !slices.Equal(got[0].Special, []string{"channel"}) {
		t.Errorf("notices for the sections %+v, want one, @channel, for the one not verbatim", got)
	}
}

func TestMissingScope(t *testing.T) {
	srv := slackfake.New(t, slackfake.WithoutBotEcho(), slackfake.WithScopes("chat:write", "channels:history", "users:read"))
	srv.AddUser(slackfake.User{ID: "U0ALICE", Name: "alice", Email: "alice@example.com"})
	api := newAPI(srv)
	root := srv.Mention("C0DEV", "U0ALICE", "go", "")
	if _, _, err := api.PostMessage("C0DEV", slack.MsgOptionText("hi", false), slack.MsgOptionTS(root)); err != nil {
		t.Errorf("chat.postMessage with chat:write: %v", err)
	}
	if err := api.AddReaction("eyes", slack.NewRefToMessage("C0DEV", root)); slackError(err) != "missing_scope" {
		t.Errorf("reactions.add without reactions:write: %v, want missing_scope", err)
	}
	if _, _, _, err := api.GetConversationReplies(&slack.GetConversationRepliesParameters{ChannelID: "C0DEV", Timestamp: root}); err != nil {
		t.Errorf("conversations.replies in a public channel with channels:history: %v", err)
	}
	dmChannel, dm := srv.DM("U0ALICE", "hello")
	if _, _, _, err := api.GetConversationReplies(&slack.GetConversationRepliesParameters{ChannelID: dmChannel, Timestamp: dm}); slackError(err) != "missing_scope" {
		t.Errorf("conversations.replies in a DM without im:history: %v, want missing_scope", err)
	}
	u, err := api.GetUserInfo("U0ALICE")
	if err != nil {
		t.Fatal(err)
	}
	if u.Profile.Email != "" {
		t.Errorf("users.info without users:read.email gave the email %q", u.Profile.Email)
	}
	if c := srv.CallsTo("reactions.add")[0]; c.Error != "missing_scope" {
		t.Errorf("recorded reactions.add error %q, want missing_scope", c.Error)
	}
}

func TestEveryMethodIsRateLimited(t *testing.T) {
	clock := slackfake.NewManualClock(time.Unix(1700000000, 0))
	l := slackfake.SlackRateLimits()
	srv := slackfake.New(t, slackfake.WithoutBotEcho(), slackfake.WithRateLimits(l), slackfake.WithClock(clock.Now))
	api := newAPI(srv)
	root := srv.Mention("C0DEV", "U0ALICE", "go", "")
	// reactions.remove is Tier 2: 20 a minute.
	for i := range 20 {
		if err := api.RemoveReaction("eyes", slack.NewRefToMessage("C0DEV", root)); slackError(err) != "no_reaction" {
			t.Fatalf("reactions.remove %d: %v, want no_reaction (not limited yet)", i, err)
		}
	}
	err := api.RemoveReaction("eyes", slack.NewRefToMessage("C0DEV", root))
	var rl *slack.RateLimitedError
	if !errors.As(err, &rl) || rl.RetryAfter != 3*time.Second {
		t.Errorf("21st reactions.remove in a minute: %v, want rate limited for 3s", err)
	}
	clock.Advance(3 * time.Second)
	if err := api.RemoveReaction("eyes", slack.NewRefToMessage("C0DEV", root)); slackError(err) != "no_reaction" {
		t.Errorf("reactions.remove after the wait: %v", err)
	}
}

func TestLoseResponseNext(t *testing.T) {
	srv := slackfake.New(t, slackfake.WithoutBotEcho())
	api := newAPI(srv)
	root := srv.Mention("C0DEV", "U0ALICE", "go", "")
	srv.LoseResponseNext("chat.postMessage")
	if _, _, err := api.PostMessage("C0DEV", slack.MsgOptionText("did it?", false), slack.MsgOptionTS(root)); err == nil {
		t.Fatal("a lost response looked like a success")
	}
	msgs := srv.Messages("C0DEV", root)
	if last := msgs[len(msgs)-1]; last.Text != "did it?" {
		t.Errorf("last message %q, want the post made all the same", last.Text)
	}
	if c := srv.CallsTo("chat.postMessage")[0]; !c.Lost {
		t.Error("the call is not recorded as lost")
	}
	// Metadata comes back from history reads that ask for it.
	_, _, err := api.PostMessage("C0DEV", slack.MsgOptionText("tagged", false), slack.MsgOptionTS(root),
		slack.MsgOptionMetadata(slack.SlackMetadata{EventType: "k", EventPayload: map[string]any{"key": "v"}}))
	if err != nil {
		t.Fatal(err)
	}
	got, _, _, err := api.GetConversationReplies(&slack.GetConversationRepliesParameters{ChannelID: "C0DEV", Timestamp: root, IncludeAllMetadata: true})
	if err != nil {
		t.Fatal(err)
	}
	if m := got[len(got)-1]; m.Metadata.EventType != "k" || m.Metadata.EventPayload["key"] != "v" {
		t.Errorf("metadata read back %+v, want event k with key v", m.Metadata)
	}
	// An event_type with a dot: Slack posts the message with a warning and
	// drops the metadata.
	_, _, err = api.PostMessage("C0DEV", slack.MsgOptionText("mis-tagged", false), slack.MsgOptionTS(root),
		slack.MsgOptionMetadata(slack.SlackMetadata{EventType: "thread.post", EventPayload: map[string]any{"key": "v"}}))
	if err != nil {
		t.Fatal(err)
	}
	got, _, _, err = api.GetConversationReplies(&slack.GetConversationRepliesParameters{ChannelID: "C0DEV", Timestamp: root, IncludeAllMetadata: true})
	if err != nil {
		t.Fatal(err)
	}
	if m := got[len(got)-1]; m.Text != "mis-tagged" || m.Metadata.EventType != "" {
		t.Errorf("message read back %q with metadata %+v, want it posted without metadata", m.Text, m.Metadata)
	}
}

// A markdown block (its text a string, not a text object) is accepted up to
// 12,000 characters across a message's markdown blocks, and read for
// mentions as a client reads text: it has no parse option.
func TestMarkdownBlocks(t *testing.T) {
	srv := slackfake.New(t, slackfake.WithoutBotEcho())
	api := newAPI(srv)
	root := srv.Mention("C0DEV", "U0ALICE", "go", "")
	post := func(texts ...string) error {
		var blocks []slack.Block
		for _, s := range texts {
			blocks = append(blocks, slack.NewMarkdownBlock("", s))
		}
		_, _, err := api.PostMessage("C0DEV", slack.MsgOptionText("fallback", false), slack.MsgOptionBlocks(blocks...),
			slack.MsgOptionTS(root), slack.MsgOptionParse(false))
		return err
	}
	if err := post(strings.Repeat("a", 6000), strings.Repeat("b", 6000)); err != nil {
		t.Errorf("markdown blocks of 12,000 characters together: %v, want accepted", err)
	}
	if err := post(strings.Repeat("a", 6000), strings.Repeat("b", 6001)); slackError(err) != "invalid_blocks" {
		t.Errorf("markdown blocks of 12,001 characters together: %v, want invalid_blocks", err)
	}
	if err := post("**hi** @channel"); err != nil {
		t.Fatal(err)
	}
	if n := srv.Notices(); len(n) != 1 || !slices.Equal(n[0].Special, []string{"channel"}) {
		t.Errorf("notices %+v, want @channel for the markdown block, parse=none notwithstanding", n)
	}
}

func TestEphemeralNeedsAChannelMember(t *testing.T) {
	srv := slackfake.New(t, slackfake.WithoutBotEcho())
	api := newAPI(srv)
	srv.AddUser(slackfake.User{ID: "U0CAROL", Name: "carol"})
	root := srv.Mention("C0DEV", "U0ALICE", "hello", "")
	note := []slack.MsgOption{slack.MsgOptionText("note", false)}
	if _, err := api.PostEphemeral("C0DEV", "U0ALICE", note...); err != nil {
		t.Fatalf("to the author of a message: %v", err)
	}
	if _, err := api.PostEphemeral("C0DEV", "U0CAROL", note...); slackError(err) != "user_not_in_channel" {
		t.Errorf("to a user who never joined: %v, want user_not_in_channel", err)
	}
	srv.ChannelJoin("C0DEV", "U0CAROL")
	if _, err := api.PostEphemeral("C0DEV", "U0CAROL", append(note, slack.MsgOptionTS(root))...); err != nil {
		t.Errorf("after joining: %v", err)
	}
	srv.LeaveChannel("C0DEV", "U0ALICE")
	if _, err := api.PostEphemeral("C0DEV", "U0ALICE", note...); slackError(err) != "user_not_in_channel" {
		t.Errorf("after leaving: %v, want user_not_in_channel", err)
	}
	dm := srv.DMChannel("U0CAROL")
	if _, err := api.PostEphemeral(dm, "U0CAROL", note...); err != nil {
		t.Errorf("in the user's own im: %v", err)
	}
	if got := len(srv.Ephemerals()); got != 3 {
		t.Errorf("ephemerals = %d, want the 3 accepted", got)
	}
}

// A static_select Block Kit refuses is refused: 1 to 100 options, option
// text of at most 75 characters, values of at most 150, unique values.
func TestStaticSelectLimits(t *testing.T) {
	srv := slackfake.New(t, slackfake.WithoutBotEcho())
	api := newAPI(srv)
	root := srv.Mention("C0DEV", "U0ALICE", "go", "")
	post := func(n int, edit func([]*slack.OptionBlockObject)) error {
		var opts []*slack.OptionBlockObject
		for i := range n {
			v := "r" + strings.Repeat("x", i%5) + string(rune('a'+i%26)) + strings.Repeat("y", i/26)
			opts = append(opts, slack.NewOptionBlockObject(v, slack.NewTextBlockObject(slack.PlainTextType, v, false, false), nil))
		}
		if edit != nil {
			edit(opts)
		}
		sel := slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, slack.NewTextBlockObject(slack.PlainTextType, "Choose", false, false), "repo", opts...)
		_, _, err := api.PostMessage("C0DEV", slack.MsgOptionText("fallback", false), slack.MsgOptionBlocks(slack.NewActionBlock("b", sel)),
			slack.MsgOptionTS(root))
		return err
	}
	if err := post(100, nil); err != nil {
		t.Errorf("100 options: %v, want accepted", err)
	}
	for name, err := range map[string]error{
		"101 options":     post(101, nil),
		"no option":       post(0, nil),
		"text over 75":    post(2, func(o []*slack.OptionBlockObject) { o[0].Text.Text = strings.Repeat("t", 76) }),
		"value over 150":  post(2, func(o []*slack.OptionBlockObject) { o[0].Value = strings.Repeat("v", 151) }),
		"repeated values": post(2, func(o []*slack.OptionBlockObject) { o[1].Value = o[0].Value }),
		"markdown text":   post(2, func(o []*slack.OptionBlockObject) { o[0].Text.Type = slack.MarkdownType }),
	} {
		if slackError(err) != "invalid_blocks" {
			t.Errorf("%s: %v, want invalid_blocks", name, err)
		}
	}
}

package slackfake_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/slack-go/slack"

	slackfake "github.com/threadsmith/threadsmith/internal/fakes/slack"
)

func slackError(err error) string {
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		return se.Err
	}
	if err != nil {
		return "non-slack error: " + err.Error()
	}
	return ""
}

func TestAuthAndTokens(t *testing.T) {
	srv := slackfake.New(t, slackfake.WithBotUser("U0MYBOT", "mybot"), slackfake.WithTeam("T0ACME", "acme"))
	api := newAPI(srv)
	res, err := api.AuthTest()
	if err != nil {
		t.Fatal(err)
	}
	if res.UserID != "U0MYBOT" || res.User != "mybot" || res.TeamID != "T0ACME" || res.BotID != srv.BotID() {
		t.Errorf("auth.test = %+v, want user U0MYBOT mybot, team T0ACME, bot %s", res, srv.BotID())
	}

	bad := slack.New("xoxb-wrong", slack.OptionAPIURL(srv.APIURL()))
	if _, err := bad.AuthTest(); slackError(err) != "invalid_auth" {
		t.Errorf("auth.test with a wrong token: %v, want invalid_auth", err)
	}
	// Socket Mode needs the app-level token.
	botOnly := slack.New(srv.BotToken(), slack.OptionAPIURL(srv.APIURL()), slack.OptionAppLevelToken(srv.BotToken()))
	if _, _, err := botOnly.StartSocketModeContext(testContext(t)); slackError(err) != "not_allowed_token_type" {
		t.Errorf("apps.connections.open with the bot token: %v, want not_allowed_token_type", err)
	}
	resp, err := http.PostForm(srv.APIURL()+"chat.postMessage", url.Values{"channel": {"C0DEV"}, "text": {"hi"}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"not_authed"`) {
		t.Errorf("chat.postMessage without a token answered %s, want not_authed", body)
	}

	calls := srv.Calls()
	if len(calls) != 4 {
		t.Fatalf("recorded %d calls, want 4", len(calls))
	}
	for i, want := range []struct{ method, token, err string }{
		{"auth.test", "bot", ""}, {"auth.test", "invalid", "invalid_auth"},
		{"apps.connections.open", "bot", "not_allowed_token_type"}, {"chat.postMessage", "none", "not_authed"},
	} {
		if c := calls[i]; c.Method != want.method || c.Token != want.token || c.Error != want.err {
			t.Errorf("call %d = %s token %s error %q, want %s %s %q", i, c.Method, c.Token, c.Error, want.method, want.token, want.err)
		}
		if calls[i].Params.Has("token") {
			t.Errorf("call %d records the token", i)
		}
	}
}

func TestPostUpdateDeleteAndThreads(t *testing.T) {
	srv := slackfake.New(t, slackfake.WithoutBotEcho())
	api := newAPI(srv)
	root := srv.Mention("C0DEV", "U0ALICE", "please fix", "")

	ch, first, err := api.PostMessage("C0DEV", slack.MsgOptionText("on it", false), slack.MsgOptionTS(root))
	if err != nil || ch != "C0DEV" {
		t.Fatalf("PostMessage = %q, %v, want C0DEV", ch, err)
	}
	reply := srv.UserMessage("C0DEV", "U0BOB", "thanks", root)
	// thread_ts naming a reply lands in the same thread.
	_, second, err := api.PostMessage("C0DEV", slack.MsgOptionText("done", false), slack.MsgOptionTS(reply))
	if err != nil {
		t.Fatal(err)
	}
	if !(root < first && first < reply && reply < second) {
		t.Errorf("ts order %s %s %s %s, want strictly increasing", root, first, reply, second)
	}
	if _, _, _, err := api.UpdateMessage("C0DEV", first, slack.MsgOptionText("on it (edited)", false)); err != nil {
		t.Fatal(err)
	}

	thread := srv.Messages("C0DEV", root)
	var texts []string
	for _, m := range thread {
		texts = append(texts, m.Text)
	}
	want := []string{"<@" + srv.BotUserID() + "> please fix", "on it (edited)", "thanks", "done"}
	if strings.Join(texts, "|") != strings.Join(want, "|") {
		t.Fatalf("thread texts %q, want %q", texts, want)
	}
	if m := thread[1]; m.User != srv.BotUserID() || m.BotID != srv.BotID() || m.EditedTS == "" || m.ThreadTS != root {
		t.Errorf("bot reply = %+v, want bot user and id, edited, in thread %s", m, root)
	}
	if top := srv.Messages("C0DEV", ""); len(top) != 1 || top[0].TS != root {
		t.Errorf("top-level messages = %+v, want only the root", top)
	}

	if _, _, err := api.DeleteMessage("C0DEV", second); err != nil {
		t.Fatal(err)
	}
	if got := len(srv.Messages("C0DEV", root)); got != 3 {
		t.Errorf("thread has %d messages after delete, want 3", got)
	}

	// Errors as Slack answers them.
	if _, _, err := api.PostMessage("C0NOPE", slack.MsgOptionText("x", false)); slackError(err) != "channel_not_found" {
		t.Errorf("post to unknown channel: %v, want channel_not_found", err)
	}
	if _, _, err := api.PostMessage("C0DEV", slack.MsgOptionText(strings.Repeat("x", 40001), false)); slackError(err) != "msg_too_long" {
		t.Errorf("post of 40001 chars: %v, want msg_too_long", err)
	}
	if _, _, err := api.PostMessage("C0DEV", slack.MsgOptionText(strings.Repeat("é", 40000), false)); err != nil {
		t.Errorf("post of 40000 chars: %v, want ok", err)
	}
	if _, _, _, err := api.UpdateMessage("C0DEV", reply, slack.MsgOptionText("hijack", false)); slackError(err) != "cant_update_message" {
		t.Errorf("update of a user's message: %v, want cant_update_message", err)
	}
	if _, _, _, err := api.UpdateMessage("C0DEV", second, slack.MsgOptionText("gone", false)); slackError(err) != "message_not_found" {
		t.Errorf("update of a deleted message: %v, want message_not_found", err)
	}

	posts := srv.CallsTo("chat.postMessage")
	if len(posts) != 5 || posts[0].Params.Get("thread_ts") != root || posts[0].Params.Get("text") != "on it" {
		t.Errorf("chat.postMessage calls = %d, first %v, want 5 with thread_ts and text", len(posts), posts[0].Params)
	}
}

func TestPostEphemeral(t *testing.T) {
	srv := slackfake.New(t)
	api := newAPI(srv)
	root := srv.Mention("C0DEV", "U0MALLORY", "let me in", "")
	ts, err := api.PostEphemeral("C0DEV", "U0MALLORY", slack.MsgOptionText("You are not allowed to use this bot.", false), slack.MsgOptionTS(root))
	if err != nil || ts == "" {
		t.Fatalf("PostEphemeral = %q, %v", ts, err)
	}
	eph := srv.Ephemerals()
	if len(eph) != 1 || eph[0].User != "U0MALLORY" || eph[0].ThreadTS != root || eph[0].TS != ts {
		t.Errorf("ephemerals = %+v, want one to U0MALLORY in %s", eph, root)
	}
	if got := len(srv.Messages("C0DEV", root)); got != 1 {
		t.Errorf("thread has %d messages, want the ephemeral kept out of it", got)
	}
}

func TestReactions(t *testing.T) {
	srv := slackfake.New(t)
	api := newAPI(srv)
	ts := srv.UserMessage("C0DEV", "U0ALICE", "queued follow-up", "")
	item := slack.NewRefToMessage("C0DEV", ts)
	if err := api.AddReaction("eyes", item); err != nil {
		t.Fatal(err)
	}
	if err := api.AddReaction("eyes", item); slackError(err) != "already_reacted" {
		t.Errorf("second add: %v, want already_reacted", err)
	}
	if err := api.AddReaction(":white_check_mark:", item); err != nil {
		t.Fatal(err)
	}
	got := srv.Reactions("C0DEV", ts)
	if len(got) != 2 || got[0].Name != "eyes" || got[1].Name != "white_check_mark" || got[0].Users[0] != srv.BotUserID() {
		t.Errorf("reactions = %+v, want eyes then white_check_mark by the bot", got)
	}
	if err := api.RemoveReaction("eyes", item); err != nil {
		t.Fatal(err)
	}
	if err := api.RemoveReaction("eyes", item); slackError(err) != "no_reaction" {
		t.Errorf("second remove: %v, want no_reaction", err)
	}
	if got := srv.Reactions("C0DEV", ts); len(got) != 1 {
		t.Errorf("reactions after remove = %+v, want one", got)
	}
	if err := api.AddReaction("eyes", slack.NewRefToMessage("C0DEV", "1.000001")); slackError(err) != "message_not_found" {
		t.Errorf("react to a missing message: %v, want message_not_found", err)
	}
}

func TestConversationsRepliesPaginationAndOldest(t *testing.T) {
	srv := slackfake.New(t)
	api := newAPI(srv)
	root := srv.UserMessage("C0DEV", "U0ALICE", "let's talk", "")
	want := []string{root}
	for i := range 6 {
		if i%2 == 0 {
			want = append(want, srv.UserMessage("C0DEV", "U0BOB", "human", root))
		} else {
			_, ts, err := api.PostMessage("C0DEV", slack.MsgOptionText("bot", false), slack.MsgOptionTS(root))
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, ts)
		}
	}

	var got []string
	cursor := ""
	pages := 0
	for {
		msgs, more, next, err := api.GetConversationReplies(&slack.GetConversationRepliesParameters{
			ChannelID: "C0DEV", Timestamp: root, Limit: 3, Cursor: cursor,
		})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, m := range msgs {
			got = append(got, m.Timestamp)
		}
		if pages == 1 && (msgs[0].Timestamp != root || msgs[0].ReplyCount != 6 || msgs[0].LatestReply != want[6]) {
			t.Errorf("first page root = %+v, want %s with reply_count 6 and latest_reply %s", msgs[0].Msg, root, want[6])
		}
		if !more {
			if next != "" {
				t.Errorf("last page has next_cursor %q", next)
			}
			break
		}
		cursor = next
	}
	if strings.Join(got, ",") != strings.Join(want, ",") || pages != 3 {
		t.Errorf("paged replies %v in %d pages, want %v in 3", got, pages, want)
	}

	// Replies after a ts: the root still comes first, then only later replies.
	msgs, _, _, err := api.GetConversationReplies(&slack.GetConversationRepliesParameters{ChannelID: "C0DEV", Timestamp: root, Oldest: want[4]})
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 3 || msgs[0].Timestamp != root || msgs[1].Timestamp != want[5] || msgs[2].Timestamp != want[6] {
		t.Errorf("replies after %s = %d messages, want root, %s, %s", want[4], len(msgs), want[5], want[6])
	}
	if msgs[1].User != "U0BOB" || msgs[1].ParentUserId != "U0ALICE" || msgs[2].BotID != srv.BotID() {
		t.Errorf("replies = %+v / %+v, want U0BOB's with parent U0ALICE, then the bot's", msgs[1].Msg, msgs[2].Msg)
	}

	if _, _, _, err := api.GetConversationReplies(&slack.GetConversationRepliesParameters{ChannelID: "C0DEV", Timestamp: "1.000001"}); slackError(err) != "thread_not_found" {
		t.Errorf("replies of a missing thread: %v, want thread_not_found", err)
	}
}

func TestConversationsHistoryAndInfo(t *testing.T) {
	srv := slackfake.New(t)
	api := newAPI(srv)
	srv.AddChannel(slackfake.Channel{ID: "C0DEV", Name: "dev"})
	a := srv.UserMessage("C0DEV", "U0ALICE", "one", "")
	srv.UserMessage("C0DEV", "U0BOB", "in thread", a)
	b := srv.UserMessage("C0DEV", "U0BOB", "two", "")
	c := srv.ChannelJoin("C0DEV", "U0CAROL")

	h, err := api.GetConversationHistory(&slack.GetConversationHistoryParameters{ChannelID: "C0DEV", Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Messages) != 2 || h.Messages[0].Timestamp != c || h.Messages[1].Timestamp != b || !h.HasMore {
		t.Fatalf("history page = %d messages, has_more %v, want %s, %s and more", len(h.Messages), h.HasMore, c, b)
	}
	h, err = api.GetConversationHistory(&slack.GetConversationHistoryParameters{ChannelID: "C0DEV", Cursor: h.ResponseMetaData.NextCursor})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Messages) != 1 || h.Messages[0].Timestamp != a || h.Messages[0].ReplyCount != 1 {
		t.Errorf("history second page = %+v, want %s with one reply", h.Messages, a)
	}

	info, err := api.GetConversationInfo(&slack.GetConversationInfoInput{ChannelID: "C0DEV"})
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "dev" || !info.IsChannel || info.IsPrivate {
		t.Errorf("conversations.info = name %q channel %v private %v, want dev, public channel", info.Name, info.IsChannel, info.IsPrivate)
	}
	dm := srv.DMChannel("U0ALICE")
	info, err = api.GetConversationInfo(&slack.GetConversationInfoInput{ChannelID: dm})
	if err != nil {
		t.Fatal(err)
	}
	if !info.IsIM || info.User != "U0ALICE" {
		t.Errorf("conversations.info of the DM = im %v user %q, want im with U0ALICE", info.IsIM, info.User)
	}
	if _, err := api.GetConversationInfo(&slack.GetConversationInfoInput{ChannelID: "C0NOPE"}); slackError(err) != "channel_not_found" {
		t.Errorf("info of unknown channel: %v, want channel_not_found", err)
	}
}

func TestUsersInfo(t *testing.T) {
	srv := slackfake.New(t)
	api := newAPI(srv)
	srv.AddUser(slackfake.User{ID: "U0ALICE", Name: "alice", RealName: "Alice Liddell", Email: "alice@example.com"})
	u, err := api.GetUserInfo("U0ALICE")
	if err != nil {
		t.Fatal(err)
	}
	if u.Name != "alice" || u.RealName != "Alice Liddell" || u.Profile.Email != "alice@example.com" || u.Profile.RealName != "Alice Liddell" {
		t.Errorf("users.info = %+v, want alice", u)
	}
	if bot, err := api.GetUserInfo(srv.BotUserID()); err != nil || !bot.IsBot {
		t.Errorf("users.info of the bot = %+v, %v, want is_bot", bot, err)
	}
	if _, err := api.GetUserInfo("U0NOBODY"); slackError(err) != "user_not_found" {
		t.Errorf("users.info of unknown user: %v, want user_not_found", err)
	}
}

func TestAssistantStatus(t *testing.T) {
	params := slack.AssistantThreadsSetStatusParameters{ChannelID: "C0DEV", ThreadTS: "", Status: "is working…"}
	t.Run("not allowed by default", func(t *testing.T) {
		srv := slackfake.New(t)
		params.ThreadTS = srv.Mention("C0DEV", "U0ALICE", "go", "")
		if err := newAPI(srv).SetAssistantThreadsStatus(params); slackError(err) != "not_allowed" {
			t.Errorf("setStatus: %v, want not_allowed", err)
		}
		if got := srv.CallsTo("assistant.threads.setStatus"); len(got) != 1 {
			t.Errorf("recorded %d setStatus calls, want 1", len(got))
		}
	})
	t.Run("enabled", func(t *testing.T) {
		srv := slackfake.New(t, slackfake.WithAssistantThreads())
		params.ThreadTS = srv.Mention("C0DEV", "U0ALICE", "go", "")
		if err := newAPI(srv).SetAssistantThreadsStatus(params); err != nil {
			t.Fatal(err)
		}
		if got := srv.Statuses(); len(got) != 1 || got[0].Status != "is working…" || got[0].ThreadTS != params.ThreadTS {
			t.Errorf("statuses = %+v, want one for the thread", got)
		}
	})
}

func TestUnknownMethodJSONBodiesAndInjectedErrors(t *testing.T) {
	srv := slackfake.New(t)
	srv.AddChannel(slackfake.Channel{ID: "C0DEV"})
	post := func(method string, body string) map[string]any {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.APIURL()+method, bytes.NewBufferString(body))
		req.Header.Set("Content-Type", "application/json; charset=utf-8")
		req.Header.Set("Authorization", "Bearer "+srv.BotToken())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if out := post("pins.add", `{}`); out["ok"] != false || out["error"] != "unknown_method" {
		t.Errorf("pins.add = %v, want unknown_method", out)
	}
	if got := srv.CallsTo("pins.add"); len(got) != 1 || got[0].Error != "unknown_method" {
		t.Errorf("unknown method calls = %+v, want one recorded", got)
	}
	out := post("chat.postMessage", `{"channel":"C0DEV","text":"json body","unfurl_links":false}`)
	if out["ok"] != true {
		t.Fatalf("JSON chat.postMessage = %v, want ok", out)
	}
	call := srv.CallsTo("chat.postMessage")[0]
	if call.Params.Get("text") != "json body" || call.Params.Get("unfurl_links") != "false" || len(call.Body) == 0 {
		t.Errorf("JSON call recorded params %v body %s, want text, unfurl_links and the body", call.Params, call.Body)
	}
	if out := post("chat.postMessage", `{"channel":`); out["error"] != "invalid_json" {
		t.Errorf("broken JSON = %v, want invalid_json", out)
	}

	srv.FailNext("chat.postMessage", "is_archived")
	api := newAPI(srv)
	if _, _, err := api.PostMessage("C0DEV", slack.MsgOptionText("x", false)); slackError(err) != "is_archived" {
		t.Errorf("post after FailNext: %v, want is_archived", err)
	}
	if _, _, err := api.PostMessage("C0DEV", slack.MsgOptionText("x", false)); err != nil {
		t.Errorf("post after the injected failure: %v, want ok", err)
	}
}

package slack

import (
	"bytes"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/chat"
	slackfake "github.com/threadsmith/threadsmith/internal/fakes/slack"
)

// thread opens a thread on srv with a mention and returns its ref.
func thread(srv *slackfake.Server, channel string) chat.ThreadRef {
	root := srv.Mention(channel, "U0ALICE", "start", "")
	return chat.ThreadRef{Platform: "slack", Team: srv.TeamID(), Channel: channel, Thread: root}
}

func TestPostAndEditSendMrkdwnInTheThread(t *testing.T) {
	srv := slackfake.New(t, slackfake.WithoutBotEcho())
	a := newAdapter(t, srv)
	ctx := testContext(t)
	th := thread(srv, "C0DEV")

	id, err := a.Post(ctx, th, "**Done** in [PR](https://git.example/pr?a=1&b=2)")
	if err != nil {
		t.Fatal(err)
	}
	msgs := srv.Messages("C0DEV", th.Thread)
	last := msgs[len(msgs)-1]
	want := "*Done* in <https://git.example/pr?a=1&amp;b=2|PR>"
	if last.TS != id || last.Text != want || last.ThreadTS != th.Thread || last.Broadcast || last.User != srv.BotUserID() {
		t.Errorf("posted %+v, want %q by the bot in thread %s, not broadcast, ts %s", last, want, th.Thread, id)
	}
	if p := srv.CallsTo("chat.postMessage")[0].Params; p.Has("reply_broadcast") {
		t.Errorf("chat.postMessage sent reply_broadcast=%q, want none", p.Get("reply_broadcast"))
	}

	if err := a.Edit(ctx, th, id, "~~Done~~ _redo_"); err != nil {
		t.Fatal(err)
	}
	msgs = srv.Messages("C0DEV", th.Thread)
	if got := msgs[len(msgs)-1]; got.Text != "~Done~ _redo_" || got.EditedTS == "" {
		t.Errorf("after Edit: %+v, want text \"~Done~ _redo_\" and edited", got)
	}

	// Far beyond Slack's limit: truncated with a notice, not refused.
	if _, err := a.Post(ctx, th, strings.Repeat("word ", 9000)); err != nil {
		t.Fatalf("Post of 45,000 characters: %v, want truncated and posted", err)
	}
	msgs = srv.Messages("C0DEV", th.Thread)
	if got := msgs[len(msgs)-1].Text; !strings.HasSuffix(got, truncatedNotice) {
		t.Errorf("long post ends %q, want the truncation notice", got[len(got)-60:])
	}
	if err := a.Edit(ctx, th, id, strings.Repeat("é", 50000)); err != nil {
		t.Fatalf("Edit with 50,000 characters: %v, want truncated", err)
	}
}

func TestReactIsIdempotent(t *testing.T) {
	srv := slackfake.New(t, slackfake.WithoutBotEcho())
	a := newAdapter(t, srv)
	ctx := testContext(t)
	th := thread(srv, "C0DEV")

	for range 2 {
		if err := a.React(ctx, th, th.Thread, "hourglass_flowing_sand", true); err != nil {
			t.Fatalf("React add: %v", err)
		}
	}
	if err := a.React(ctx, th, th.Thread, ":eyes:", true); err != nil {
		t.Fatal(err)
	}
	got := srv.Reactions("C0DEV", th.Thread)
	if len(got) != 2 || got[0].Name != "hourglass_flowing_sand" || got[1].Name != "eyes" || !slices.Equal(got[0].Users, []string{srv.BotUserID()}) {
		t.Errorf("reactions %+v, want hourglass then eyes, once each by the bot", got)
	}
	for range 2 {
		if err := a.React(ctx, th, th.Thread, "hourglass_flowing_sand", false); err != nil {
			t.Fatalf("React remove: %v", err)
		}
	}
	if got := srv.Reactions("C0DEV", th.Thread); len(got) != 1 || got[0].Name != "eyes" {
		t.Errorf("reactions after removal %+v, want eyes only", got)
	}
	if err := a.React(ctx, th, "1.000001", "eyes", true); err == nil || !strings.Contains(err.Error(), "message_not_found") {
		t.Errorf("React on a missing message = %v, want message_not_found", err)
	}
}

func TestUploadSharesFileInThread(t *testing.T) {
	srv := slackfake.New(t, slackfake.WithoutBotEcho())
	a := newAdapter(t, srv)
	ctx := testContext(t)
	th := thread(srv, "C0DEV")
	diff := "--- a/x.go\n+++ b/x.go\n@@ -1 +1 @@\n-a\n+b\n"

	if err := a.Upload(ctx, th, "change.diff", []byte(diff), "the **full** patch"); err != nil {
		t.Fatal(err)
	}
	ups := srv.Uploads()
	if len(ups) != 1 {
		t.Fatalf("uploads = %d, want 1", len(ups))
	}
	u := ups[0]
	if string(u.Content) != diff || !u.Completed || u.Channel != "C0DEV" || u.ThreadTS != th.Thread || u.Filename != "change.diff" || u.InitialComment != "the *full* patch" {
		t.Errorf("upload = %+v, want the diff completed into the thread with a mrkdwn comment", u)
	}
	if err := a.Upload(ctx, th, "empty.diff", nil, ""); err == nil {
		t.Error("Upload of an empty file succeeded, want an error (Slack refuses them)")
	}
}

// An upload whose completeUploadExternal answer was lost (the file was
// shared) is not shared again by its retry, which finds the file in the
// thread; a retry of an attempt that shared nothing uploads.
func TestUploadOnceFindsAFileThatWasShared(t *testing.T) {
	srv := slackfake.New(t, slackfake.WithoutBotEcho())
	a := newAdapter(t, srv)
	ctx := testContext(t)
	th := thread(srv, "C0DEV")
	key := chat.PostKey{ID: "up1", First: time.Now()}

	srv.LoseResponseNext("files.completeUploadExternal")
	if err := a.UploadOnce(ctx, th, "change.diff", []byte("+a\n"), "the patch", key); err == nil {
		t.Fatal("UploadOnce with a lost response succeeded, want the transport error")
	}
	key.Retry = true
	must(t, a.UploadOnce(ctx, th, "change.diff", []byte("+a\n"), "the patch", key))
	if ups := srv.Uploads(); len(ups) != 1 || !ups[0].Completed || ups[0].ThreadTS != th.Thread {
		t.Fatalf("uploads %+v, want the one shared into the thread", ups)
	}
	files := 0
	for _, m := range srv.Messages("C0DEV", th.Thread) {
		files += len(m.Files)
	}
	if files != 1 {
		t.Errorf("%d files in the thread, want 1", files)
	}
	if c := srv.CallsTo("conversations.replies"); len(c) != 1 {
		t.Errorf("conversations.replies called %d times, want one look-up", len(c))
	}

	// A completion refused shares nothing: the retry does not find the
	// file the first attempt named, and shares one.
	key = chat.PostKey{ID: "up2", First: time.Now()}
	srv.FailNext("files.completeUploadExternal", "internal_error")
	if err := a.UploadOnce(ctx, th, "b.diff", []byte("+b\n"), "", key); err == nil {
		t.Fatal("UploadOnce with a failed completion succeeded")
	}
	key.Retry = true
	must(t, a.UploadOnce(ctx, th, "b.diff", []byte("+b\n"), "", key))
	shared := 0
	for _, u := range srv.Uploads() {
		if u.Filename == "b.diff" && u.Completed {
			shared++
		}
	}
	if shared != 1 {
		t.Errorf("b.diff shared %d times, want 1", shared)
	}
}

func TestSetStatusStopsWhereNotAllowed(t *testing.T) {
	ctx := testContext(t)
	t.Run("not allowed", func(t *testing.T) {
		srv := slackfake.New(t, slackfake.WithoutBotEcho())
		a := newAdapter(t, srv)
		th := thread(srv, "C0DEV")
		for range 3 {
			if err := a.SetStatus(ctx, th, "is working…"); err != nil {
				t.Fatalf("SetStatus = %v, want not_allowed ignored", err)
			}
		}
		if got := srv.CallsTo("assistant.threads.setStatus"); len(got) != 1 || got[0].Error != "not_allowed" {
			t.Errorf("setStatus calls %+v, want one answered not_allowed, then none", got)
		}
		other := thread(srv, "C0OPS")
		if err := a.SetStatus(ctx, other, "is working…"); err != nil {
			t.Fatal(err)
		}
		if got := len(srv.CallsTo("assistant.threads.setStatus")); got != 2 {
			t.Errorf("setStatus calls = %d, want another channel still tried", got)
		}
	})
	t.Run("missing scope", func(t *testing.T) {
		srv := slackfake.New(t, slackfake.WithoutBotEcho(), slackfake.WithAssistantThreads())
		a := newAdapter(t, srv)
		th := thread(srv, "C0DEV")
		srv.FailNext("assistant.threads.setStatus", "missing_scope")
		for range 2 {
			if err := a.SetStatus(ctx, th, "is working…"); err != nil {
				t.Fatalf("SetStatus = %v, want missing_scope ignored", err)
			}
		}
		if got := len(srv.CallsTo("assistant.threads.setStatus")); got != 1 {
			t.Errorf("setStatus calls = %d, want 1", got)
		}
	})
	t.Run("allowed", func(t *testing.T) {
		srv := slackfake.New(t, slackfake.WithoutBotEcho(), slackfake.WithAssistantThreads())
		a := newAdapter(t, srv)
		th := thread(srv, "C0DEV")
		for _, s := range []string{"is working…", ""} {
			if err := a.SetStatus(ctx, th, s); err != nil {
				t.Fatal(err)
			}
		}
		want := []slackfake.Status{
			{Channel: "C0DEV", ThreadTS: th.Thread, Status: "is working…", LoadingMessages: []string{"is working…"}},
			{Channel: "C0DEV", ThreadTS: th.Thread, Status: ""},
		}
		if got := srv.Statuses(); !slices.EqualFunc(got, want, func(a, b slackfake.Status) bool {
			return a.Channel == b.Channel && a.ThreadTS == b.ThreadTS && a.Status == b.Status && slices.Equal(a.LoadingMessages, b.LoadingMessages)
		}) {
			t.Errorf("statuses %+v, want %+v", got, want)
		}
		if got := srv.CallsTo("agents.sessions.setStatus"); len(got) != 0 {
			t.Errorf("agent session calls %+v without slack.agent_sessions, want none", got)
		}
	})
	agentSessions := func(c *Config, _ *Options) { c.AgentSessions = true }
	// With slack.agent_sessions, in a workspace where the app is an agent,
	// the thread's session is processing while the bot works, titled from
	// the request when it is created, set once however often the status is
	// refreshed, and closed after; the assistant status is not used.
	t.Run("agent sessions", func(t *testing.T) {
		srv := slackfake.New(t, slackfake.WithoutBotEcho(), slackfake.WithAgentSessions(), slackfake.WithAssistantThreads())
		a := newAdapter(t, srv, agentSessions)
		th := thread(srv, "C0DEV")
		request := "Fix   the *flaky* test\nin ./outbox, then push"
		for _, s := range []string{"is working…", "is working…", ""} {
			if err := a.SetTitledStatus(ctx, th, s, request); err != nil {
				t.Fatal(err)
			}
		}
		want := []slackfake.AgentStatus{
			{Channel: "C0DEV", ThreadTS: th.Thread, Status: "processing", Title: "Fix the *flaky* test"},
			{Channel: "C0DEV", ThreadTS: th.Thread, Status: "closed", Title: "Fix the *flaky* test"},
		}
		if got := srv.AgentStatuses(); !slices.Equal(got, want) {
			t.Errorf("agent statuses %+v, want %+v", got, want)
		}
		if got := srv.CallsTo("assistant.threads.setStatus"); len(got) != 0 {
			t.Errorf("assistant status calls %+v, want none", got)
		}
	})
	// Where Slack refuses them (the app is not declared as an agent), the
	// first refusal sends the adapter to the assistant status in that
	// workspace for good, without a warning: one probe, not one per status
	// nor per channel.
	t.Run("agent sessions refused", func(t *testing.T) {
		srv := slackfake.New(t, slackfake.WithoutBotEcho(), slackfake.WithAssistantThreads())
		var logs bytes.Buffer
		a := newAdapter(t, srv, agentSessions, func(_ *Config, o *Options) {
			o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		})
		for _, ch := range []string{"C0DEV", "C0OPS"} {
			th := thread(srv, ch)
			for _, s := range []string{"is working…", "", "is working…"} {
				if err := a.SetTitledStatus(ctx, th, s, "go"); err != nil {
					t.Fatal(err)
				}
			}
		}
		if got := srv.CallsTo("agents.sessions.setStatus"); len(got) != 1 || got[0].Error != "not_authorized" {
			t.Errorf("agents.sessions.setStatus calls %+v, want one, answered not_authorized", got)
		}
		if got := len(srv.Statuses()); got != 6 {
			t.Errorf("assistant statuses = %d, want 6", got)
		}
		if strings.Contains(logs.String(), "level=WARN") {
			t.Errorf("logs warn:\n%s", logs.String())
		}
	})
	// A rate limit is no refusal: the adapter returns it and asks for the
	// session again next time.
	t.Run("agent sessions rate limited", func(t *testing.T) {
		srv := slackfake.New(t, slackfake.WithoutBotEcho(), slackfake.WithAgentSessions(), slackfake.WithAssistantThreads())
		a := newAdapter(t, srv, agentSessions)
		th := thread(srv, "C0DEV")
		srv.RateLimitNext("agents.sessions.setStatus", 30*time.Second)
		err := a.SetTitledStatus(ctx, th, "is working…", "go")
		if _, ok := chat.IsRateLimit(err); !ok {
			t.Fatalf("SetTitledStatus = %v, want a rate limit", err)
		}
		if err := a.SetTitledStatus(ctx, th, "is working…", "go"); err != nil {
			t.Fatal(err)
		}
		if got := srv.AgentStatuses(); len(got) != 1 || got[0].Status != "processing" {
			t.Errorf("agent statuses %+v, want processing after the rate limit", got)
		}
		if got := srv.CallsTo("assistant.threads.setStatus"); len(got) != 0 {
			t.Errorf("assistant status calls %+v, want none", got)
		}
	})
}

// A whisper goes where its reader sees it: Slack hides an ephemeral message
// posted into a thread without replies, so the note about a top-level mention
// goes to the channel, and the note about a reply into its thread.
func TestWhisperIsEphemeralWhereVisible(t *testing.T) {
	srv := slackfake.New(t, slackfake.WithoutBotEcho())
	a := newAdapter(t, srv)
	th := thread(srv, "C0DEV")
	author := chat.Author{ID: "U0ALICE"}
	top := chat.Inbound{Thread: th, MessageID: th.Thread, Author: author}
	if err := a.Whisper(testContext(t), top, "Sorry, you are **not** allowed."); err != nil {
		t.Fatal(err)
	}
	reply := srv.UserMessage("C0DEV", "U0ALICE", "again", th.Thread)
	if err := a.Whisper(testContext(t), chat.Inbound{Thread: th, MessageID: reply, Author: author}, "still not"); err != nil {
		t.Fatal(err)
	}
	want := []slackfake.Ephemeral{
		{Channel: "C0DEV", User: "U0ALICE", Text: "Sorry, you are *not* allowed.", Visible: true},
		{Channel: "C0DEV", User: "U0ALICE", Text: "still not", ThreadTS: th.Thread, Visible: true},
	}
	got := srv.Ephemerals()
	for i := range got {
		got[i].TS = ""
	}
	if !slices.Equal(got, want) {
		t.Errorf("ephemerals %+v, want %+v", got, want)
	}
	if n := len(srv.Messages("C0DEV", th.Thread)); n != 2 {
		t.Errorf("thread has %d messages, want the root and the reply (a whisper is not posted)", n)
	}
}

func TestHistoryBeforeMessageHumansOnly(t *testing.T) {
	srv := slackfake.New(t, slackfake.WithoutBotEcho())
	srv.AddUser(slackfake.User{ID: "U0ALICE", Name: "alice", Email: "alice@example.com"})
	srv.AddUser(slackfake.User{ID: "U0BOB", Name: "", RealName: "Bob Real"})
	a := newAdapter(t, srv)
	ctx := testContext(t)

	root := srv.UserMessage("C0DEV", "U0ALICE", "the deploy failed", "")
	th := chat.ThreadRef{Platform: "slack", Team: srv.TeamID(), Channel: "C0DEV", Thread: root}
	srv.UserMessage("C0DEV", "U0BOB", "logs say <https://ci.example/1|job 1> &amp; more", root)
	srv.BotMessage("C0DEV", "B0CI", "CI bot noise", root)
	if _, err := a.Post(ctx, th, "my own earlier answer"); err != nil {
		t.Fatal(err)
	}
	edited := srv.UserMessage("C0DEV", "U0ALICE", "first version", root)
	srv.EditMessage("C0DEV", edited, "second version")
	srv.ChannelJoin("C0DEV", "U0CAROL")
	mention := srv.Mention("C0DEV", "U0BOB", "help us", root)
	srv.UserMessage("C0DEV", "U0ALICE", "after the mention", root)

	got, err := a.History(ctx, th, mention)
	if err != nil {
		t.Fatal(err)
	}
	type line struct{ name, text string }
	var lines []line
	for _, m := range got {
		lines = append(lines, line{m.Author.Name, m.Text})
		if m.Time.IsZero() {
			t.Errorf("history message %q has no time", m.Text)
		}
	}
	want := []line{
		{"alice", "the deploy failed"},
		{"Bob Real", "logs say job 1 (https://ci.example/1) & more"},
		{"alice", "second version"},
	}
	if !slices.Equal(lines, want) {
		t.Errorf("History = %+v, want %+v", lines, want)
	}
	if got := srv.CallsTo("conversations.replies")[0].Params.Get("latest"); got != mention {
		t.Errorf("conversations.replies latest=%q, want %s", got, mention)
	}
}

func TestPlainText(t *testing.T) {
	srv := slackfake.New(t)
	srv.AddUser(slackfake.User{ID: "U0ALICE", Name: "alice"})
	a := newAdapter(t, srv)
	ctx := testContext(t)
	in := "<@U0ALICE> see <#C0DEV|dev>, <https://a.io/?x=1&amp;y=2|the docs> and <https://b.io> cc <!here> &lt;b&gt; &amp;amp;"
	want := "@alice see #dev, the docs (https://a.io/?x=1&y=2) and https://b.io cc @here <b> &amp;"
	if got := a.plain(ctx, in); got != want {
		t.Errorf("PlainText(%q)\n got %q\nwant %q", in, got, want)
	}
	if got := a.plain(ctx, "<@U0ALICE> again"); got != "@alice again" || len(srv.CallsTo("users.info")) != 1 {
		t.Errorf("second PlainText = %q after %d users.info calls, want \"@alice again\" from the cache (1 call)", got, len(srv.CallsTo("users.info")))
	}
}

func TestPlainTextTokens(t *testing.T) {
	names := map[string]string{"U1": "ann"}
	name := func(id string) string { return names[id] }
	for _, tc := range []struct{ in, want string }{
		{"<@U1>", "@ann"},
		{"<@U2|bob>", "@bob"},
		{"<@U3>", "@U3"},
		{"<#C1>", "#C1"},
		{"<#C1|general>", "#general"},
		{"<!channel> <!everyone>", "@channel @everyone"},
		{"<!subteam^S1|@devs>", "@devs"},
		{"<!subteam^S1>", "@S1"},
		{"<!date^1392734382^{date}|Feb 18, 2014>", "Feb 18, 2014"},
		{"<mailto:a@b.io|a@b.io>", "a@b.io"},
		{"<https://x.io|https://x.io>", "https://x.io"},
		{"a &lt; b &gt; c &amp;&amp; d", "a < b > c && d"},
		{"unclosed < here", "unclosed < here"},
		{"", ""},
	} {
		if got := plainText(tc.in, name); got != tc.want {
			t.Errorf("plainText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestDownloadWithBotToken(t *testing.T) {
	srv := slackfake.New(t)
	a := newAdapter(t, srv)
	ctx := testContext(t)
	png := bytes.Repeat([]byte("\x89PNG"), 1000)
	_, f := srv.ShareFile("C0DEV", "U0ALICE", "", "screen.png", "image/png", png)

	body, err := a.Download(ctx, f.URLPrivate)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(body)
	body.Close()
	if err != nil || !bytes.Equal(got, png) {
		t.Errorf("Download = %d bytes, %v, want the %d-byte file", len(got), err, len(png))
	}
	if dl := srv.Downloads(); len(dl) != 1 || !dl[0].Authorized {
		t.Errorf("downloads %+v, want one with the bot token", dl)
	}

	// A token the file host does not accept ends on the sign-in page: an error, not the page.
	stranger := newAdapter(t, srv, func(c *Config, _ *Options) { c.BotToken = "xoxb-stranger" })
	if _, err := stranger.Download(ctx, f.URLPrivate); err == nil || !strings.Contains(err.Error(), "sign-in") {
		t.Errorf("Download without access = %v, want the sign-in error", err)
	}
	// The token never goes to a host that is not Slack's.
	if _, err := a.Download(ctx, "http://evil.example/steal"); err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Errorf("Download from another host = %v, want a refusal", err)
	}
	if _, err := a.Download(ctx, srv.URL()+"/files-pri/T0FAKE0001-F0NOPE/x"); err == nil {
		t.Error("Download of a missing file succeeded, want an error")
	}
}

func TestRateLimitsBecomeRateLimitError(t *testing.T) {
	ctx := testContext(t)
	t.Run("HTTP 429", func(t *testing.T) {
		srv := slackfake.New(t, slackfake.WithoutBotEcho())
		a := newAdapter(t, srv)
		th := thread(srv, "C0DEV")
		srv.RateLimitNext("chat.postMessage", 3*time.Second)
		_, err := a.Post(ctx, th, "hello")
		rl, ok := chat.IsRateLimit(err)
		if !ok || rl.RetryAfter != 3*time.Second {
			t.Fatalf("Post = %v, want *chat.RateLimitError after 3s", err)
		}
		if got := len(srv.CallsTo("chat.postMessage")); got != 1 {
			t.Errorf("chat.postMessage calls = %d, want 1 (no retry of slack-go's own)", got)
		}
	})
	t.Run("ok false with Retry-After", func(t *testing.T) {
		l := slackfake.SlackRateLimits()
		l.Style = slackfake.RateLimitOKFalse
		l.UpdatePerMessage = slackfake.Rate{Every: 3 * time.Second, Burst: 1}
		srv := slackfake.New(t, slackfake.WithoutBotEcho(), slackfake.WithRateLimits(l))
		a := newAdapter(t, srv)
		th := thread(srv, "C0DEV")
		id, err := a.Post(ctx, th, "first")
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Edit(ctx, th, id, "one"); err != nil {
			t.Fatal(err)
		}
		err = a.Edit(ctx, th, id, "two") // the per-message limit: one in 3 s
		rl, ok := chat.IsRateLimit(err)
		if !ok || rl.RetryAfter != 3*time.Second {
			t.Fatalf("Edit = %v, want *chat.RateLimitError after Slack's Retry-After of 3s", err)
		}
		if c := srv.CallsTo("chat.update")[1]; c.Status != 200 || c.Error != "ratelimited" {
			t.Errorf("the fake answered %d %q, want the ok:false style", c.Status, c.Error)
		}
	})
	t.Run("ok false without header", func(t *testing.T) {
		srv := slackfake.New(t, slackfake.WithoutBotEcho())
		a := newAdapter(t, srv)
		th := thread(srv, "C0DEV")
		srv.FailNext("reactions.add", "ratelimited")
		err := a.React(ctx, th, th.Thread, "eyes", true)
		if rl, ok := chat.IsRateLimit(err); !ok || rl.RetryAfter != time.Second {
			t.Errorf("React = %v, want *chat.RateLimitError after 1s", err)
		}
	})
	t.Run("other errors are not rate limits", func(t *testing.T) {
		srv := slackfake.New(t, slackfake.WithoutBotEcho())
		a := newAdapter(t, srv)
		_, err := a.Post(ctx, chat.ThreadRef{Platform: "slack", Channel: "C0NOWHERE"}, "x")
		if _, ok := chat.IsRateLimit(err); ok || err == nil || !strings.Contains(err.Error(), "channel_not_found") {
			t.Errorf("Post to a missing channel = %v, want channel_not_found, not a rate limit", err)
		}
		if strings.Contains(err.Error(), srv.BotToken()) {
			t.Errorf("error %q contains the bot token", err)
		}
	})
}

package main

import (
	"bufio"
	"context"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	slackadapter "github.com/threadsmith/threadsmith/adapters/slack"
	"github.com/threadsmith/threadsmith/chat/mdsplit"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	slackfake "github.com/threadsmith/threadsmith/internal/fakes/slack"
	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/sqlite"
)

// manifestScopes are the bot scopes slack-app-manifest.yaml grants: the fake
// answers missing_scope for any call they do not cover, as Slack does for
// an app installed from the manifest.
func manifestScopes(t testing.TB) []string {
	t.Helper()
	f, err := os.Open("../../slack-app-manifest.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var scopes []string
	in := false
	for sc := bufio.NewScanner(f); sc.Scan(); {
		line := sc.Text()
		switch {
		case strings.TrimSpace(line) == "bot:":
			in = true
		case in && strings.HasPrefix(strings.TrimSpace(line), "- "):
			scopes = append(scopes, strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "- ")))
		case in:
			in = false
		}
	}
	if len(scopes) == 0 {
		t.Fatal("no bot scopes in slack-app-manifest.yaml")
	}
	return scopes
}

// hostileAnswer is an answer that tries every way of pinging people that
// docs/behaviour.md §8 names, inside a long text dense in <, > and & (HTML and shell),
// so that escaping makes it far longer than it looks.
func hostileAnswer() string {
	var b strings.Builder
	b.WriteString("Ping <!channel> <!here|here> <!everyone> <!subteam^S0DEVS|@devs> <@U0BOSS001> <#C0GENERAL>\n")
	b.WriteString("Links: [click](!channel) [x](<!here>) [t](!subteam^S0DEVS) [u](@U0BOSS001) and &lt;!channel&gt; @channel @here\n\n")
	b.WriteString("```html\n")
	for i := range 120 {
		fmt.Fprintf(&b, "<div id=\"LINE-%04d\">&nbsp;<a href=\"?a=1&b=2\">&lt;!here&gt;</a></div>\n", i)
	}
	b.WriteString("```\n\n```sh\n")
	for i := range 120 {
		fmt.Fprintf(&b, "test -f a && cat <in >out 2>&1 || echo \"<@U0BOSS001> SHELL-%04d\"\n", i)
	}
	b.WriteString("```\n\nAnd in prose: a<b && c>d & <!channel> <@U0BOSS001> — done.")
	return b.String()
}

// TestSlackHostileAnswerNotifiesNobodyAndFits runs an answer full of mention
// attempts and characters Slack escapes through the bot, streamed (so the
// status previews it) and posted, against a fake that refuses what Slack
// refuses: every text is at most 4,000 characters as sent (chat.update's
// limit), no call lacks a scope of the manifest, nobody would be notified,
// and the thread shows all of the answer.
func TestSlackHostileAnswerNotifiesNobodyAndFits(t *testing.T) {
	t.Parallel()
	e := newSlackEnv(t, withFake(slackfake.WithScopes(manifestScopes(t)...), slackfake.WithAssistantThreads()))
	e.slack.AddUserGroup("S0DEVS", "devs")
	answer := hostileAnswer()
	// Half the answer streams, then the stream holds until the status
	// message previews it (chat.update is rate limited to about one per
	// second per message, so a fast stream may well end before a preview).
	previewed := make(chan struct{})
	var steps []llmfake.Step
	streamed, held := 0, false
	for chunk := range slicesOf(answer, 1500) {
		steps = append(steps, llmfake.Content(chunk), llmfake.Delay(20*time.Millisecond))
		if streamed += len(chunk); !held && streamed >= len(answer)/2 {
			steps, held = append(steps, llmfake.Await(previewed)), true
		}
	}
	steps = append(steps, llmfake.Finish("stop"), llmfake.Done())
	e.llm.Push(llmfake.Stream(steps...))
	root := e.slack.Mention(slackChan, aliceID, "show me the page and the script", "")
	for seen := false; !seen; {
		n := len(e.slack.CallsTo("chat.update"))
		for _, c := range e.slack.CallsTo("chat.update") {
			seen = seen || strings.Contains(c.Params.Get("text"), "LINE-")
		}
		if !seen {
			if _, err := e.slack.WaitCalls(e.ctx, "chat.update", n+1); err != nil {
				t.Fatalf("waiting for a preview of the answer: %v", err)
			}
		}
	}
	close(previewed)
	e.waitText(slackChan, root, "⏱")
	e.waitFor("the status sealed", func() bool {
		ms := e.botMessages(slackChan, root)
		return len(ms) > 0 && !strings.Contains(ms[0].Text, "working…")
	}, func() string { return e.transcript(slackChan, root) })

	var sent, previews int
	for _, c := range e.slack.Calls() {
		if c.Error != "" {
			t.Errorf("%s answered %s", c.Method, c.Error)
		}
		if c.Method != "chat.postMessage" && c.Method != "chat.update" {
			continue
		}
		sent++
		text := c.Params.Get("text")
		if n := utf8.RuneCountInString(text); n > 4000 {
			t.Errorf("%s sent %d characters, over 4,000", c.Method, n)
		}
		if c.Params.Get("parse") != "none" {
			t.Errorf("%s sent parse=%q, want none", c.Method, c.Params.Get("parse"))
		}
		if c.Method == "chat.update" && strings.Contains(text, "LINE-") {
			previews++
		}
	}
	if n := e.slack.Notices(); len(n) != 0 {
		t.Errorf("the bot's messages would notify: %+v", n)
	}
	if previews == 0 {
		t.Error("no chat.update previewed the answer: the test did not stream it")
	}
	shown := e.threadText(slackChan, root)
	for i := range 120 {
		for _, want := range []string{fmt.Sprintf(`<div id="LINE-%04d">&nbsp;`, i), fmt.Sprintf(`SHELL-%04d`, i)} {
			if !strings.Contains(shown, want) {
				t.Fatalf("the thread does not show %q", want)
			}
		}
	}
	for _, want := range []string{"[click](!channel)", "&lt;!channel&gt;", "a<b && c>d & <!channel>"} {
		if !strings.Contains(shown, want) {
			t.Errorf("the thread does not show %q as text", want)
		}
	}
	// The figure for BENCHMARKS.md: the longest text sent, against
	// splitting the Markdown at 3,500 characters and converting afterwards,
	// measured here on the same answer.
	longest, before := 0, 0
	for _, c := range e.slack.Calls() {
		if c.Method == "chat.postMessage" || c.Method == "chat.update" {
			longest = max(longest, utf8.RuneCountInString(c.Params.Get("text")))
		}
	}
	for _, c := range mdsplit.Chunks(answer, slackadapter.MaxMessageChars, nil) {
		before = max(before, slackadapter.Measure(c))
	}
	t.Logf("answer of %d characters (%d as Slack mrkdwn) in %d posts and edits; longest text sent %d characters (split before converting: %d)",
		utf8.RuneCountInString(answer), utf8.RuneCountInString(html.EscapeString(answer)), sent, longest, before)
}

// slicesOf yields s in pieces of at most n bytes, cut at rune boundaries.
func slicesOf(s string, n int) func(func(string) bool) {
	return func(yield func(string) bool) {
		for len(s) > 0 {
			end := min(n, len(s))
			for end < len(s) && !utf8.RuneStart(s[end]) {
				end++
			}
			if !yield(s[:end]) {
				return
			}
			s = s[end:]
		}
	}
}

// seedDormantThreads writes n Slack sessions that nobody has written in for
// two days into the bot's database, as a bot that ran for months leaves them.
func seedDormantThreads(t *testing.T, dataDir, team string, n int) {
	t.Helper()
	seedDormant(t, dataDir, n, func(i int) storage.ThreadKey {
		return storage.ThreadKey{Platform: "slack", Team: team, Channel: fmt.Sprintf("C0OLD%04d", i%50), Thread: fmt.Sprintf("1600000000.%06d", i)}
	})
}

// seedDormant writes n sessions two days old, thread i under key(i).
func seedDormant(t *testing.T, dataDir string, n int, key func(i int) storage.ThreadKey) {
	t.Helper()
	ctx := context.Background()
	then := time.Now().Add(-48 * time.Hour)
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	db, err := sqlite.Open(ctx, filepath.Join(dataDir, "threadsmith.db"), sqlite.WithClock(func() time.Time { return then }))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := range n {
		key := key(i)
		th, _, err := db.EnsureThread(ctx, key, storage.ThreadInit{Repo: "app", Branch: fmt.Sprintf("bot/%s-old-%d", key.Platform, i)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.CreateSession(ctx, th.ID, storage.SessionInit{Model: "fake-model"}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSlackReconnectCatchesUpOnlyOnRecentThreads: with 500 sessions nobody
// wrote in for days, a Socket Mode outage costs one conversations.replies
// call — for the thread in use — not one per thread ever opened, and the
// message typed in it during the outage still arrives. The fake allows
// conversations.replies once a minute, as Slack does for apps outside its
// Marketplace; reconnecting itself is not limited here.
func TestSlackReconnectCatchesUpOnlyOnRecentThreads(t *testing.T) {
	t.Parallel()
	limits := slackfake.SlackRateLimits()
	limits.Methods["conversations.replies"] = slackfake.NonMarketplaceReplies
	limits.Methods["apps.connections.open"] = slackfake.Rate{}
	e := newSlackFakes(t, withFake(slackfake.WithRateLimits(limits), slackfake.WithScopes(manifestScopes(t)...)))
	seedDormantThreads(t, e.cfg.DataDir, e.slack.TeamID(), 500)
	e.start()
	e.llm.Handle(func(r llmfake.Request) llmfake.Response { return llmfake.TextReply("answer to: " + lastUserText(r)) })

	root := e.slack.Mention(slackChan, aliceID, "recent work", "")
	e.waitText(slackChan, root, "answer to: recent work")
	e.waitText(slackChan, root, "⏱")
	if err := e.slack.WaitAllAcked(e.ctx); err != nil {
		t.Fatal(err)
	}

	end := e.slack.Outage()
	gap := e.slack.UserMessage(slackChan, aliceID, "typed during the outage", root)
	end()
	e.waitText(slackChan, root, "answer to: typed during the outage")

	calls := e.slack.CallsTo("conversations.replies")
	if len(calls) != 1 || calls[0].Params.Get("ts") != root {
		var threads []string
		for _, c := range calls {
			threads = append(threads, c.Params.Get("channel")+"/"+c.Params.Get("ts"))
		}
		t.Errorf("conversations.replies for %v, want one call, for %s (not for the 500 dormant threads)", threads, root)
	}
	if n := e.slack.RateLimited(); n != 0 {
		t.Errorf("%d calls rate limited, want none", n)
	}
	if d := e.slack.DeliveriesFor(slackChan, gap); len(d) != 1 || !d[0].Lost {
		t.Errorf("deliveries of the message typed in the outage: %+v, want one, lost (so only catch-up brought it)", d)
	}
	// The figure for BENCHMARKS.md: the catch-up's calls against reading
	// every thread in state active, one conversations.replies call each.
	db, err := sqlite.Open(e.ctx, filepath.Join(e.cfg.DataDir, "threadsmith.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	all, err := db.ActiveThreads(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("reconnect: %d conversations.replies calls (one per active thread, as before: %d)", len(calls), len(all))
}

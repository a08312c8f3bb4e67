package slack

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	slackapi "github.com/slack-go/slack"

	"github.com/threadsmith/threadsmith/chat"
	slackfake "github.com/threadsmith/threadsmith/internal/fakes/slack"
)

var testActions = []chat.Action{
	{ID: "stop", Label: "Stop", Danger: true},
	{ID: "pr", Label: "Open PR", URL: "https://forge.test/acme/app/pull/1"},
}

// clickSetup posts a status message with buttons in a thread and returns
// the thread's root and the message's ts.
func clickSetup(t *testing.T, srv *slackfake.Server, a *Adapter, h *recorder) (root, ts string) {
	t.Helper()
	root = srv.Mention("C0DEV", "U0ALICE", "go", "")
	h.nextFor(t, root)
	th := chat.ThreadRef{Platform: Platform, Team: srv.TeamID(), Channel: "C0DEV", Thread: root}
	ctx := testContext(t)
	ts, err := a.Post(ctx, th, "⏳ working… <@U0ALICE> & co")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.SetActions(ctx, th, ts, "⏳ working… <@U0ALICE> & co", testActions); err != nil {
		t.Fatal(err)
	}
	return root, ts
}

// nextClick waits for the next Receive that has no message id (a click).
func (r *recorder) nextClick(t testing.TB) chat.Inbound {
	t.Helper()
	for {
		if in := r.next(t); in.MessageID == "" {
			return in
		}
	}
}

func TestClicksOverSocketModeAndHTTP(t *testing.T) {
	for _, mode := range []string{"socket", "http"} {
		t.Run(mode, func(t *testing.T) {
			srv := slackfake.New(t)
			h := newRecorder()
			var r *running
			if mode == "http" {
				r = startHTTP(t, srv, h, signingSecret, slackfake.TamperNone)
			} else {
				r = startSocket(t, srv, h)
			}
			root, ts := clickSetup(t, srv, r.Adapter, h)

			msg := srv.Messages("C0DEV", root)[1]
			if !strings.Contains(msg.Text, "&lt;@U0ALICE&gt; &amp; co") || !strings.Contains(string(msg.Blocks), `"verbatim":true`) {
				t.Errorf("message text %q, blocks %s: want the escaped mrkdwn in verbatim sections", msg.Text, msg.Blocks)
			}
			if n := len(srv.Notices()); n != 0 {
				t.Errorf("the blocks would notify: %+v", srv.Notices())
			}

			id := srv.Click("C0DEV", ts, "U0ALICE", "stop")
			in := h.nextClick(t)
			want := chat.ThreadRef{Platform: Platform, Team: srv.TeamID(), Channel: "C0DEV", Thread: root}
			if in.Text != "!stop" || in.Thread != want || in.Author.ID != "U0ALICE" || in.Mention || !strings.HasPrefix(in.EventID, "click/U0ALICE/") {
				t.Errorf("click = %+v, want !stop by U0ALICE in %v", in, want)
			}
			ack, err := srv.WaitEventAck(testContext(t), id)
			if err != nil {
				t.Fatal(err)
			}
			if mode == "http" && ack.StatusCode != http.StatusOK {
				t.Errorf("click answered %d", ack.StatusCode)
			}
			// Redelivered, the click keeps its EventID (the handler
			// de-duplicates by it).
			srv.Redeliver(id)
			if again := h.nextClick(t); again.EventID != in.EventID {
				t.Errorf("redelivered click has event %s, want %s", again.EventID, in.EventID)
			}
			// A link's click is acknowledged and is not input.
			link := srv.Click("C0DEV", ts, "U0ALICE", "pr")
			if _, err := srv.WaitEventAck(testContext(t), link); err != nil {
				t.Fatal(err)
			}
			srv.Click("C0DEV", ts, "U0ALICE", "stop")
			if next := h.nextClick(t); next.Text != "!stop" || next.EventID == in.EventID {
				t.Errorf("after the link's click Receive got %+v, want the next Stop click", next)
			}
		})
	}
}

func TestTamperedClickIsRefused(t *testing.T) {
	srv := slackfake.New(t)
	h := newRecorder()
	r := startHTTP(t, srv, h, signingSecret, slackfake.TamperNone)
	_, ts := clickSetup(t, srv, r.Adapter, h)
	srv.UseHTTPEvents(slackfake.HTTPEvents{URL: r.eventsURL, SigningSecret: signingSecret, Tamper: slackfake.TamperBody})
	id := srv.Click("C0DEV", ts, "U0MALLORY", "stop")
	ack, err := srv.WaitAck(testContext(t), srv.Deliveries()[len(srv.Deliveries())-1].ID)
	if err != nil {
		t.Fatal(err)
	}
	if ack.StatusCode != http.StatusUnauthorized || ack.EventID != id {
		t.Errorf("tampered click answered %d, want 401", ack.StatusCode)
	}
	for _, in := range h.Calls() {
		if in.MessageID == "" {
			t.Errorf("a tampered click reached Receive: %+v", in)
		}
	}
}

func TestNoActionsClearTheBlocks(t *testing.T) {
	srv := slackfake.New(t)
	h := newRecorder()
	r := startSocket(t, srv, h)
	root, ts := clickSetup(t, srv, r.Adapter, h)
	th := chat.ThreadRef{Platform: Platform, Team: srv.TeamID(), Channel: "C0DEV", Thread: root}
	if err := r.Adapter.SetActions(testContext(t), th, ts, "done", nil); err != nil {
		t.Fatal(err)
	}
	if bs := srv.Buttons("C0DEV", ts); len(bs) != 0 {
		t.Errorf("buttons left: %+v", bs)
	}
	if m := srv.Messages("C0DEV", root)[1]; m.Text != "done" {
		t.Errorf("text = %q", m.Text)
	}
}

func TestSplitSections(t *testing.T) {
	long := strings.Repeat("word ", 700) + "\n" + strings.Repeat("&lt;x&gt; <https://a.test|link> ", 200)
	parts := splitSections(long, maxSectionChars)
	if strings.Join(parts, "") == "" || len(parts) < 2 {
		t.Fatalf("parts = %d", len(parts))
	}
	for i, p := range parts {
		if n := utf8.RuneCountInString(p); n > maxSectionChars || n == 0 {
			t.Errorf("part %d has %d characters", i, n)
		}
		if strings.Count(p, "<") != strings.Count(p, ">") {
			t.Errorf("part %d cuts a link: …%s", i, p[max(0, len(p)-40):])
		}
		if j := strings.LastIndexByte(p, '&'); j >= 0 && !strings.Contains(p[j:], ";") {
			t.Errorf("part %d cuts an entity: …%s", i, p[j:])
		}
	}
	if got := splitSections("", maxSectionChars); len(got) != 1 || got[0] == "" {
		t.Errorf("empty text gives %q, want one non-empty section", got)
	}
}

// A status longer than a section whose code block crosses the cut shows the
// block as code in both sections: each is rendered on its own, so the first
// closes the block and the second opens it again.
func TestSplitSectionsKeepsCodeBlocksWhole(t *testing.T) {
	code := strings.Repeat("x := compute(a, b) // step\n", 150) // ~4,000 characters
	text := "Here is the change:\n```\n" + code + "```\nand after the block, *bold* prose."
	parts := splitSections(text, maxSectionChars)
	if len(parts) < 2 {
		t.Fatalf("parts = %d, want the block cut", len(parts))
	}
	for i, p := range parts {
		if n := utf8.RuneCountInString(p); n > maxSectionChars {
			t.Errorf("part %d has %d characters", i, n)
		}
		if c := strings.Count(p, "```"); c%2 != 0 {
			t.Errorf("part %d leaves a code block open (%d fences): …%s", i, c, p[max(0, len(p)-40):])
		}
	}
	if !strings.HasPrefix(parts[1], "```\n") {
		t.Errorf("part 2 does not reopen the block: %q…", parts[1][:min(40, len(parts[1]))])
	}
	if last := parts[len(parts)-1]; !strings.Contains(last, "```\nand after the block") {
		t.Errorf("the block's end is lost: …%s", last[max(0, len(last)-80):])
	}
	joined := strings.ReplaceAll(strings.Join(parts, ""), "```", "")
	if want := strings.ReplaceAll(text, "```", ""); strings.ReplaceAll(joined, "\n", "") != strings.ReplaceAll(want, "\n", "") {
		t.Error("the sections together do not show the text")
	}
}

// A ``` in a line of prose is text, not a fence (Mrkdwn writes fences as
// lines of their own): a long status that mentions one is not turned into a
// code block from there on when it is cut into sections.
func TestSplitSectionsTakesNoProseBackticksForAFence(t *testing.T) {
	text := Mrkdwn("Type ``` to open a block in Slack. " + strings.Repeat("Then more plain prose follows here. ", 160))
	parts := splitSections(text, maxSectionChars)
	if len(parts) < 2 {
		t.Fatalf("parts = %d, want the text cut", len(parts))
	}
	for i, p := range parts {
		if strings.HasPrefix(p, "```") || strings.HasSuffix(p, "```") {
			t.Errorf("part %d was made a code block: %q…%q", i, p[:min(30, len(p))], p[max(0, len(p)-30):])
		}
	}
}

// Only a click on one of the bot's command buttons becomes input, and only as
// that command: whatever else a block_actions payload holds is dropped.
func TestClickInboundTakesOnlyTheBotsCommandButtons(t *testing.T) {
	click := func(edit func(*slackapi.InteractionCallback)) slackapi.InteractionCallback {
		cb := slackapi.InteractionCallback{Type: slackapi.InteractionTypeBlockActions}
		cb.User.ID = "U0ALICE"
		cb.Container.ChannelID = "C0DEV"
		cb.Message.ThreadTimestamp = "1700000000.000100"
		cb.ActionCallback.BlockActions = []*slackapi.BlockAction{{
			ActionID: "stop", Value: "stop", BlockID: actionsBlockID, ActionTs: "1700000001.000200",
		}}
		if edit != nil {
			edit(&cb)
		}
		return cb
	}
	in, ok := clickInbound(click(nil), "T0TEAM")
	want := chat.Inbound{
		Thread:  chat.ThreadRef{Platform: Platform, Team: "T0TEAM", Channel: "C0DEV", Thread: "1700000000.000100"},
		EventID: "click/U0ALICE/1700000001.000200", Author: chat.Author{ID: "U0ALICE"}, Text: "!stop",
	}
	if in.Time = (time.Time{}); !ok || !reflect.DeepEqual(in, want) {
		t.Fatalf("clickInbound = %+v, %v; want %+v", in, ok, want)
	}
	for name, edit := range map[string]func(*slackapi.InteractionCallback){
		"another app's block":  func(cb *slackapi.InteractionCallback) { cb.ActionCallback.BlockActions[0].BlockID = "their_block" },
		"value not the action": func(cb *slackapi.InteractionCallback) { cb.ActionCallback.BlockActions[0].Value = "reset" },
		"a link button":        func(cb *slackapi.InteractionCallback) { cb.ActionCallback.BlockActions[0].Value = "" },
		"not a command id": func(cb *slackapi.InteractionCallback) {
			a := cb.ActionCallback.BlockActions[0]
			a.ActionID, a.Value = "stop now", "stop now"
		},
		"a command with text": func(cb *slackapi.InteractionCallback) {
			a := cb.ActionCallback.BlockActions[0]
			a.ActionID, a.Value = "model\n!reset", "model\n!reset"
		},
		"two actions": func(cb *slackapi.InteractionCallback) {
			cb.ActionCallback.BlockActions = append(cb.ActionCallback.BlockActions, cb.ActionCallback.BlockActions[0])
		},
		"an ephemeral message": func(cb *slackapi.InteractionCallback) { cb.Container.IsEphemeral = true },
		"no action_ts":         func(cb *slackapi.InteractionCallback) { cb.ActionCallback.BlockActions[0].ActionTs = "" },
		"not in a thread":      func(cb *slackapi.InteractionCallback) { cb.Message.ThreadTimestamp = "" },
		"not a block action":   func(cb *slackapi.InteractionCallback) { cb.Type = slackapi.InteractionTypeViewSubmission },
		"nobody clicked":       func(cb *slackapi.InteractionCallback) { cb.User.ID = "" },
	} {
		if in, ok := clickInbound(click(edit), "T0TEAM"); ok {
			t.Errorf("%s: clickInbound = %+v, want it dropped", name, in)
		}
	}
}

// repoMenu is a select menu of repositories with more options than Block
// Kit takes, one label over its limit and one value no choice may carry.
func repoMenu(n int) chat.Action {
	act := chat.Action{ID: "repo", Label: "Choose a repository"}
	act.Options = append(act.Options, chat.Option{Value: "bad value", Label: "never shown"})
	for i := range n {
		v := fmt.Sprintf("repo-%03d", i)
		label := v
		if i == 0 {
			label = strings.Repeat("x", 80)
		}
		act.Options = append(act.Options, chat.Option{Value: v, Label: label})
	}
	return act
}

// A select menu is a static_select within Block Kit's limits (the fake
// refuses more), and a choice arrives as the command and the value chosen.
func TestSelectMenuChoiceArrivesAsItsCommand(t *testing.T) {
	srv := slackfake.New(t)
	h := newRecorder()
	r := startSocket(t, srv, h)
	root := srv.Mention("C0DEV", "U0ALICE", "go", "")
	h.nextFor(t, root)
	th := chat.ThreadRef{Platform: Platform, Team: srv.TeamID(), Channel: "C0DEV", Thread: root}
	ctx := testContext(t)
	ts, err := r.Adapter.Post(ctx, th, "Which repository?")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Adapter.SetActions(ctx, th, ts, "Which repository?", []chat.Action{repoMenu(120), {ID: "stop", Label: "Stop"}}); err != nil {
		t.Fatal(err)
	}
	sels := srv.Selects("C0DEV", ts)
	if len(sels) != 1 || len(sels[0].Options) != maxSelectOptions || sels[0].Placeholder.Text != "Choose a repository" {
		t.Fatalf("selects = %+v, want one menu of %d options", sels, maxSelectOptions)
	}
	if o := sels[0].Options[0]; o.Value != "repo-000" || utf8.RuneCountInString(o.Text.Text) != maxOptionTextChars {
		t.Errorf("first option = %+v, want repo-000 with its text cut to %d", o, maxOptionTextChars)
	}
	if bs := srv.Buttons("C0DEV", ts); len(bs) != 1 || bs[0].ActionID != "stop" {
		t.Errorf("buttons = %+v, want Stop beside the menu", bs)
	}
	id := srv.Choose("C0DEV", ts, "U0ALICE", "repo", "repo-042")
	in := h.nextClick(t)
	if in.Text != "!repo repo-042" || in.Thread != th || in.Author.ID != "U0ALICE" || in.Mention {
		t.Errorf("choice = %+v, want !repo repo-042 by U0ALICE in %v", in, th)
	}
	ack, err := srv.WaitEventAck(testContext(t), id)
	if err != nil {
		t.Fatal(err)
	}
	if ack.Latency >= 3*time.Second {
		t.Errorf("choice acknowledged after %s, want within 3s", ack.Latency)
	}
}

// A choice is taken only with a value the message's own menu offers, and
// that cannot be more than one word: a forged payload is dropped.
func TestChoiceInboundTakesOnlyOfferedValues(t *testing.T) {
	var msg slackapi.Message
	menu := selectElement(chat.Action{ID: "repo", Options: []chat.Option{{Value: "app"}, {Value: "web"}}})
	msg.Blocks = slackapi.Blocks{BlockSet: []slackapi.Block{slackapi.NewActionBlock(actionsBlockID, menu)}}
	raw, err := json.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	choose := func(value string, edit func(*slackapi.InteractionCallback)) slackapi.InteractionCallback {
		cb := slackapi.InteractionCallback{Type: slackapi.InteractionTypeBlockActions}
		if err := json.Unmarshal(raw, &cb.Message); err != nil {
			t.Fatal(err)
		}
		cb.User.ID = "U0ALICE"
		cb.Container.ChannelID = "C0DEV"
		cb.Message.ThreadTimestamp = "1700000000.000100"
		act := &slackapi.BlockAction{ActionID: "repo", BlockID: actionsBlockID, ActionTs: "1700000001.000200", Type: "static_select"}
		act.SelectedOption.Value = value
		cb.ActionCallback.BlockActions = []*slackapi.BlockAction{act}
		if edit != nil {
			edit(&cb)
		}
		return cb
	}
	if in, ok := clickInbound(choose("web", nil), "T0TEAM"); !ok || in.Text != "!repo web" {
		t.Fatalf("clickInbound = %+v, %v; want !repo web", in, ok)
	}
	for name, cb := range map[string]slackapi.InteractionCallback{
		"a value not offered":  choose("secret", nil),
		"a value with a break": choose("web\n!reset", nil),
		"two words":            choose("web now", nil),
		"another menu": choose("web", func(cb *slackapi.InteractionCallback) {
			cb.ActionCallback.BlockActions[0].ActionID = "model"
		}),
		"another app's block": choose("web", func(cb *slackapi.InteractionCallback) {
			cb.ActionCallback.BlockActions[0].BlockID = "their_block"
		}),
		"a multi select": choose("web", func(cb *slackapi.InteractionCallback) {
			cb.ActionCallback.BlockActions[0].Type = "multi_static_select"
		}),
	} {
		if in, ok := clickInbound(cb, "T0TEAM"); ok {
			t.Errorf("%s: clickInbound = %+v, want it dropped", name, in)
		}
	}
}

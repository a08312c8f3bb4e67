package discord_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/chat"
	discordfake "github.com/threadsmith/threadsmith/internal/fakes/discord"
)

// Buttons in direct conversations (each person has their own): the bot's
// components, an allowed click delivered as its command after a deferred
// update, a refused one answered with an ephemeral note only.
func TestButtons(t *testing.T) {
	t.Parallel()
	fake := discordfake.New(t)
	cfg := baseConfig(fake)
	cfg.AllowedUsers = []string{alice}
	e := start(t, fake, cfg)
	ctx := ctxT(t)
	acts := []chat.Action{
		{ID: "stop", Label: "Stop", Danger: true},
		{ID: "diff", Label: "Diff"},
		{ID: "pr", Label: "Open PR", URL: "https://forge.test/acme/app/pull/1"},
	}
	post := func(user string) (chat.ThreadRef, string) {
		dm := fake.DMChannel(user)
		ref := chat.ThreadRef{Platform: "discord", Channel: dm, Thread: dm}
		id, err := e.a.Post(ctx, ref, "⏳ working…")
		if err != nil {
			t.Fatal(err)
		}
		if err := e.a.SetActions(ctx, ref, id, "⏳ working…", acts); err != nil {
			t.Fatal(err)
		}
		return ref, id
	}

	ref, id := post(alice)
	bs := fake.Buttons(id)
	if len(bs) != 3 || bs[0].Style != 4 || bs[1].Style != 2 || bs[2].Style != 5 || bs[2].URL == "" || bs[2].CustomID != "" {
		t.Fatalf("buttons = %+v, want Stop (danger), Diff (secondary), a link", bs)
	}
	click := fake.Click(ref.Channel, id, alice, "diff")
	in := e.h.inbound(t, click)
	if in.Text != "!diff" || in.Thread != ref || in.Author.ID != alice || !in.DM || in.MessageID != "" {
		t.Errorf("click = %+v, want !diff by alice in %v", in, ref)
	}
	ia, err := fake.WaitForInteractionResponse(ctx, click)
	if err != nil {
		t.Fatal(err)
	}
	if ia.ResponseType != discordfake.ResponseDeferredMessageUpdate || ia.Latency >= 3*time.Second {
		t.Errorf("answered with %d after %v, want a deferred update within 3s", ia.ResponseType, ia.Latency)
	}
	if m, _ := fake.Message(id); m.Content != "⏳ working…" || len(fake.Buttons(id)) != 3 {
		t.Errorf("the deferred update changed the message: %+v", m)
	}
	// A note for the clicker goes through the click's token, ephemeral.
	if err := e.a.Whisper(ctx, in, "psst"); err != nil {
		t.Fatal(err)
	}
	if ia, _ := fake.Interaction(click); len(ia.Followups) != 1 || ia.Followups[0].Content != "psst" || ia.Followups[0].Flags&discordfake.MessageFlagEphemeral == 0 {
		t.Errorf("whisper after a click: followups %+v, want one ephemeral", ia.Followups)
	}

	// Without buttons the row goes away.
	if err := e.a.SetActions(ctx, ref, id, "done", nil); err != nil {
		t.Fatal(err)
	}
	if bs := fake.Buttons(id); len(bs) != 0 {
		t.Errorf("buttons left: %+v", bs)
	}

	// bob is not allowed: an ephemeral note, and the handler never hears of it.
	bref, bid := post(bob)
	refused := fake.Click(bref.Channel, bid, bob, "stop")
	ia, err = fake.WaitForInteractionResponse(ctx, refused)
	if err != nil {
		t.Fatal(err)
	}
	if !ia.Ephemeral || ia.Original == nil || !strings.Contains(ia.Original.Content, "not allowed") {
		t.Errorf("bob's click: got ephemeral %v %+v, want an ephemeral refusal", ia.Ephemeral, ia.Original)
	}
	e.barrier(t, ref.Channel) // events are processed in order: the click's would have come first
	if n := e.h.count(func(in chat.Inbound) bool { return in.EventID == refused }); n != 0 {
		t.Errorf("the refused click reached the handler %d times", n)
	}
}

// A select menu is a string select in a row of its own, within Discord's
// limits (the fake refuses more), and a choice arrives as the command and
// the value chosen, answered with a deferred update.
func TestSelectMenuChoice(t *testing.T) {
	t.Parallel()
	fake := discordfake.New(t)
	e := start(t, fake, baseConfig(fake))
	ctx := ctxT(t)
	menu := chat.Action{ID: "repo", Label: "Choose a repository"}
	for i := range 30 {
		menu.Options = append(menu.Options, chat.Option{Value: fmt.Sprintf("repo-%02d", i), Label: strings.Repeat("r", 120)})
	}
	dm := fake.DMChannel(alice)
	ref := chat.ThreadRef{Platform: "discord", Channel: dm, Thread: dm}
	id, err := e.a.Post(ctx, ref, "Which repository?")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.a.SetActions(ctx, ref, id, "Which repository?", []chat.Action{menu, {ID: "stop", Label: "Stop"}}); err != nil {
		t.Fatal(err)
	}
	sels := fake.Selects(id)
	if len(sels) != 1 || len(sels[0].Options) != 25 || sels[0].Placeholder != "Choose a repository" || len([]rune(sels[0].Options[0].Label)) != 100 {
		t.Fatalf("selects = %+v, want one menu of 25 options, labels cut to 100", sels)
	}
	if bs := fake.Buttons(id); len(bs) != 1 || bs[0].CustomID != "stop" {
		t.Errorf("buttons = %+v, want Stop in its own row", bs)
	}
	choice := fake.Choose(dm, id, alice, "repo", "repo-07")
	in := e.h.inbound(t, choice)
	if in.Text != "!repo repo-07" || in.Thread != ref || in.Author.ID != alice || !in.DM {
		t.Errorf("choice = %+v, want !repo repo-07 by alice in %v", in, ref)
	}
	ia, err := fake.WaitForInteractionResponse(ctx, choice)
	if err != nil {
		t.Fatal(err)
	}
	if ia.ResponseType != discordfake.ResponseDeferredMessageUpdate || ia.Latency >= 3*time.Second {
		t.Errorf("answered with %d after %v, want a deferred update within 3s", ia.ResponseType, ia.Latency)
	}
}

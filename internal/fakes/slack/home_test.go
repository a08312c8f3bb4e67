package slackfake_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	slackfake "github.com/threadsmith/threadsmith/internal/fakes/slack"
)

// views.publish through slack-go: a valid home view is stored and shown
// with the next app_home_opened; views Slack refuses are refused with its
// error codes, and nothing is stored for them.
func TestViewsPublishIsStrict(t *testing.T) {
	srv := slackfake.New(t)
	api := newAPI(srv)
	ctx := testContext(t)
	section := func(text string) slack.Block {
		return slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, text, false, false), nil, nil)
	}
	header := func(text string) slack.Block {
		return slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, text, false, false))
	}
	publish := func(user string, typ slack.ViewType, blocks ...slack.Block) error {
		_, err := api.PublishViewContext(ctx, slack.PublishViewContextRequest{UserID: user,
			View: slack.HomeTabViewRequest{Type: typ, Blocks: slack.Blocks{BlockSet: blocks}}})
		return err
	}
	c := startClient(t, srv)
	if id := srv.OpenHome("U0ALICE"); id == "" {
		t.Fatal("OpenHome delivered nothing")
	}
	if err := publish("U0ALICE", slack.VTHomeTab, header("Your sessions"), section("*one*")); err != nil {
		t.Fatalf("a valid view: %v", err)
	}
	if v, ok := srv.HomeView("U0ALICE"); !ok || !strings.Contains(string(v), "*one*") {
		t.Errorf("HomeView = %s, %v; want the view published", v, ok)
	}
	many := make([]slack.Block, 101)
	for i := range many {
		many[i] = section("x")
	}
	for _, tc := range []struct {
		name, user string
		typ        slack.ViewType
		blocks     []slack.Block
		want       string
	}{
		{"no user", "", slack.VTHomeTab, []slack.Block{section("x")}, "empty parameters"},
		{"unknown user", "U0NOBODY", slack.VTHomeTab, []slack.Block{section("x")}, "invalid_arguments"},
		{"a modal", "U0ALICE", slack.VTModal, []slack.Block{section("x")}, "invalid_arguments"},
		{"no blocks", "U0ALICE", slack.VTHomeTab, nil, "invalid_arguments"},
		{"101 blocks", "U0ALICE", slack.VTHomeTab, many, "invalid_arguments"},
		{"a section over 3,000", "U0ALICE", slack.VTHomeTab, []slack.Block{section(strings.Repeat("x", 3001))}, "invalid_arguments"},
		{"a header over 150", "U0ALICE", slack.VTHomeTab, []slack.Block{header(strings.Repeat("x", 151))}, "invalid_arguments"},
	} {
		err := publish(tc.user, tc.typ, tc.blocks...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %s", tc.name, err, tc.want)
		}
	}
	if err := publish("U0ALICE", slack.VTHomeTab, many[:100]...); err != nil {
		t.Errorf("100 blocks: %v", err)
	}
	if got := srv.CallsTo("views.publish"); len(got) != 8 { // the empty user never leaves slack-go
		t.Errorf("views.publish calls = %d, want 8", len(got))
	}

	// Each app_home_opened comes with the view published last, if any.
	srv.OpenHome("U0ALICE")
	var homes []string
	for len(homes) < 2 {
		select {
		case evt := <-c.events:
			if ev, ok := evt.Data.(slackevents.EventsAPIEvent); ok {
				if e, ok := ev.InnerEvent.Data.(*slackevents.AppHomeOpenedEvent); ok && e.User == "U0ALICE" && e.Tab == "home" {
					raw, _ := json.Marshal(e.View)
					homes = append(homes, string(raw))
				}
			}
		case <-ctx.Done():
			t.Fatalf("app_home_opened events = %d, want 2", len(homes))
		}
	}
	if homes[0] != "null" || !strings.Contains(homes[1], "x") {
		t.Errorf("the events' views = %v, want none, then the one published", homes)
	}

	off := slackfake.New(t, slackfake.WithoutHomeTab())
	offAPI := newAPI(off)
	off.DMChannel("U0ALICE")
	_, err := offAPI.PublishViewContext(ctx, slack.PublishViewContextRequest{UserID: "U0ALICE",
		View: slack.HomeTabViewRequest{Type: slack.VTHomeTab, Blocks: slack.Blocks{BlockSet: []slack.Block{section("x")}}}})
	if err == nil || !strings.Contains(err.Error(), "not_enabled") {
		t.Errorf("with the Home tab off: err %v, want not_enabled", err)
	}
	if other := slackfake.New(t, slackfake.WithBotEvents("app_mention")); other.OpenHome("U0ALICE") != "" {
		t.Error("app_home_opened delivered to an app not subscribed to it")
	}
}

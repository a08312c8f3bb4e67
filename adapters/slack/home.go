package slack

import (
	"context"
	"time"

	slackapi "github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/threadsmith/threadsmith/chat"
)

// The app's Home tab: when a person opens it (app_home_opened), the adapter
// publishes their sessions there (views.publish), the list `!sessions`
// gives, read from the handler's chat.SessionLister. Opening the tab is not
// input: the event is acknowledged at once and the view published after,
// on the person's own delivery queue.

// homeOpened returns the person who opened the app's Home tab, when ev says
// so.
func homeOpened(ev slackevents.EventsAPIEvent) (user string, ok bool) {
	e, isHome := ev.InnerEvent.Data.(*slackevents.AppHomeOpenedEvent)
	if !isHome || e.Tab != "home" || e.User == "" {
		return "", false
	}
	return e.User, true
}

// homeKey queues a person's Home tab publications one after another, apart
// from every thread.
func homeKey(user string) chat.ThreadRef {
	return chat.ThreadRef{Platform: Platform, Channel: "home", Thread: user}
}

// submitHome queues the publication of user's Home tab.
func (a *Adapter) submitHome(ctx context.Context, d *dispatcher, user string) {
	d.submit(homeKey(user), func() { a.publishHome(ctx, d, user) })
}

// publishHome publishes user's sessions on their Home tab. A handler that
// lists no sessions leaves the tab as it is.
func (a *Adapter) publishHome(ctx context.Context, d *dispatcher, user string) {
	lister, ok := d.h.(chat.SessionLister)
	if !ok {
		return
	}
	list, err := lister.Sessions(ctx, user)
	if err != nil {
		a.log.Warn("slack: listing sessions for the Home tab", "user", user, "err", err)
		return
	}
	view := homeView(list, a.now())
	if _, err := a.api.PublishViewContext(ctx, slackapi.PublishViewContextRequest{UserID: user, View: view}); err != nil && ctx.Err() == nil {
		a.log.Warn("slack: publishing the Home tab", "user", user, "err", err)
	}
}

// homeView is the Home tab of a person with these sessions: a header, then
// a session's line as `!sessions` writes it, in verbatim sections (Slack
// parses no "@channel" of a name in them) of at most a section's 3,000
// characters; chat's list of ten stays well within a view's 100 blocks.
func homeView(list []chat.SessionSummary, now time.Time) slackapi.HomeTabViewRequest {
	blocks := []slackapi.Block{
		slackapi.NewHeaderBlock(slackapi.NewTextBlockObject(slackapi.PlainTextType, "Your sessions", false, false)),
	}
	if len(list) == 0 {
		blocks = append(blocks, sectionBlocks(render("You have no sessions yet: mention me in a channel with a request, or write to me here."))...)
	}
	for _, s := range list {
		blocks = append(blocks, sectionBlocks(render(s.Markdown(now)))...)
	}
	return slackapi.HomeTabViewRequest{Type: slackapi.VTHomeTab, Blocks: slackapi.Blocks{BlockSet: blocks}}
}

package slackfake_test

import (
	"context"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"

	slackfake "github.com/threadsmith/threadsmith/internal/fakes/slack"
)

// waitTimeout bounds every wait in these tests; nothing legitimately takes this long.
const waitTimeout = 10 * time.Second

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	t.Cleanup(cancel)
	return ctx
}

// newAPI returns a real slack-go Web API client on the fake.
func newAPI(srv *slackfake.Server) *slack.Client {
	return slack.New(srv.BotToken(), slack.OptionAPIURL(srv.APIURL()), slack.OptionAppLevelToken(srv.AppToken()))
}

// client is a running slack-go Socket Mode client whose events a test reads.
type client struct {
	api    *slack.Client
	sm     *socketmode.Client
	events chan socketmode.Event
}

// startClient runs a slack-go Socket Mode client against srv until the test ends.
func startClient(t *testing.T, srv *slackfake.Server, opts ...socketmode.Option) *client {
	t.Helper()
	api := newAPI(srv)
	c := &client{api: api, sm: socketmode.New(api, opts...), events: make(chan socketmode.Event, 1024)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = c.sm.RunContext(ctx)
	}()
	forwarded := make(chan struct{})
	go func() {
		defer close(forwarded)
		for {
			select {
			case evt := <-c.sm.Events:
				select {
				case c.events <- evt:
				default:
					t.Errorf("test client: event buffer full, dropped %s", evt.Type)
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		<-forwarded
	})
	return c
}

// next returns the next event of type typ, skipping others.
func (c *client) next(t *testing.T, typ socketmode.EventType) socketmode.Event {
	t.Helper()
	timeout := time.After(waitTimeout)
	for {
		select {
		case evt := <-c.events:
			if evt.Type == typ {
				return evt
			}
		case <-timeout:
			t.Fatalf("no %s event within %s", typ, waitTimeout)
		}
	}
}

// nextEvent returns the next Events API event with its socket mode request.
func (c *client) nextEvent(t *testing.T) (slackevents.EventsAPIEvent, *socketmode.Request) {
	t.Helper()
	evt := c.next(t, socketmode.EventTypeEventsAPI)
	ev, ok := evt.Data.(slackevents.EventsAPIEvent)
	if !ok {
		t.Fatalf("events_api data is %T, want slackevents.EventsAPIEvent", evt.Data)
	}
	return ev, evt.Request
}

// eventID is the event_id of an event_callback.
func eventID(t *testing.T, ev slackevents.EventsAPIEvent) string {
	t.Helper()
	cb, ok := ev.Data.(*slackevents.EventsAPICallbackEvent)
	if !ok {
		t.Fatalf("outer event is %T, want *slackevents.EventsAPICallbackEvent", ev.Data)
	}
	return cb.EventID
}

package slackfake

import (
	"context"
	"sync"
	"testing"

	slackapi "github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"
)

// StartAckingClient connects a bare slack-go Socket Mode client that
// acknowledges every events_api envelope the moment it arrives, and stops it
// when the test ends. It is the floor that ack-latency benchmarks compare the
// adapter and the whole bot with: the cost of the transport alone.
func StartAckingClient(tb testing.TB, s *Server) {
	tb.Helper()
	api := slackapi.New(s.BotToken(), slackapi.OptionAPIURL(s.APIURL()), slackapi.OptionAppLevelToken(s.AppToken()))
	sm := socketmode.New(api)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = sm.RunContext(ctx) })
	wg.Go(func() {
		for {
			select {
			case evt := <-sm.Events:
				if evt.Type == socketmode.EventTypeEventsAPI {
					_ = sm.Ack(*evt.Request)
				}
			case <-ctx.Done():
				return
			}
		}
	})
	tb.Cleanup(func() { cancel(); wg.Wait() })
}

package slack

import (
	"context"
	"fmt"
	"log/slog"

	slackapi "github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"
)

// runSocket receives events over Socket Mode until ctx ends or slack-go gives
// up (refused credentials). slack-go reconnects on its own after disconnect
// frames, dead connections and failed dials; after each reconnect the adapter
// catches up on active threads.
func (a *Adapter) runSocket(ctx context.Context, d *dispatcher) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sm := socketmode.New(a.api, socketmode.OptionLog(slog.NewLogLogger(a.log.Handler(), slog.LevelDebug)))

	runErr := make(chan error, 1)
	go func() { runErr <- sm.RunContext(ctx) }()

	cu := newCatchUp(a, d)
	cuDone := make(chan struct{})
	go func() {
		defer close(cuDone)
		cu.loop(ctx)
	}()
	defer func() {
		cancel()
		<-cuDone
	}()

	// slack-go blocks on Events until read or ctx ends: this loop must keep
	// reading until RunContext has returned, and must never block on a thread.
	for {
		select {
		case err := <-runErr:
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("slack: socket mode: %w", err)
		case evt := <-sm.Events:
			a.onSocketEvent(ctx, sm, d, cu, evt)
		}
	}
}

// onSocketEvent handles one event of slack-go's Socket Mode client.
func (a *Adapter) onSocketEvent(ctx context.Context, sm *socketmode.Client, d *dispatcher, cu *catchUp, evt socketmode.Event) {
	switch evt.Type {
	case socketmode.EventTypeConnected:
		a.connected.Store(true)
		if ce, ok := evt.Data.(*socketmode.ConnectedEvent); ok && ce.ConnectionCount > 0 {
			a.log.Info("slack: socket mode reconnected; catching up on active threads", "connection", ce.ConnectionCount)
			cu.trigger()
		}
	case socketmode.EventTypeConnectionError:
		a.connected.Store(false)
		a.log.Warn("slack: socket mode connection failed; slack-go retries", "err", evt.Data)
	case socketmode.EventTypeDisconnect:
		a.connected.Store(false)
		a.log.Info("slack: socket mode disconnect requested; reconnecting")
	case socketmode.EventTypeInvalidAuth:
		a.connected.Store(false)
		a.log.Error("slack: socket mode refused the app token")
	case socketmode.EventTypeEventsAPI:
		ev, ok := evt.Data.(slackevents.EventsAPIEvent)
		if !ok || evt.Request == nil {
			return
		}
		a.onEnvelope(ctx, sm, d, *evt.Request, ev)
	case socketmode.EventTypeInteractive:
		// A button: acknowledged before anything else (Slack shows the
		// person an error after 3 s), then delivered as its command.
		if evt.Request != nil {
			a.ack(ctx, sm, evt.Request.EnvelopeID)
		}
		if cb, ok := evt.Data.(slackapi.InteractionCallback); ok {
			a.onClick(ctx, d, cb)
		}
	case socketmode.EventTypeSlashCommand:
		// Not subscribed to; acknowledged so that Slack does not retry them.
		if evt.Request != nil {
			a.ack(ctx, sm, evt.Request.EnvelopeID)
		}
	}
}

// onEnvelope delivers one events_api envelope: at once acknowledged when it is
// not input, else queued on its thread and acknowledged after Receive.
func (a *Adapter) onEnvelope(ctx context.Context, sm *socketmode.Client, d *dispatcher, req socketmode.Request, ev slackevents.EventsAPIEvent) {
	if user, ok := homeOpened(ev); ok {
		a.ack(ctx, sm, req.EnvelopeID)
		a.submitHome(ctx, d, user)
		return
	}
	m, eventID, ok := fromEvent(ev)
	if !ok || !m.isInput(d.id) {
		a.ack(ctx, sm, req.EnvelopeID)
		return
	}
	in := m.inbound(d.id, eventID)
	if req.RetryAttempt > 0 {
		a.log.Debug("slack: redelivered event", "event", eventID, "attempt", req.RetryAttempt, "reason", req.RetryReason)
	}
	envelope := req.EnvelopeID
	d.submit(in.Thread, func() {
		if d.deliverMessage(ctx, in) == nil {
			a.ack(ctx, sm, envelope)
		}
	})
}

func (a *Adapter) ack(ctx context.Context, sm *socketmode.Client, envelopeID string) {
	if err := sm.AckCtx(ctx, envelopeID, nil); err != nil && ctx.Err() == nil {
		a.log.Warn("slack: acknowledging envelope failed", "envelope", envelopeID, "err", err)
	}
}

package discord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"

	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/internal/backoff"
	"github.com/threadsmith/threadsmith/internal/execqueue"
)

// runner is one Run: its handler and event queue.
type runner struct {
	a *Adapter
	h chat.Handler
	// ctx is the Run's context for the event queue and the goroutines
	// handlers start (interaction answers), which have no caller to take one
	// from.
	ctx context.Context

	// q holds the gateway's events, handled in order by r.handle: pushing
	// never blocks discordgo's reader.
	q execqueue.Queue[event]
	// disconnected is signalled when discordgo lost or closed the gateway.
	disconnected chan struct{}
	// answers tracks the goroutines that answer interactions.
	answers sync.WaitGroup
	// registered says the commands were registered in this Run (q's Run only).
	registered bool
}

// Run connects to the gateway, registers the slash commands and delivers
// input to h until ctx ends; then it closes the gateway session (which takes
// discordgo a second) and returns nil once every goroutine it started has
// stopped. It returns an error early only for failures that retrying cannot
// fix: a rejected token (close 4004) or refused intents (4014: the
// MESSAGE_CONTENT privileged intent is not enabled).
func (a *Adapter) Run(ctx context.Context, h chat.Handler) error {
	if !a.running.CompareAndSwap(false, true) {
		return errors.New("discord: Run is already running")
	}
	defer a.running.Store(false)

	wctx, stopEvents := context.WithCancel(ctx)
	r := &runner{a: a, h: h, ctx: wctx, disconnected: make(chan struct{}, 1)}
	r.q.Run = r.handle
	r.q.Log = a.log
	r.q.Name = eventName
	removeEvents := a.s.AddHandler(r.onEvent)
	removeDisconnect := a.s.AddHandler(func(*discordgo.Session, *discordgo.Disconnect) {
		a.connected.Store(false)
		select {
		case r.disconnected <- struct{}{}:
		default:
		}
	})
	defer func() {
		a.connected.Store(false)
		a.s.Close() // a second while connected; at once otherwise
		stopEvents()
		// Events still queued are dropped (handle sees the context ended);
		// the one being handled ends with it.
		r.q.Close()
		_ = r.q.Wait(context.Background())
		r.answers.Wait()
		removeEvents()
		removeDisconnect()
	}()

	if err := r.connect(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-r.disconnected:
			a.log.Info("gateway disconnected; reconnecting")
			if err := r.connect(ctx); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
		}
	}
}

// connect opens the gateway, retrying transient failures with backoff until
// it is open, ctx ends, or a failure that retrying cannot fix.
func (r *runner) connect(ctx context.Context) error {
	var b backoff.Backoff
	for {
		err := r.a.open(ctx)
		if err == nil || errors.Is(err, discordgo.ErrWSAlreadyOpen) {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if fatal := fatalGatewayError(err); fatal != nil {
			r.a.log.Error("gateway refused the bot", "err", fatal)
			return fatal
		}
		wait := b.Next()
		r.a.log.Warn("gateway connection failed; retrying", "err", unwrapURLError(err), "in", wait)
		if !backoff.Sleep(ctx, wait) {
			return ctx.Err()
		}
	}
}

// open runs one discordgo Open, bounded by ctx and the open timeout: the
// gateway lookup and the connection it dials are cut when either ends first.
func (a *Adapter) open(ctx context.Context) error {
	octx, cancel := context.WithTimeout(ctx, a.openTimeout)
	defer cancel()
	a.mu.Lock()
	a.openCtx = octx
	a.mu.Unlock()
	err := a.s.Open()
	a.mu.Lock()
	stops := a.dialStops
	a.dialStops, a.openCtx = nil, nil
	a.mu.Unlock()
	for _, stop := range stops {
		stop() // the connection now belongs to discordgo until Close
	}
	return err
}

// fatalGatewayError explains the gateway close codes that retrying cannot fix,
// and returns nil for every other error.
func fatalGatewayError(err error) error {
	var ce *websocket.CloseError
	if !errors.As(err, &ce) {
		var re *discordgo.RESTError
		if errors.As(err, &re) && re.Response != nil && re.Response.StatusCode == 401 {
			return errors.New("discord: Discord rejected the bot token (HTTP 401): check discord.token")
		}
		return nil
	}
	switch ce.Code {
	case 4004:
		return errors.New("discord: Discord rejected the bot token (gateway close 4004 Authentication failed): check discord.token")
	case 4014:
		return errors.New("discord: Discord refused the gateway intents (close 4014 Disallowed intent(s)): " +
			"enable the MESSAGE_CONTENT privileged intent for this bot in the Discord Developer Portal " +
			"(Applications → your app → Bot → Privileged Gateway Intents → Message Content Intent)")
	case 4010, 4011, 4012, 4013:
		return fmt.Errorf("discord: the gateway closed the connection for good (close %d %s)", ce.Code, ce.Text)
	}
	return nil
}

// Events the worker processes, in gateway order.
type (
	event interface{ isEvent() }

	// readyEvent is READY (a new gateway session) or RESUMED.
	readyEvent struct{ resumed bool }

	// messageEvent is a MESSAGE_CREATE, decoded privately (discordgo's state
	// may keep and update the struct it hands to handlers).
	messageEvent struct{ m *discordgo.Message }

	// interactionEvent is an application command or a button click (click
	// is the action's id), already being answered.
	interactionEvent struct {
		i     *discordgo.Interaction
		cmd   *command
		click string
		// choice is the value chosen in the select menu click, "" for a
		// button.
		choice string
		kind   channelKind
		resp   answer
		// answered is closed when the first answer was sent; err says how it went.
		answered chan struct{}
		err      error
	}
)

func (readyEvent) isEvent()        {}
func (messageEvent) isEvent()      {}
func (*interactionEvent) isEvent() {}

// eventName names an event in the log line of a panic.
func eventName(e event) string {
	switch e := e.(type) {
	case readyEvent:
		return "ready"
	case messageEvent:
		return "message " + e.m.ID
	case *interactionEvent:
		if e.i != nil {
			return "interaction " + e.i.ID
		}
	}
	return fmt.Sprintf("%T", e)
}

// onEvent is discordgo's handler for every dispatch. It runs on discordgo's
// reading goroutine (inside Open for READY and RESUMED), so it only records
// and queues.
func (r *runner) onEvent(_ *discordgo.Session, e *discordgo.Event) {
	switch e.Type {
	case "READY":
		if rd, ok := e.Struct.(*discordgo.Ready); ok {
			r.a.setIdentity(rd)
		}
		r.a.connected.Store(true)
		r.q.Add(readyEvent{})
	case "RESUMED":
		r.a.connected.Store(true)
		r.q.Add(readyEvent{resumed: true})
	case "MESSAGE_CREATE":
		m := new(discordgo.Message)
		if err := json.Unmarshal(e.RawData, m); err != nil {
			r.a.log.Warn("undecodable MESSAGE_CREATE", "err", err)
			return
		}
		r.q.Add(messageEvent{m: m})
	case "INTERACTION_CREATE":
		r.onInteraction(e.RawData)
	}
}

// handle processes one event, in gateway order, with the Run's context;
// once that has ended, it drops the event.
func (r *runner) handle(e event) {
	ctx := r.ctx
	if ctx.Err() != nil {
		return
	}
	switch e := e.(type) {
	case readyEvent:
		if !e.resumed && !r.registered {
			r.a.registerCommands(ctx)
			r.registered = true
		}
		r.catchUp(ctx)
	case messageEvent:
		r.message(ctx, e.m)
	case *interactionEvent:
		r.interaction(ctx, e)
	}
}

// receive hands in to the handler, retrying failures a few times.
func (r *runner) receive(ctx context.Context, in chat.Inbound) (chat.Receipt, error) {
	for attempt := 0; ; attempt++ {
		rc, err := r.h.Receive(ctx, in)
		if err == nil {
			r.a.noteRequester(in, rc)
		}
		if err == nil || ctx.Err() != nil || attempt >= len(r.a.receiveRetry) {
			return rc, err
		}
		r.a.log.Warn("handler refused to take input; retrying", "thread", in.Thread.Key(), "event", in.EventID, "err", err)
		if !backoff.Sleep(ctx, r.a.receiveRetry[attempt]) {
			return rc, err
		}
	}
}

// failNote tells a channel that input could not be taken, so nothing a user
// typed is dropped silently.
func (r *runner) failNote(ctx context.Context, ref chat.ThreadRef, what string, err error) {
	r.a.log.Error("input lost: the handler did not take it", "thread", ref.Key(), "err", err)
	if ctx.Err() != nil {
		return
	}
	text := "⚠️ I couldn't take " + what + " (an internal error). Please send it again."
	if _, perr := r.a.s.ChannelMessageSendComplex(ref.Channel, &discordgo.MessageSend{
		Content: text, AllowedMentions: &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}},
	}, ownCall(ctx)...); perr != nil {
		r.a.log.Warn("could not post the note", "thread", ref.Key(), "err", restError("post", perr, nil))
	}
}

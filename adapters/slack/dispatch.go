package slack

import (
	"context"

	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/internal/execqueue"
)

// dispatcher hands input to the handler: one serial queue per thread, so a
// thread's messages reach Receive in arrival order and one slow thread delays
// no other, with at most a fixed number of Receive calls in flight overall.
type dispatcher struct {
	a   *Adapter
	h   chat.Handler
	id  identity
	sem chan struct{}
	// queues holds a queue per thread key with work; a job that panics is
	// logged and the thread's next job runs.
	queues execqueue.Keyed[string, func()]
}

func newDispatcher(a *Adapter, h chat.Handler, id identity, concurrency int) *dispatcher {
	d := &dispatcher{a: a, h: h, id: id, sem: make(chan struct{}, concurrency)}
	d.queues.Run = func(job func()) { job() }
	d.queues.Log = a.log
	return d
}

// submit runs job after every job submitted before for the same thread.
func (d *dispatcher) submit(thread chat.ThreadRef, job func()) {
	d.queues.Add(thread.Key(), job)
}

// deliver completes in's author and hands it to Receive. It returns Receive's
// error; nil means the message is durable and may be acknowledged.
func (d *dispatcher) deliver(ctx context.Context, in chat.Inbound) error {
	select {
	case d.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-d.sem }()
	in.Author = d.a.users.author(ctx, in.Author.ID)
	d.a.noteAsker(in.Thread, in.Author.ID)
	receipt, err := d.h.Receive(ctx, in)
	if err != nil {
		d.a.log.Warn("slack: receive failed; not acknowledged, Slack will deliver it again",
			"thread", in.Thread.Key(), "event", in.EventID, "ts", in.MessageID, "err", err)
		return err
	}
	d.a.log.Debug("slack: received", "thread", in.Thread.Key(), "event", in.EventID, "ts", in.MessageID, "receipt", receipt.String())
	return nil
}

// deliverMessage is deliver for a message a person typed: its text becomes
// plain text first (plain), once, here.
func (d *dispatcher) deliverMessage(ctx context.Context, in chat.Inbound) error {
	in.Text = d.a.plain(ctx, in.Text)
	return d.deliver(ctx, in)
}

// wait returns once every submitted job has finished. Jobs end with the
// context they were submitted with, so wait follows Run's ctx.
func (d *dispatcher) wait() { _ = d.queues.Wait(context.Background()) }

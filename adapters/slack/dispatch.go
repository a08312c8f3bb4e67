package slack

import (
	"context"
	"sync"

	"github.com/threadsmith/threadsmith/chat"
)

// dispatcher hands input to the handler: one serial queue per thread, so a
// thread's messages reach Receive in arrival order and one slow thread delays
// no other, with at most a fixed number of Receive calls in flight overall.
type dispatcher struct {
	a      *Adapter
	h      chat.Handler
	id     identity
	sem    chan struct{}
	queues serialQueues
}

func newDispatcher(a *Adapter, h chat.Handler, id identity, concurrency int) *dispatcher {
	return &dispatcher{a: a, h: h, id: id, sem: make(chan struct{}, concurrency)}
}

// submit runs job after every job submitted before for the same thread.
func (d *dispatcher) submit(thread chat.ThreadRef, job func()) {
	d.queues.do(thread.Key(), job)
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

// wait returns once every submitted job has finished.
func (d *dispatcher) wait() { d.queues.wait() }

// serialQueues runs jobs one at a time per key, in submission order. A key has a
// goroutine only while it has work (as tailscale's execqueue), so idle threads
// cost nothing. The zero value is ready to use.
type serialQueues struct {
	mu      sync.Mutex
	pending map[string][]func()
	wg      sync.WaitGroup
}

func (q *serialQueues) do(key string, job func()) {
	q.mu.Lock()
	if jobs, busy := q.pending[key]; busy {
		q.pending[key] = append(jobs, job)
		q.mu.Unlock()
		return
	}
	if q.pending == nil {
		q.pending = map[string][]func(){}
	}
	q.pending[key] = nil // busy, nothing waiting
	q.wg.Add(1)
	q.mu.Unlock()
	go q.drain(key, job)
}

func (q *serialQueues) drain(key string, job func()) {
	defer q.wg.Done()
	for {
		job()
		q.mu.Lock()
		jobs := q.pending[key]
		if len(jobs) == 0 {
			delete(q.pending, key)
			q.mu.Unlock()
			return
		}
		job = jobs[0]
		jobs[0] = nil
		q.pending[key] = jobs[1:]
		q.mu.Unlock()
	}
}

func (q *serialQueues) wait() { q.wg.Wait() }

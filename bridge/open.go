package bridge

// Work that does not begin in chat (a schedule's firing, an issue) opens a
// thread of its own: the bridge posts its opening message in a channel,
// and the request enters the thread as a mention would, through the same
// durable input, routing and run slots.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/internal/crashpoint"
)

// OpenRequest is a request that opens (or continues) a thread of the bot's
// own. The caller is trusted (a verified webhook, a configured schedule):
// the allowlists of people do not apply; the channel's repositories and
// allowed_channels do.
type OpenRequest struct {
	// Platform and Channel are where the thread opens (Discord: the text
	// channel a thread is started in).
	Platform, Channel string
	// Title is the opening message's first line ("⏰ nightly").
	Title string
	// Text is the session's request.
	Text string
	// Author is whom the request is attributed to.
	Author chat.Author
	// Origin is where the session came from ("schedule nightly", "issue
	// #12"), kept on its thread's record.
	Origin string
	// Repo is the repository to work on; "" takes the channel's, as a
	// mention there would.
	Repo string
	// Thread names the thread: an Open whose Thread was opened before adds
	// Text to that thread instead of opening another. "" opens a thread per
	// Delivery.
	Thread string
	// Delivery identifies the request: delivered again (a redelivered
	// webhook, a firing retried), it is taken once. Required.
	Delivery string
}

// openQuoteRunes is how much of the request the opening message quotes.
const openQuoteRunes = 1500

// Open opens a thread on req's platform and channel (or finds the one
// req.Thread opened before) and gives it req.Text as input from
// req.Author, durably and once per req.Delivery. It returns the thread.
//
// The thread is created once per req.Thread, whatever crashes between the
// steps: the opening is recorded (storage.OpeningStore) before its message
// is posted, and the message's thread after; an opening found recorded
// without a thread may have posted, so it is posted again as a retry
// (chat.OnceOpener), which finds that message instead of posting another.
func (b *Bridge) Open(ctx context.Context, req OpenRequest) (chat.ThreadRef, error) {
	p := b.platforms[req.Platform]
	switch {
	case p == nil:
		return chat.ThreadRef{}, fmt.Errorf("bridge: open: no platform %q", req.Platform)
	case req.Channel == "" || req.Delivery == "":
		return chat.ThreadRef{}, errors.New("bridge: open: a channel and a delivery are required")
	case strings.TrimSpace(req.Text) == "":
		return chat.ThreadRef{}, errors.New("bridge: open: the request is empty")
	case len(p.AllowedChannels) > 0 && !slices.Contains(p.AllowedChannels, req.Channel):
		return chat.ThreadRef{}, fmt.Errorf("bridge: open: channel %s is not in %s's allowed_channels", req.Channel, p.name)
	}
	opener, ok := p.Adapter.(chat.Opener)
	if !ok {
		return chat.ThreadRef{}, fmt.Errorf("bridge: open: %s cannot open threads", p.name)
	}
	// The repository is resolved before anything is posted: a channel
	// that may not open it gets no thread.
	probe := chat.Inbound{Thread: chat.ThreadRef{Platform: p.name, Channel: req.Channel}, Repo: req.Repo, Parent: req.Channel, Mention: true}
	repo, err := b.resolveRepo(p, probe)
	if na := (*chat.NotAllowedError)(nil); errors.As(err, &na) {
		return chat.ThreadRef{}, fmt.Errorf("bridge: open: %s", na.Note)
	}
	if err != nil {
		return chat.ThreadRef{}, fmt.Errorf("bridge: open: %w", err)
	}

	name := req.Thread
	if name == "" {
		name = req.Delivery
	}
	select {
	case b.opening <- struct{}{}:
		defer func() { <-b.opening }()
	case <-ctx.Done():
		return chat.ThreadRef{}, ctx.Err()
	}
	key := "open/" + name
	o, err := b.cfg.Store.BeginOpening(ctx, p.name, key)
	if err != nil {
		return chat.ThreadRef{}, err
	}
	thread := o.Thread
	if !o.Opened() {
		text := openingText(req.Title, req.Text)
		var ref chat.ThreadRef
		if once, ok := opener.(chat.OnceOpener); ok {
			ref, err = once.OpenOnce(ctx, req.Channel, text, chat.PostKey{ID: openPostKey(p.name, key), Retry: !o.Created, First: o.First})
		} else {
			if !o.Created {
				b.log.Warn("opening a thread again: an earlier attempt may have posted one", "platform", p.name, "opening", name)
			}
			ref, err = opener.Open(ctx, req.Channel, text)
		}
		if err != nil {
			return chat.ThreadRef{}, fmt.Errorf("bridge: open: %w", err)
		}
		crashpoint.Hit(crashpoint.Opened)
		if thread, err = b.cfg.Store.FinishOpening(ctx, p.name, key, storeKey(ref)); err != nil {
			return chat.ThreadRef{}, err
		}
		b.log.Info("opened a thread", "thread", refOf(thread).Key(), "origin", req.Origin)
	}
	ref := refOf(thread)
	in := chat.Inbound{
		Thread: ref, EventID: "open/" + req.Delivery, Author: req.Author, Text: req.Text,
		Mention: true, Repo: repo, Time: b.cfg.Now(),
	}
	if ref.Channel != req.Channel {
		in.Parent = req.Channel // a thread that is a channel of its own (Discord)
	}
	if _, err := (&handler{b: b, p: p}).admit(ctx, in, true, req.Origin); err != nil {
		return chat.ThreadRef{}, err
	}
	return ref, nil
}

// openingText is a thread's opening message: its title, then the request
// quoted (its beginning, when long).
func openingText(title, text string) string {
	text = strings.TrimSpace(text)
	if r := []rune(text); len(r) > openQuoteRunes {
		text = string(r[:openQuoteRunes]) + "…"
	}
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		lines[i] = "> " + l
	}
	title = strings.TrimSpace(title)
	if title == "" {
		return strings.Join(lines, "\n")
	}
	return title + "\n" + strings.Join(lines, "\n")
}

// openPostKey is the post key of an opening's message: the same on every
// attempt, and short enough for Discord's nonce (25 characters).
func openPostKey(platform, key string) string {
	sum := sha256.Sum256([]byte(platform + "/" + key))
	return "o" + hex.EncodeToString(sum[:12])
}

// Package chatfake is an in-process chat platform for end-to-end tests of the
// bridge and the program: a chat.Adapter with every optional capability that
// keeps each thread's messages (people's and the bot's, edits applied),
// reactions, uploads, private notes and status updates, and lets a test speak
// as a person. All methods are safe for concurrent use.
package chatfake

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/threadsmith/threadsmith/chat"
)

// Msg is one message of a thread.
type Msg struct {
	ID     string
	Thread chat.ThreadRef
	Text   string
	Bot    bool
	Author chat.Author
	Edits  int
}

// Upload is a file the bot attached.
type Upload struct {
	Thread  chat.ThreadRef
	Name    string
	Content string
	Comment string
}

// Adapter is the fake platform.
type Adapter struct {
	platform string
	limit    int

	mu      sync.Mutex
	handler chat.Handler
	// ready is closed while a Run has its handler in place; a Run that
	// ended puts a fresh one there, so that after a restart of the bot
	// messages wait for the new bot's handler instead of reaching the old.
	ready     chan struct{}
	msgs      []*Msg
	byID      map[string]*Msg
	reactions map[string][]string
	uploads   []Upload
	whispers  []string
	statuses  []string
	files     map[string]string
	nextID    int
	changed   chan struct{}
	postErr   error
	openKeys  map[string]chat.ThreadRef // the threads OpenOnce opened, by key
	openings  []chat.ThreadRef
}

// New returns a fake platform named platform whose messages are split at limit.
func New(platform string, limit int) *Adapter {
	return &Adapter{
		platform: platform, limit: limit, ready: make(chan struct{}),
		byID: map[string]*Msg{}, reactions: map[string][]string{}, files: map[string]string{},
		changed: make(chan struct{}),
	}
}

var (
	_ chat.Adapter       = (*Adapter)(nil)
	_ chat.Editor        = (*Adapter)(nil)
	_ chat.Reactor       = (*Adapter)(nil)
	_ chat.Uploader      = (*Adapter)(nil)
	_ chat.Whisperer     = (*Adapter)(nil)
	_ chat.StatusSetter  = (*Adapter)(nil)
	_ chat.HistoryReader = (*Adapter)(nil)
	_ chat.Downloader    = (*Adapter)(nil)
	_ chat.OnceOpener    = (*Adapter)(nil)
	_ chat.Opener        = (*Adapter)(nil)
)

func (a *Adapter) Platform() string    { return a.platform }
func (a *Adapter) Limits() chat.Limits { return chat.Limits{MaxMessageChars: a.limit} }

// Run makes the adapter deliver what Say sends until ctx ends. A Run that
// starts before the previous one ended (a restarted bot whose old Run has
// not returned yet) takes over from it.
func (a *Adapter) Run(ctx context.Context, h chat.Handler) error {
	a.mu.Lock()
	a.handler = h
	select {
	case <-a.ready: // the previous Run is still in place: this one replaces it
		a.ready = make(chan struct{})
	default:
	}
	ready := a.ready
	close(ready)
	a.mu.Unlock()
	<-ctx.Done()
	a.mu.Lock()
	if a.ready == ready {
		a.handler = nil
		a.ready = make(chan struct{})
	}
	a.mu.Unlock()
	return nil
}

// Handler waits until a Run is under way and returns its handler.
func (a *Adapter) Handler(ctx context.Context) (chat.Handler, error) {
	for {
		a.mu.Lock()
		ready := a.ready
		a.mu.Unlock()
		select {
		case <-ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		a.mu.Lock()
		h := a.handler
		a.mu.Unlock()
		if h != nil {
			return h, nil
		}
		// That Run has ended meanwhile: wait for the next one.
	}
}

// Person is who speaks in Say.
type Person = chat.Author

// Say posts a person's message in thread and delivers it (as a mention when
// mention is set), returning its id and the handler's receipt.
func (a *Adapter) Say(ctx context.Context, thread chat.ThreadRef, who Person, text string, mention bool, files ...chat.Attachment) (string, chat.Receipt, error) {
	h, err := a.Handler(ctx)
	if err != nil {
		return "", 0, err
	}
	a.mu.Lock()
	id := a.newIDLocked()
	a.msgs = append(a.msgs, &Msg{ID: id, Thread: thread, Text: text, Author: who})
	a.byID[id] = a.msgs[len(a.msgs)-1]
	a.notifyLocked()
	a.mu.Unlock()
	r, err := h.Receive(ctx, chat.Inbound{Thread: thread, EventID: "ev-" + id, MessageID: id, Author: who, Text: text, Mention: mention, Attachments: files, Time: time.Now()})
	return id, r, err
}

// Redeliver delivers a message again with the same ids, as platforms do.
func (a *Adapter) Redeliver(ctx context.Context, id string, mention bool) (chat.Receipt, error) {
	h, err := a.Handler(ctx)
	if err != nil {
		return 0, err
	}
	a.mu.Lock()
	m := a.byID[id]
	a.mu.Unlock()
	if m == nil {
		return 0, fmt.Errorf("chatfake: no message %s", id)
	}
	return h.Receive(ctx, chat.Inbound{Thread: m.Thread, EventID: "ev-" + id, MessageID: id, Author: m.Author, Text: m.Text, Mention: mention})
}

// AddFile makes url downloadable with content.
func (a *Adapter) AddFile(url, content string) {
	a.mu.Lock()
	a.files[url] = content
	a.mu.Unlock()
}

// FailPosts makes Post fail with err (nil to stop).
func (a *Adapter) FailPosts(err error) {
	a.mu.Lock()
	a.postErr = err
	a.mu.Unlock()
}

// StartIDsAt makes the platform number the messages it makes from n on:
// two fakes standing for two connections to one platform (replicas of the
// bot) must not give two messages one id.
func (a *Adapter) StartIDsAt(n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.nextID = n - 1000
}

func (a *Adapter) newIDLocked() string {
	a.nextID++
	return strconv.Itoa(1000 + a.nextID)
}

func (a *Adapter) notifyLocked() {
	close(a.changed)
	a.changed = make(chan struct{})
}

// Post implements chat.Adapter.
func (a *Adapter) Post(_ context.Context, thread chat.ThreadRef, text string) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.postErr != nil {
		return "", a.postErr
	}
	if a.limit > 0 && len([]rune(text)) > a.limit {
		return "", fmt.Errorf("chatfake: message of %d characters exceeds the limit %d", len([]rune(text)), a.limit)
	}
	id := a.newIDLocked()
	m := &Msg{ID: id, Thread: thread, Text: text, Bot: true}
	a.msgs = append(a.msgs, m)
	a.byID[id] = m
	a.notifyLocked()
	return id, nil
}

// Open implements chat.Opener: text becomes the first message of a new
// thread in channel (team T1), whose id is the thread's.
func (a *Adapter) Open(ctx context.Context, channel, text string) (chat.ThreadRef, error) {
	return a.OpenOnce(ctx, channel, text, chat.PostKey{})
}

// OpenOnce implements chat.OnceOpener: a retry of a key opened before
// returns that thread.
func (a *Adapter) OpenOnce(_ context.Context, channel, text string, key chat.PostKey) (chat.ThreadRef, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if th, ok := a.openKeys[key.ID]; ok && key.ID != "" && key.Retry {
		return th, nil
	}
	if a.postErr != nil {
		return chat.ThreadRef{}, a.postErr
	}
	id := a.newIDLocked()
	th := chat.ThreadRef{Platform: a.platform, Team: "T1", Channel: channel, Thread: id}
	m := &Msg{ID: id, Thread: th, Text: text, Bot: true}
	a.msgs = append(a.msgs, m)
	a.byID[id] = m
	a.openings = append(a.openings, th)
	if key.ID != "" {
		if a.openKeys == nil {
			a.openKeys = map[string]chat.ThreadRef{}
		}
		a.openKeys[key.ID] = th
	}
	a.notifyLocked()
	return th, nil
}

// Openings returns the threads the bot opened, in order.
func (a *Adapter) Openings() []chat.ThreadRef {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.openings)
}

// Edit implements chat.Editor.
func (a *Adapter) Edit(_ context.Context, _ chat.ThreadRef, id, text string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	m := a.byID[id]
	if m == nil || !m.Bot {
		return fmt.Errorf("chatfake: cannot edit %s", id)
	}
	if a.limit > 0 && len([]rune(text)) > a.limit {
		return fmt.Errorf("chatfake: edit of %d characters exceeds the limit %d", len([]rune(text)), a.limit)
	}
	m.Text = text
	m.Edits++
	a.notifyLocked()
	return nil
}

// React implements chat.Reactor.
func (a *Adapter) React(_ context.Context, _ chat.ThreadRef, id, emoji string, add bool) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	rs := slices.DeleteFunc(a.reactions[id], func(s string) bool { return s == emoji })
	if add {
		rs = append(rs, emoji)
	}
	a.reactions[id] = rs
	a.notifyLocked()
	return nil
}

// Upload implements chat.Uploader.
func (a *Adapter) Upload(_ context.Context, thread chat.ThreadRef, name string, content []byte, comment string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.uploads = append(a.uploads, Upload{Thread: thread, Name: name, Content: string(content), Comment: comment})
	a.notifyLocked()
	return nil
}

// Whisper implements chat.Whisperer.
func (a *Adapter) Whisper(_ context.Context, to chat.Inbound, text string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.whispers = append(a.whispers, to.Author.ID+": "+text)
	a.notifyLocked()
	return nil
}

// SetStatus implements chat.StatusSetter.
func (a *Adapter) SetStatus(_ context.Context, _ chat.ThreadRef, status string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.statuses = append(a.statuses, status)
	return nil
}

// History implements chat.HistoryReader: the people's messages of the thread
// before id.
func (a *Adapter) History(_ context.Context, thread chat.ThreadRef, before string) ([]chat.HistoryMessage, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []chat.HistoryMessage
	for _, m := range a.msgs {
		if m.ID == before {
			break
		}
		if m.Thread == thread && !m.Bot {
			out = append(out, chat.HistoryMessage{Author: m.Author, Text: m.Text})
		}
	}
	return out, nil
}

// Download implements chat.Downloader.
func (a *Adapter) Download(_ context.Context, url string) (io.ReadCloser, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	c, ok := a.files[url]
	if !ok {
		return nil, errors.New("chatfake: no such file")
	}
	return io.NopCloser(strings.NewReader(c)), nil
}

// Messages returns copies of a thread's messages in order.
func (a *Adapter) Messages(thread chat.ThreadRef) []Msg {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []Msg
	for _, m := range a.msgs {
		if m.Thread == thread {
			out = append(out, *m)
		}
	}
	return out
}

// BotTexts returns the texts of the bot's messages in a thread.
func (a *Adapter) BotTexts(thread chat.ThreadRef) []string {
	var out []string
	for _, m := range a.Messages(thread) {
		if m.Bot {
			out = append(out, m.Text)
		}
	}
	return out
}

// Transcript is every bot message of a thread joined, for substring checks.
func (a *Adapter) Transcript(thread chat.ThreadRef) string {
	return strings.Join(a.BotTexts(thread), "\n---\n")
}

// Reactions returns the bot's current reactions on a message.
func (a *Adapter) Reactions(id string) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.reactions[id])
}

// Uploads returns the files the bot attached.
func (a *Adapter) Uploads() []Upload {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.uploads)
}

// Whispers returns the private notes as "user: text".
func (a *Adapter) Whispers() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.whispers)
}

// Statuses returns every status set, in order.
func (a *Adapter) Statuses() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.statuses)
}

// WaitFor blocks until cond holds or ctx ends; cond is checked after every
// change.
func (a *Adapter) WaitFor(ctx context.Context, cond func() bool) error {
	for {
		a.mu.Lock()
		ch := a.changed
		a.mu.Unlock()
		if cond() {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// WaitText blocks until the thread's bot messages contain s.
func (a *Adapter) WaitText(ctx context.Context, thread chat.ThreadRef, s string) error {
	err := a.WaitFor(ctx, func() bool { return strings.Contains(a.Transcript(thread), s) })
	if err != nil {
		return fmt.Errorf("waiting for %q in the thread: %w; the thread has:\n%s", s, err, a.Transcript(thread))
	}
	return nil
}

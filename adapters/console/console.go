// Package console is a chat adapter for one local thread in a terminal: each
// line typed is a message in the thread, and the bot's messages are printed,
// each line prefixed with "bot> ".
//
// Terminals cannot edit what they printed, so messages are shown as a log
// (see renderer): every line of a message is printed once, when it first
// appears; a line that changes (a tool's ⏳ turning into ✓) is printed again
// as it is now; text streamed into a message's last line is written as it
// arrives, on the same terminal line. The bot's status message drops its
// streamed preview when the answer is posted as a message of its own: the
// part already on screen is not printed twice.
//
// Input ids are unique across processes (Options.InputPrefix), so storage
// never takes a line typed after a restart for a redelivery of an older one.
// Interrupt is Ctrl-C: it stops the run (!stop), and a second Ctrl-C with no
// line typed in between asks the caller to quit.
package console

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/threadsmith/threadsmith/chat"
)

// interruptedNotice starts what the bridge posts for a run a shutdown cut off.
const interruptedNotice = "⚠️ This run was interrupted"

// Platform is the console's platform name.
const Platform = "console"

// settle is how long an open line (the streamed end of a message) stays
// without a newline: then it is ended, so that what the person types next
// does not start on the bot's line.
const settle = 700 * time.Millisecond

// NewThread is the thread of a new console session started at t: its id
// reads as a time, and so does its branch (bot/console-20260102-150405).
func NewThread(t time.Time) chat.ThreadRef {
	id := t.UTC().Format("20060102-150405")
	// Channel = Thread: the branch and workspace are named by the id alone.
	return chat.ThreadRef{Platform: Platform, Channel: id, Thread: id}
}

// Options configure the adapter.
type Options struct {
	In  io.Reader
	Out io.Writer
	// User is the name messages are shown as coming from.
	User string
	// Thread is the session's thread (NewThread, or an earlier one to continue).
	Thread chat.ThreadRef
	// InputPrefix makes input ids unique across processes; default: the
	// time New was called, in nanoseconds.
	InputPrefix string
	// Banner is printed after the greeting (where the logs go, say).
	Banner string
	// Terminal says the input is a terminal: it echoes what is typed (so
	// the cursor is at a line's start after Enter), and its end (Ctrl-D)
	// ends Run at once, and so the bot. Other input (a pipe, a file) ends
	// Run once WaitIdle returns: the requests it held are answered first.
	Terminal bool
	// WaitIdle returns once the thread has nothing left to do: no input
	// waiting, no run going, its work pushed (or when ctx ends). Nil: Run
	// returns at the end of input that is not a terminal, too.
	WaitIdle func(ctx context.Context, thread chat.ThreadRef) error
	// AfterFunc schedules settling (time.AfterFunc when nil; tests use a fake clock).
	AfterFunc func(time.Duration, func()) interface{ Stop() bool }
}

// Adapter is the console platform.
type Adapter struct {
	in       io.Reader
	terminal bool
	waitIdle func(context.Context, chat.ThreadRef) error
	user     string
	thread   chat.ThreadRef
	prefix   string
	banner   string

	mu     sync.Mutex
	r      *renderer
	nextID int // the bot's message ids
	inputs int // the person's message ids
	h      chat.Handler
	ctx    context.Context
	armed  bool // Ctrl-C was pressed and no line typed since
	// quitting is set once the person quit (a second Ctrl-C, Ctrl-D): the
	// run the shutdown cuts off was stopped by them, not by a restart.
	quitting bool
	// stopSaid is set once a stop was told (see adjust), until the person
	// sends another line: a stop line the model wrote before a !stop does
	// not hide the stop that !stop asks for.
	stopSaid bool
}

var (
	_ chat.Adapter  = (*Adapter)(nil)
	_ chat.Editor   = (*Adapter)(nil)
	_ chat.Reactor  = (*Adapter)(nil)
	_ chat.Uploader = (*Adapter)(nil)
	_ chat.Linker   = (*Adapter)(nil)
)

// New returns a console adapter.
func New(o Options) *Adapter {
	if o.User == "" {
		o.User = "you"
	}
	if o.Thread == (chat.ThreadRef{}) {
		o.Thread = NewThread(time.Now())
	}
	if o.InputPrefix == "" {
		o.InputPrefix = strconv.FormatInt(time.Now().UnixNano(), 36)
	}
	after := o.AfterFunc
	if after == nil {
		after = func(d time.Duration, f func()) interface{ Stop() bool } { return time.AfterFunc(d, f) }
	}
	a := &Adapter{in: o.In, terminal: o.Terminal, waitIdle: o.WaitIdle, user: o.User, thread: o.Thread, prefix: o.InputPrefix, banner: o.Banner}
	a.r = &renderer{out: o.Out, msgs: map[string]*shown{}, after: after, mu: &a.mu}
	return a
}

// Permalink implements chat.Linker: commit messages and pull requests name
// the session ("Thread: console session 20260102-150405"), not its key.
func (a *Adapter) Permalink(_ context.Context, th chat.ThreadRef) (string, error) {
	return "console session " + th.Thread, nil
}

// Thread is the console's thread.
func (a *Adapter) Thread() chat.ThreadRef { return a.thread }

func (a *Adapter) Platform() string { return Platform }

func (a *Adapter) Limits() chat.Limits { return chat.Limits{MaxMessageChars: 8000} }

// Run reads lines until the input ends or ctx is done. Each non-empty line is
// a message to the bot. Output keeps being printed after Run returns, until
// the process ends: what a shutdown says (a run stopped) is not lost.
func (a *Adapter) Run(ctx context.Context, h chat.Handler) error {
	a.mu.Lock()
	a.h, a.ctx = h, ctx
	a.mu.Unlock()
	greeting := "threadsmith console — type a request and press Enter; !help lists commands; Ctrl-C stops a run, twice quits.\n"
	if a.banner != "" {
		greeting += a.banner + "\n"
	}
	a.print(greeting)
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(a.in)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case line, ok := <-lines:
			if !ok {
				if a.terminal {
					a.mu.Lock()
					a.quitting = true
					a.mu.Unlock()
					a.print("\n")
					return nil
				}
				// Piped requests: answered, and their work pushed, before
				// the bot quits.
				if a.waitIdle != nil {
					if err := a.waitIdle(ctx, a.thread); err != nil && ctx.Err() == nil {
						return fmt.Errorf("console: waiting for the requests to be answered: %w", err)
					}
				}
				return nil
			}
			if strings.TrimSpace(line) == "" {
				continue
			}
			a.mu.Lock()
			a.armed = false
			if a.terminal {
				a.r.typed() // the person pressed Enter: the cursor is at a line's start
			}
			a.mu.Unlock()
			a.send(ctx, line)
		}
	}
}

// send hands one line to the bot with an id no other process used.
func (a *Adapter) send(ctx context.Context, text string) {
	a.mu.Lock()
	h := a.h
	a.stopSaid = false // a stop told before this line is not the one it may ask for
	a.inputs++
	id := a.prefix + "-" + strconv.Itoa(a.inputs)
	a.mu.Unlock()
	if h == nil {
		return
	}
	in := chat.Inbound{
		Thread: a.thread, EventID: id, MessageID: id, Text: text, Mention: true,
		Author: chat.Author{ID: a.user, Name: a.user}, Time: time.Now(),
	}
	if _, err := h.Receive(ctx, in); err != nil {
		a.print(fmt.Sprintf("! could not take that message: %v\n", err))
	}
}

// Interrupt is Ctrl-C. The first stops the run, as !stop does (queued input
// stays queued), and says how to quit; a second one with no line typed in
// between returns true: the caller should quit.
func (a *Adapter) Interrupt() (quit bool) {
	a.mu.Lock()
	if a.armed || a.h == nil {
		// On a line of its own: the bot's line may be open, and the
		// shutdown takes a moment (a run still going is stopped).
		a.quitting = true
		a.r.raw("quitting…\n")
		a.mu.Unlock()
		return true
	}
	a.armed = true
	ctx := a.ctx
	a.mu.Unlock()
	a.print("^C (press Ctrl-C again to quit)\n")
	a.send(ctx, "!stop")
	return false
}

// Post prints a new message. Messages carry what the model and its tools
// wrote: every terminal control in them is dropped (inert), and their
// Markdown is shown as plain text (plain).
func (a *Adapter) Post(_ context.Context, _ chat.ThreadRef, text string) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.nextID++
	id := "m" + strconv.Itoa(a.nextID)
	text = a.adjust(text)
	a.r.update(id, plain(inert(text), false), true)
	return id, nil
}

// Edit prints what changed in a message.
func (a *Adapter) Edit(_ context.Context, _ chat.ThreadRef, id, text string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.r.msgs[id] == nil {
		return fmt.Errorf("console: no message %s", id)
	}
	text = a.adjust(text)
	a.r.update(id, plain(inert(text), true), false)
	return nil
}

// stoppedLine is the line the bridge ends a stopped answer with.
const stoppedLine = "⏹ _stopped_"

// adjust says what the console knows better than the bridge, and says a
// stop once. A stop is told twice by the bridge, in an order the outbox
// picks: by a notice ("⏹ stopped.", or for a run the shutdown cut off
// "⚠️ This run was interrupted…") and by the stopped answer's own last
// line ("⏹ _stopped_"); the first to come is printed, the other dropped.
// When the person quit, what is printed says so (not a restart).
func (a *Adapter) adjust(text string) string {
	if !a.quitting && !a.stopSaid && !strings.Contains(text, "⏹") {
		return text
	}
	lines := strings.Split(text, "\n")
	out := lines[:0]
	for _, l := range lines {
		t := strings.TrimSpace(l)
		stop := t == stoppedLine || t == "⏹ stopped."
		if a.quitting && (stop || strings.HasPrefix(t, interruptedNotice)) {
			stop, l = true, "⏹ stopped: you quit. `-console -continue` resumes this session."
		}
		if stop && a.stopSaid {
			continue
		}
		if stop || strings.HasPrefix(t, "⏹ stopped") {
			a.stopSaid = true
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// React prints acknowledgements briefly.
func (a *Adapter) React(_ context.Context, _ chat.ThreadRef, _ string, emoji string, add bool) error {
	if !add {
		return nil
	}
	switch emoji {
	case "hourglass_flowing_sand":
		a.print("   (queued: delivered when the current run ends)\n")
	case "arrow_right_hook":
		a.print("   (queued as steer: delivered at the model's next step; tool calls not yet started are skipped)\n")
	}
	return nil
}

// Upload prints a file's content.
func (a *Adapter) Upload(_ context.Context, _ chat.ThreadRef, name string, content []byte, comment string) error {
	name, comment = inert(name), inert(comment)
	a.print(fmt.Sprintf("--- %s %s\n%s\n--- end of %s\n", name, comment, strings.TrimRight(inert(string(content)), "\n"), name))
	return nil
}

// print writes text that is not a message (notes, uploads) on lines of its own.
// Finish ends the line printed last, once nothing more will be printed (the
// bot shut down), so that the shell's prompt starts on a line of its own.
func (a *Adapter) Finish() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.r.flushDeferred()
	a.r.closeOpen()
}

func (a *Adapter) print(text string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.r.raw(text)
}

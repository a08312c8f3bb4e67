// Package console is a chat adapter for one local thread in a terminal: each
// line typed is a message in the thread, and the bot's messages are printed.
//
// Terminals cannot edit what they printed, so edits are shown as a log: the
// lines of a message that are new or changed are printed when they arrive, and
// a last line that is still growing (streamed text) once it stops growing. That
// reads naturally for the bot's transcripts: tool lines turn from ⏳ to ✓, and
// the answer follows.
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

// settle is how long a message's last line must stay unchanged to be printed.
const settle = 700 * time.Millisecond

// Thread is the console's one thread.
var Thread = chat.ThreadRef{Platform: "console", Channel: "terminal", Thread: "local"}

// Options configure the adapter.
type Options struct {
	In   io.Reader
	Out  io.Writer
	User string // the name messages are shown as coming from
}

// Adapter is the console platform.
type Adapter struct {
	in   io.Reader
	out  io.Writer
	user string

	mu     sync.Mutex
	nextID int
	msgs   map[string]*printed
	closed bool
}

// printed is what was printed of one message.
type printed struct {
	lines   []string // printed lines, by position
	latest  string   // the latest text
	timer   *time.Timer
	version int
}

// New returns a console adapter.
func New(o Options) *Adapter {
	if o.User == "" {
		o.User = "you"
	}
	return &Adapter{in: o.In, out: o.Out, user: o.User, msgs: map[string]*printed{}}
}

func (a *Adapter) Platform() string { return "console" }

func (a *Adapter) Limits() chat.Limits { return chat.Limits{MaxMessageChars: 8000} }

// Run reads lines until the input ends or ctx is done. Each non-empty line is a
// message to the bot.
func (a *Adapter) Run(ctx context.Context, h chat.Handler) error {
	a.printf("threadsmith console — type a request and press Enter; !help lists commands; Ctrl-C quits.\n")
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
	n := 0
	for {
		select {
		case <-ctx.Done():
			a.stop()
			return nil
		case line, ok := <-lines:
			if !ok {
				// Input ended (a pipe): keep printing until the caller stops us.
				<-ctx.Done()
				a.stop()
				return nil
			}
			if strings.TrimSpace(line) == "" {
				continue
			}
			n++
			id := "in" + strconv.Itoa(n)
			in := chat.Inbound{
				Thread: Thread, EventID: id, MessageID: id, Text: line, Mention: true,
				Author: chat.Author{ID: a.user, Name: a.user}, Time: time.Now(),
			}
			if _, err := h.Receive(ctx, in); err != nil {
				a.printf("! could not take that message: %v\n", err)
			}
		}
	}
}

func (a *Adapter) stop() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, p := range a.msgs {
		if p.timer != nil {
			p.timer.Stop()
		}
	}
	a.closed = true
}

// Post prints a new message.
func (a *Adapter) Post(_ context.Context, _ chat.ThreadRef, text string) (string, error) {
	a.mu.Lock()
	a.nextID++
	id := "m" + strconv.Itoa(a.nextID)
	p := &printed{}
	a.msgs[id] = p
	a.mu.Unlock()
	a.update(id, p, text)
	return id, nil
}

// Edit prints what changed in a message.
func (a *Adapter) Edit(_ context.Context, _ chat.ThreadRef, id, text string) error {
	a.mu.Lock()
	p := a.msgs[id]
	a.mu.Unlock()
	if p == nil {
		return fmt.Errorf("console: no message %s", id)
	}
	a.update(id, p, text)
	return nil
}

// React prints acknowledgements briefly.
func (a *Adapter) React(_ context.Context, _ chat.ThreadRef, _ string, emoji string, add bool) error {
	if !add {
		return nil
	}
	switch emoji {
	case "hourglass_flowing_sand":
		a.printf("   (queued: delivered when the current run ends)\n")
	case "arrow_right_hook":
		a.printf("   (queued as steer: delivered after the current tool)\n")
	}
	return nil
}

// Upload prints a file's content.
func (a *Adapter) Upload(_ context.Context, _ chat.ThreadRef, name string, content []byte, comment string) error {
	a.printf("--- %s %s\n%s\n--- end of %s\n", name, comment, strings.TrimRight(string(content), "\n"), name)
	return nil
}

func (a *Adapter) update(id string, p *printed, text string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return
	}
	p.latest = text
	p.version++
	a.printSettledLocked(p, false)
	if p.timer != nil {
		p.timer.Stop()
	}
	v := p.version
	p.timer = time.AfterFunc(settle, func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		if p.version == v && !a.closed {
			a.printSettledLocked(p, true)
		}
	})
}

// printSettledLocked prints the message's new or changed lines. The last line
// is held back while it is still growing (a streamed reply) unless the message
// has been quiet for a moment. Blank lines are not printed.
func (a *Adapter) printSettledLocked(p *printed, quiet bool) {
	lines := strings.Split(p.latest, "\n")
	var b strings.Builder
	for i, line := range lines {
		if i < len(p.lines) && p.lines[i] == line {
			continue
		}
		last := i == len(lines)-1
		if last && !quiet && i < len(p.lines) && strings.HasPrefix(line, p.lines[i]) {
			continue // still growing
		}
		if last && !quiet && i >= len(p.lines) && !strings.HasSuffix(p.latest, "\n") && p.version > 1 {
			continue // a new last line of an edited message may still grow
		}
		for len(p.lines) <= i {
			p.lines = append(p.lines, "\x00") // never equal to a real line
		}
		p.lines[i] = line
		if t := strings.TrimSpace(line); t == "" || t == "…" {
			continue
		}
		b.WriteString("bot> " + line + "\n")
	}
	if b.Len() > 0 {
		io.WriteString(a.out, b.String())
	}
}

func (a *Adapter) printf(format string, args ...any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	fmt.Fprintf(a.out, format, args...)
}

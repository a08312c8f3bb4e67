package console

import (
	"io"
	"maps"
	"strings"
	"sync"
	"time"
)

// renderer prints the bot's messages, which the bridge edits in place, as a
// log a terminal can show. Lines are compared by content, never by
// position: a status message that loses its "working" line does not print
// its tool lines again.
//
//   - A line is printed once, when it first appears in its message; a line
//     that changes is a new line.
//   - The last line of a message is written without its newline (it is
//     "open"): if the next version of the message extends it (streamed
//     text), only the new characters are written. Anything else printed
//     first ends it; so does a quiet moment (settle).
//   - Lines an edit removes after they were printed (the status message's
//     streamed preview, once the answer is complete) are "carried": the
//     next new message does not print them again, and finishes the
//     preview's open line in place. The edit's own new lines wait until
//     then, so the answer reads as one piece.
type renderer struct {
	out   io.Writer
	mu    *sync.Mutex // the adapter's: held by every method, taken by settle
	after func(time.Duration, func()) interface{ Stop() bool }

	msgs map[string]*shown
	// open is the line the cursor is at the end of (nil: at a line's start).
	// Its msg is "" once its message no longer has it (carried).
	open *openLine
	// closed is the last open line that settle ended, which its message may
	// still extend.
	closed *openLine
	carry  map[string]int
	// deferred are the new lines of the edit that carried the open line.
	deferred []string
	// preview is the message edited last (the status message, with the
	// streamed preview of an answer not posted yet), "" once its answer
	// was posted or its preview carried.
	preview string
	timer   interface{ Stop() bool }
	gen     int
}

// shown counts the lines of one message that were printed, by content, and
// knows which of them were streamed (grew as the model wrote them).
type shown struct {
	count    map[string]int
	streamed map[string]bool
	// gone counts the printed lines edits removed since the message's
	// lines were last offered to an answer (the preview the status
	// message dropped). A message's first line is its header (the
	// status's "⏳ working…"), never a preview: it is not counted, so
	// that the next status, which starts the same, is not taken for an
	// answer repeating it.
	gone map[string]int
	// first is the message's first line as last shown.
	first string
}

type openLine struct {
	msg, text string
	streamed  bool // it grew at least once: streamed text, not a tool line
}

// prefix starts every line of the bot.
const prefix = "bot> "

// update prints what is new in message id, whose text is now text.
func (r *renderer) update(id, text string, post bool) {
	m := r.msgs[id]
	if m == nil {
		m = &shown{count: map[string]int{}, streamed: map[string]bool{}, gone: map[string]int{}}
		r.msgs[id] = m
	}
	lines := contentLines(text)
	now := map[string]int{}
	for _, l := range lines {
		now[l]++
	}
	last := ""
	if len(lines) > 0 {
		last = lines[len(lines)-1]
	}
	defer func() {
		m.first = ""
		if len(lines) > 0 {
			m.first = lines[0]
		}
	}()

	// Streamed text: the open line grew (at the end of the message, or
	// into a line the next version moved up, as narration before a tool).
	if o := r.open; o != nil && o.msg == id && now[o.text] < m.count[o.text] {
		if l, ok := extension(lines, o.text, now, m); ok {
			r.write(l[len(o.text):])
			r.move(m, o.text, l)
			o.text, o.streamed = l, true
		}
	} else if c := r.closed; r.open == nil && c != nil && c.msg == id && now[c.text] < m.count[c.text] {
		if l, ok := extension(lines, c.text, now, m); ok {
			// It grew after a pause that ended its line: go on below.
			r.write(prefix + "…" + l[len(c.text):])
			r.move(m, c.text, l)
			r.open, r.closed = &openLine{msg: id, text: l, streamed: true}, nil
		}
	}

	// Lines the message no longer has. They are carried only when streamed
	// text went with them (the preview, once the answer is complete): the
	// answer repeats them. Otherwise nothing on screen is about to repeat.
	removed := map[string]int{}
	openGone, streamedGone := false, false
	for l, n := range m.count {
		d := n - now[l]
		if d <= 0 {
			continue
		}
		if now[l] == 0 {
			delete(m.count, l)
		} else {
			m.count[l] = now[l]
		}
		removed[l] += d
		if !post && r.preview == id && l != m.first {
			m.gone[l] += d
		}
		if o := r.open; o != nil && o.msg == id && o.text == l {
			openGone = true
			streamedGone = streamedGone || o.streamed
		}
		if c := r.closed; c != nil && c.msg == id && c.text == l {
			streamedGone = true
		}
		// Streamed text of the preview not answered yet leaves with its
		// line no longer open (a notice or the person's typing came in
		// between): the answer repeats it.
		if m.streamed[l] && now[l] == 0 && r.preview == id && !grewInto(lines, l) {
			streamedGone = true
			delete(m.streamed, l)
		}
	}
	n := 0
	for _, d := range removed {
		n += d
	}
	// The open line was streamed text the message dropped, rather than a
	// line that changed (a tool's ⏳ turning into ✓, one line for one).
	carriedOpen := false
	if o := r.open; openGone && !post && (o.streamed || n > 1) {
		o.msg = ""
		carriedOpen, streamedGone = true, true
	}
	if streamedGone && !post {
		// The carry stands for the preview now. Of the preview, it is
		// every line dropped since the last answer took its lines (gone
		// counts this edit's too): the answer repeats those.
		r.carry = removed
		if r.preview == id {
			r.carry = maps.Clone(m.gone)
		}
		r.preview = ""
		clear(m.gone)
	}

	// Lines not printed yet, in order.
	var fresh []string
	seen := map[string]int{}
	for _, l := range lines {
		seen[l]++
		if seen[l] <= m.count[l] {
			continue
		}
		m.count[l]++
		fresh = append(fresh, l)
	}
	if carriedOpen {
		r.deferred = append(r.deferred, fresh...)
		r.settleLater()
		return
	}
	if owner := r.preview; post && len(r.carry) == 0 && owner != "" && owner != id {
		// The answer may come before its preview leaves the status message
		// (the outbox may send a post before an edit, and a notice such as
		// "⏹ stopped." may come first): the message last edited is the
		// carry, as long as the post starts with its text.
		r.carry = map[string]int{}
		for l, c := range r.msgs[owner].count {
			r.carry[l] = c
		}
		// Its preview may have left it already, with nothing printed
		// after it to carry it (the end of input, a notice).
		for l, c := range r.msgs[owner].gone {
			r.carry[l] += c
		}
		clear(r.msgs[owner].gone)
		var o *openLine // the preview's line, finished in place if it is open
		if r.open != nil && r.open.msg == owner {
			o = r.open
		} else if r.open == nil && r.closed != nil && r.closed.msg == owner {
			o = r.closed // a quiet moment ended it
		}
		if o != nil {
			o.msg = ""
		}
		n := len(fresh)
		if fresh = r.consumeCarry(id, fresh); len(fresh) < n || o != nil && o.msg == id {
			r.preview = "" // this post is its answer
		}
		if o != nil && o.msg == "" {
			o.msg = owner // not the answer to it: the preview goes on
		}
	} else if post && (len(r.carry) > 0 || r.open != nil && r.open.msg == "" || r.closed != nil && r.closed.msg == "") {
		fresh = r.consumeCarry(id, fresh)
	}
	if !post && !streamedGone {
		r.preview = id
	}
	r.flushDeferred()
	for i, l := range fresh {
		r.closeOpen()
		if i == len(fresh)-1 && l == last {
			r.write(prefix + l)
			r.open = &openLine{msg: id, text: l}
		} else {
			r.write(prefix + l + "\n")
		}
	}
	r.settleLater()
}

// consumeCarry drops the leading lines of a new message that were already
// printed in the message they were carried from, and finishes the carried
// open line in place. The carry serves this message only.
func (r *renderer) consumeCarry(id string, fresh []string) []string {
	i := 0
	for ; i < len(fresh); i++ {
		l := fresh[i]
		if o := r.open; o != nil && o.msg == "" && strings.HasPrefix(l, o.text) {
			r.write(l[len(o.text):])
			o.msg, o.text = id, l
			continue
		}
		if c := r.closed; r.open == nil && c != nil && c.msg == "" && strings.HasPrefix(l, c.text) {
			// A carried line a quiet moment ended: the answer goes on below.
			r.closed = nil
			if l != c.text {
				r.write(prefix + "…" + l[len(c.text):])
				r.open = &openLine{msg: id, text: l, streamed: true}
			}
			if r.carry[c.text] > 0 {
				r.carry[c.text]--
			}
			continue
		}
		if r.carry[l] > 0 {
			r.carry[l]--
			continue
		}
		break
	}
	r.carry = nil
	return fresh[i:]
}

// extension finds the line of lines that extends prev and is not printed yet.
func extension(lines []string, prev string, now map[string]int, m *shown) (string, bool) {
	for _, l := range lines {
		if grew(l, prev) && now[l] > m.count[l] {
			return l, true
		}
	}
	return "", false
}

// move replaces line from by to in m's counts.
func (r *renderer) move(m *shown, from, to string) {
	if m.count[from]--; m.count[from] <= 0 {
		delete(m.count, from)
	}
	delete(m.streamed, from)
	m.count[to]++
	m.streamed[to] = true
}

func (r *renderer) flushDeferred() {
	for _, l := range r.deferred {
		r.closeOpen()
		r.write(prefix + l + "\n")
	}
	r.deferred = nil
}

// closeOpen ends the open line, if any.
func (r *renderer) closeOpen() {
	if r.open != nil {
		r.write("\n")
		r.open = nil
	}
	r.closed = nil
}

// raw prints text (ending with a newline) on lines of its own.
func (r *renderer) raw(text string) {
	r.flushDeferred()
	r.closeOpen()
	r.write(text)
}

// typed says the person pressed Enter: the terminal is at a line's start.
func (r *renderer) typed() {
	r.open, r.closed, r.carry = nil, nil, nil
	r.flushDeferred()
}

// settleLater ends the open line and prints deferred lines after a quiet
// moment, unless something else does first.
func (r *renderer) settleLater() {
	if r.open == nil && len(r.deferred) == 0 {
		return
	}
	if r.timer != nil {
		r.timer.Stop()
	}
	r.gen++
	gen := r.gen
	r.timer = r.after(settle, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.gen != gen {
			return
		}
		// The carry stays: the answer it waits for is posted after the
		// status edit that carried it, by another step of the bridge's
		// outbox, and a quiet moment may come in between.
		o := r.open
		r.flushDeferred()
		if r.open != nil {
			r.write("\n")
			r.open = nil
		}
		if o != nil {
			// Its message, or the answer taking a carried line, may extend it.
			r.closed = o
		}
	})
}

func (r *renderer) write(s string) {
	_, _ = io.WriteString(r.out, s)
}

// grewInto reports whether one of lines extends prev.
func grewInto(lines []string, prev string) bool {
	for _, l := range lines {
		if grew(l, prev) {
			return true
		}
	}
	return false
}

// grew reports whether line extends prev (streamed text).
func grew(line, prev string) bool {
	return len(line) > len(prev) && strings.HasPrefix(line, prev)
}

// contentLines are the lines of text worth printing: not blank, not the
// "…" of an emptied message; trailing spaces dropped.
func contentLines(text string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimRight(l, " \t\r")
		if t := strings.TrimSpace(l); t == "" || t == "…" {
			continue
		}
		out = append(out, l)
	}
	return out
}

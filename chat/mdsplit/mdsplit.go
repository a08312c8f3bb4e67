// Package mdsplit cuts Markdown into messages that fit a chat platform's
// limit, measured on the text the platform receives, without breaking a code
// block: a block cut in two is closed at the end of one message and reopened,
// with its language, at the start of the next. It depends on nothing, so the
// bridge (which splits what it posts) and the adapters' tests (which check
// what they send) share one implementation.
package mdsplit

import (
	"strings"
	"unicode/utf8"
)

// MinLimit is the smallest chunk Chunks makes; below it a fence and a line
// of code no longer fit together.
const MinLimit = 16

// Chunks cuts Markdown text into chunks of at most limit characters as the
// platform receives them, preferring paragraph and line boundaries, and never
// leaving a code block broken: a chunk that ends inside a fenced block closes
// it, and the next chunk reopens it with the same fence and language. A block
// the text leaves open is closed at the end (a streaming preview stops in the
// middle of one), so every chunk shows as code what the whole would.
//
// measure is the length of a piece of Markdown as sent (Slack escapes &, <
// and > into entities, which makes text longer); nil counts runes. Lines are
// measured one by one while cutting, then every chunk as a whole, and a chunk
// that measures longer than limit (a construct the platform renders across
// lines, such as a Slack table) is split again with a smaller limit: so the
// limit holds for the text actually sent, not for the Markdown.
func Chunks(text string, limit int, measure func(string) int) []string {
	if measure == nil {
		measure = utf8.RuneCountInString
	}
	limit = max(limit, MinLimit)
	if measure(text) <= limit {
		if f := openFence(text, limit); f != nil {
			closed := strings.TrimRight(text, "\n") + "\n" + f.marker
			if measure(closed) <= limit {
				return []string{closed}
			}
		} else {
			return []string{text}
		}
	}
	s := splitter{limit: limit, measure: measure, lastBlank: -1, fenceAt: -1}
	s.run(text)
	out := make([]string, 0, len(s.chunks))
	for _, c := range s.chunks {
		out = append(out, fit(c, limit, measure)...)
	}
	return out
}

// fit returns chunk, or chunk split again with smaller limits until every
// part measures at most limit. The per-line estimate rarely misses by more
// than a few characters, so this is usually one more pass, if any.
func fit(chunk string, limit int, measure func(string) int) []string {
	n := measure(chunk)
	if n <= limit {
		return []string{chunk}
	}
	for smaller := limit - (n - limit) - 8; smaller >= MinLimit; smaller = smaller * 3 / 4 {
		s := splitter{limit: smaller, measure: measure, lastBlank: -1, fenceAt: -1}
		s.run(chunk)
		ok := true
		for _, c := range s.chunks {
			if measure(c) > limit {
				ok = false
				break
			}
		}
		if ok {
			return s.chunks
		}
	}
	// Nothing smaller fits (a pathological line); the adapter's own limit
	// check truncates what is left.
	return []string{chunk}
}

// splitter is one pass of Chunks: lines go into the current chunk until the
// next one would not fit.
type splitter struct {
	limit   int
	measure func(string) int
	chunks  []string

	cur    strings.Builder
	curLen int // measured length of cur: its lines plus their newlines
	// startLen is the measured length of what cur started with and cannot
	// shed (a reopened fence, or a block's opening line carried over): a
	// chunk with nothing more is not worth flushing.
	startLen int

	fence   *fence // the open block, nil outside one
	opener  string // the open block's opening line
	closing string // "\n" + the fence that closes it
	closeN  int    // measured length of closing
	// fenceAt is where the open block's opening line starts in cur, -1 when
	// it was opened in an earlier chunk; body counts its lines in cur.
	fenceAt int
	body    int

	// lastBlank is the byte offset in cur just after the last blank line
	// outside a block (-1: none), blankLen the measured length up to it.
	lastBlank int
	blankLen  int
}

func (s *splitter) run(text string) {
	rest := text
	for rest != "" {
		line, tail, _ := strings.Cut(rest, "\n")
		rest = tail
		s.line(line)
	}
	if s.fence != nil {
		// Unclosed: CommonMark runs the block to the end, and so must every
		// chunk that shows part of it.
		s.cur.WriteString(strings.TrimPrefix(s.closing, "\n") + "\n")
		s.curLen += s.closeN
	}
	s.emit(s.cur.String())
}

// line adds one line (without its newline) to the chunks.
func (s *splitter) line(line string) {
	opens, closes := false, false
	var f *fence
	if s.fence == nil {
		f = parseFence(line, s.limit)
		opens = f != nil
	} else {
		closes = s.fence.closedBy(line)
	}
	if opens && s.measure(line)+1+s.measure(f.marker)+1 > s.limit/2 {
		// An opening line too long to reopen in every chunk: its info
		// string (a language hint) goes, the block stays.
		line = strings.Repeat(" ", f.indent) + f.marker
	}
	if closes && s.measure(line)+1 > s.closeN {
		// Only its fence matters (a closing fence shows nothing), and the
		// room kept for closing holds exactly that.
		line = s.fence.marker
	}
	n := s.measure(line) + 1
	reserve := 0
	switch {
	case opens:
		reserve = s.measure(f.marker) + 1
	case s.fence != nil && !closes:
		reserve = s.closeN
	}
	if s.curLen+n+reserve > s.limit && s.curLen > s.startLen {
		s.flush()
	}
	// A line longer than a chunk: cut it at spaces or runes.
	for s.curLen+n+reserve > s.limit && !opens && !closes {
		room := s.limit - s.curLen - reserve - 1
		if room < 8 && s.curLen > s.startLen {
			s.flush()
			continue
		}
		if line == "" {
			break
		}
		head, tail := cutLine(line, max(room, 1), s.measure)
		head, tail = s.keepStructure(head, tail)
		s.add(head, s.measure(head)+1)
		if s.fence != nil {
			s.body++
		}
		s.flush()
		line = tail
		n = s.measure(line) + 1
	}
	s.add(line, n)
	switch {
	case opens:
		s.fence, s.opener = f, line
		s.closing = "\n" + f.marker
		s.closeN = s.measure(f.marker) + 1
		s.fenceAt = s.cur.Len() - len(line) - 1
		s.body = 0
	case closes:
		s.fence = nil
	case s.fence != nil:
		s.body++
	case strings.TrimSpace(line) == "":
		s.lastBlank, s.blankLen = s.cur.Len(), s.curLen
	}
}

func (s *splitter) add(line string, n int) {
	s.cur.WriteString(line)
	s.cur.WriteByte('\n')
	s.curLen += n
}

// flush ends the current chunk and starts the next one.
func (s *splitter) flush() {
	all := s.cur.String()
	switch {
	case s.fence != nil && s.body == 0 && s.fenceAt >= 0:
		// The block has nothing but its opening line here: rather than an
		// empty block, the opening line moves to the next chunk.
		s.emit(all[:s.fenceAt])
		s.restart(s.opener + "\n")
		s.fenceAt = 0
	case s.fence != nil:
		s.emit(strings.TrimRight(all, "\n") + s.closing)
		s.restart(s.opener + "\n")
		s.fenceAt = -1
		s.body = 0
	case s.lastBlank >= 0 && s.blankLen >= s.limit/2 && s.lastBlank < len(all):
		// Break at the last paragraph when that keeps the chunk at least
		// half full; the text after it moves to the next chunk.
		rest, restLen := all[s.lastBlank:], s.curLen-s.blankLen
		s.emit(all[:s.lastBlank])
		s.cur.Reset()
		s.cur.WriteString(rest)
		s.curLen, s.startLen = restLen, 0
		s.lastBlank = -1
	default:
		s.emit(all)
		s.restart("")
	}
}

// keepStructure moves the cut between head and tail so that neither piece,
// on a line of its own, reads as a fence: "~~~~~00~~~" cut after "00" would
// otherwise close the block it sits in, and "```a`b" cut before the second
// backtick would open one.
func (s *splitter) keepStructure(head, tail string) (string, string) {
	fenceLike := func(piece string) bool {
		if s.fence != nil {
			return s.fence.closedBy(piece)
		}
		return parseFence(piece, s.limit) != nil
	}
	if !fenceLike(head) && !fenceLike(tail) {
		return head, tail
	}
	line := head + tail
	for end := len(head) - 1; end > 0; end-- {
		if !utf8.RuneStart(line[end]) {
			continue
		}
		if h, t := line[:end], line[end:]; !fenceLike(h) && !fenceLike(t) {
			return h, t
		}
	}
	return head, tail
}

// restart starts a chunk with start (a reopened fence, or nothing).
func (s *splitter) restart(start string) {
	s.cur.Reset()
	s.cur.WriteString(start)
	s.curLen = 0
	if start != "" {
		s.curLen = s.measure(strings.TrimSuffix(start, "\n")) + 1
	}
	s.startLen = s.curLen
	s.lastBlank = -1
}

// emit adds a finished chunk, without trailing newlines, unless it shows
// nothing.
func (s *splitter) emit(chunk string) {
	chunk = strings.TrimRight(chunk, "\n")
	if strings.TrimSpace(chunk) == "" {
		return
	}
	s.chunks = append(s.chunks, chunk)
}

// openFence returns the block text leaves open at its end, or nil.
func openFence(text string, limit int) *fence {
	var f *fence
	for line := range strings.SplitSeq(text, "\n") {
		switch {
		case f == nil:
			f = parseFence(line, limit)
		case f.closedBy(line):
			f = nil
		}
	}
	return f
}

// fence is an open fenced code block (CommonMark: three or more backticks or
// tildes, indented at most three spaces).
type fence struct {
	marker string // the run that opened it: "```", "~~~~", …
	indent int
}

// parseFence returns the block line opens, or nil. A fence whose marker is
// longer than a quarter of limit is taken for text: closing and reopening it
// in every chunk would not fit.
func parseFence(line string, limit int) *fence {
	marker, indent, _, ok := OpeningFence(line)
	if !ok || len(marker) > limit/4 {
		return nil
	}
	return &fence{marker: marker, indent: len(indent)}
}

// closedBy reports whether line closes the block (ClosesFence).
func (f *fence) closedBy(line string) bool { return ClosesFence(line, f.marker) }

// cutLine splits line so that head measures at most room, preferring the
// last space in the second half of head.
func cutLine(line string, room int, measure func(string) int) (head, tail string) {
	// Guess by runes, then shrink by how much the guess overshot: measure
	// grows about in proportion to length, so this takes a few calls on
	// prefixes of the room's size (bisection would take many, on prefixes
	// up to the whole line). A guess that still overshoots is caught by the
	// check of every chunk.
	runes := max(room, 1)
	end := runeOffset(line, runes)
	for range 8 {
		if end >= len(line) && measure(line) <= room {
			return line, ""
		}
		m := measure(line[:end])
		if m <= room || runes == 1 {
			break
		}
		runes = max(1, min(runes-1, runes*room/m))
		end = runeOffset(line, runes)
	}
	if end >= len(line) {
		return line, ""
	}
	if sp := strings.LastIndexByte(line[:end], ' '); sp >= end/2 && sp > 0 {
		end = sp + 1
	}
	return line[:end], line[end:]
}

// runeOffset is the byte offset of the n-th rune of s (len(s) if it has fewer).
func runeOffset(s string, n int) int {
	for i := range s {
		if n == 0 {
			return i
		}
		n--
	}
	return len(s)
}

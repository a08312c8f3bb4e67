package bridge

import (
	"strings"
	"unicode/utf8"
)

// Split cuts Markdown text into chunks of at most limit characters (runes),
// preferring paragraph and line boundaries, and never leaving a code block
// broken: a chunk that ends inside a fenced block closes it, and the next chunk
// reopens it with the same fence and language.
func Split(text string, limit int) []string {
	if limit < 16 {
		limit = 16
	}
	if utf8.RuneCountInString(text) <= limit {
		return []string{text}
	}
	var chunks []string
	var cur strings.Builder
	curLen := 0
	fence := ""     // the opening line of the fenced block we are in, "" outside
	reopen := ""    // what the current chunk started with to reopen a fence
	lastBlank := -1 // byte offset in cur just after the last blank line outside a fence

	flush := func() {
		s := cur.String()
		if fence != "" {
			s = strings.TrimRight(s, "\n") + "\n" + closingFence(fence)
		}
		if strings.TrimSpace(s) != "" && s != reopen {
			chunks = append(chunks, strings.TrimRight(s, "\n"))
		}
		cur.Reset()
		curLen = 0
		lastBlank = -1
		reopen = ""
		if fence != "" {
			reopen = fence + "\n"
			cur.WriteString(reopen)
			curLen = utf8.RuneCountInString(reopen)
		}
	}

	lines := strings.SplitAfter(text, "\n")
	for _, line := range lines {
		if line == "" {
			continue
		}
		n := utf8.RuneCountInString(line)
		reserve := 0
		if fence != "" || isFence(line) {
			reserve = 4 // room to close a fence ("\n```")
		}
		if curLen+n+reserve > limit && curLen > len(reopen) {
			// Prefer breaking at the last blank line when that keeps the chunk at
			// least half full; the text after it moves to the next chunk.
			if fence == "" && lastBlank >= limit/2 && lastBlank < cur.Len() {
				all := cur.String()
				chunks = appendChunk(chunks, strings.TrimRight(all[:lastBlank], "\n"))
				rest := all[lastBlank:]
				cur.Reset()
				cur.WriteString(rest)
				curLen = utf8.RuneCountInString(rest)
				lastBlank = -1
				reopen = ""
			} else {
				flush()
			}
		}
		// A single line longer than a chunk: cut it at spaces or runes.
		for n+reserve > limit-curLen && n > 0 {
			room := limit - curLen - reserve
			if room < 8 {
				flush()
				room = limit - curLen - reserve
			}
			head, tail := cutLine(line, room)
			cur.WriteString(head)
			curLen += utf8.RuneCountInString(head)
			flush()
			line = tail
			n = utf8.RuneCountInString(line)
		}
		if line == "" {
			continue
		}
		cur.WriteString(line)
		curLen += n
		if isFence(line) {
			if fence == "" {
				fence = strings.TrimRight(strings.TrimSpace(line), "\n")
			} else if strings.HasPrefix(strings.TrimSpace(line), fenceMarker(fence)) && strings.TrimSpace(line) == fenceMarker(fence) {
				fence = ""
			}
		} else if fence == "" && strings.TrimSpace(line) == "" {
			lastBlank = cur.Len()
		}
	}
	if cur.Len() > 0 {
		s := cur.String()
		if s != reopen {
			chunks = appendChunk(chunks, strings.TrimRight(s, "\n"))
		}
	}
	return chunks
}

func appendChunk(chunks []string, s string) []string {
	if strings.TrimSpace(s) == "" {
		return chunks
	}
	return append(chunks, s)
}

// isFence reports whether line opens or closes a fenced code block.
func isFence(line string) bool {
	t := strings.TrimSpace(line)
	return strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~")
}

// fenceMarker returns the run of backticks or tildes that opened a block.
func fenceMarker(open string) string {
	t := strings.TrimSpace(open)
	c := t[0]
	i := 0
	for i < len(t) && t[i] == c {
		i++
	}
	return t[:i]
}

func closingFence(open string) string { return fenceMarker(open) }

// cutLine splits line so that head has at most room runes, preferring the last
// space in the second half of the room.
func cutLine(line string, room int) (head, tail string) {
	if room <= 0 {
		return "", line
	}
	i, runes := 0, 0
	lastSpace := -1
	for i < len(line) && runes < room {
		r, size := utf8.DecodeRuneInString(line[i:])
		if r == ' ' && runes >= room/2 {
			lastSpace = i + size
		}
		i += size
		runes++
	}
	if i >= len(line) {
		return line, ""
	}
	if lastSpace > 0 {
		i = lastSpace
	}
	return line[:i] + "\n", line[i:]
}

package console

import (
	"strings"
	"unicode/utf8"
)

// inert returns text with every terminal control sequence and control
// character removed, so that what the model or a tool wrote prints as text
// and nothing else: no colours, cursor moves or screen clears (CSI), no
// clipboard writes, links or titles (OSC), no device control strings (DCS,
// APC, PM, SOS), no 8-bit C1 controls (U+0080–U+009F, which a terminal
// takes as ESC sequences too), no lone ESC, and no C0 control but newline
// and tab (a carriage return or backspace could overwrite what is shown).
// Bytes that are not UTF-8 become U+FFFD: a terminal reading them one by one
// could see a C1 control in them.
//
// A sequence is dropped whole, as a terminal would consume it: its
// introducer, parameters and final byte; a string sequence up to its
// terminator (BEL or ST), or to the end of the text when it has none (the
// rest of a streamed message will bring it, or the terminal would have
// swallowed it). The result contains no ESC, so inert(inert(s)) == inert(s).
func inert(text string) string {
	if clean(text) {
		return text
	}
	var b strings.Builder
	b.Grow(len(text))
	for i := 0; i < len(text); {
		r, n := utf8.DecodeRuneInString(text[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			b.WriteRune(utf8.RuneError)
			i += n
		case r == 0x1b:
			i = skipEscape(text, i+1)
		case r >= 0x80 && r <= 0x9f:
			i = skipC1(text, i+n, r)
		case r < 0x20 && r != '\n' && r != '\t', r == 0x7f:
			i += n
		default:
			b.WriteString(text[i : i+n])
			i += n
		}
	}
	return b.String()
}

// clean reports whether text needs no change: valid UTF-8 without controls
// but newline and tab.
func clean(text string) bool {
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c < 0x20 && c != '\n' && c != '\t' || c == 0x7f {
			return false
		}
		if c >= 0x80 {
			// C1 controls are two bytes in UTF-8 (0xC2 0x80–0x9F).
			if c == 0xc2 && i+1 < len(text) && text[i+1] <= 0x9f {
				return false
			}
		}
	}
	return utf8.ValidString(text)
}

// skipEscape skips the sequence whose ESC was just before i and returns the
// index after it.
func skipEscape(text string, i int) int {
	if i >= len(text) {
		return i // a lone ESC at the end
	}
	switch c := text[i]; {
	case c == '[':
		return skipCSI(text, i+1)
	case c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_':
		return skipString(text, i+1)
	case c >= 0x20 && c <= 0x2f:
		// nF escape: intermediates, then one final byte (ESC ( B, ESC # 8).
		for i < len(text) && text[i] >= 0x20 && text[i] <= 0x2f {
			i++
		}
		if i < len(text) && text[i] >= 0x30 && text[i] <= 0x7e {
			i++
		}
		return i
	case c >= 0x30 && c <= 0x7e:
		return i + 1 // a two-byte escape (ESC c resets the terminal, ESC 7 …)
	}
	return i // a lone ESC: what follows is text (or another control)
}

// skipC1 skips an 8-bit control r that ended just before i, with the
// sequence it introduces, and returns the index after it.
func skipC1(text string, i int, r rune) int {
	switch r {
	case 0x9b: // CSI
		return skipCSI(text, i)
	case 0x9d, 0x90, 0x98, 0x9e, 0x9f: // OSC, DCS, SOS, PM, APC
		return skipString(text, i)
	}
	return i
}

// skipCSI skips a control sequence's parameter and intermediate bytes and
// its final byte. A byte that cannot be part of it ends it there (it is
// dropped, and the byte is read as text).
func skipCSI(text string, i int) int {
	for i < len(text) && text[i] >= 0x20 && text[i] <= 0x3f {
		i++
	}
	if i < len(text) && text[i] >= 0x40 && text[i] <= 0x7e {
		i++
	}
	return i
}

// skipString skips a control string (OSC, DCS, SOS, PM, APC) up to and
// including its terminator: BEL, ESC \ or the 8-bit ST (U+009C). Another
// ESC ends it too, and starts what follows.
func skipString(text string, i int) int {
	for i < len(text) {
		switch {
		case text[i] == 0x07:
			return i + 1
		case text[i] == 0x1b:
			if i+1 < len(text) && text[i+1] == '\\' {
				return i + 2
			}
			return i
		case strings.HasPrefix(text[i:], "\u009c"):
			return i + len("\u009c")
		}
		i++
	}
	return i
}

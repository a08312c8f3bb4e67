package console

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// inertCases are terminal control sequences of every class, each between
// a word and a line: the text stays, the sequence goes. (A letter right
// after an ESC would be part of its sequence.)
var inertCases = []struct{ name, seq string }{
	{"CSI colour", "\x1b[31;1m"},
	{"CSI clear screen", "\x1b[2J\x1b[H"},
	{"CSI private mode", "\x1b[?1049h"},
	{"CSI with intermediate", "\x1b[1 q"},
	{"OSC 52 clipboard, BEL", "\x1b]52;c;cm0gLXJmIH4K\a"},
	{"OSC 8 link, ST", "\x1b]8;;https://evil.example/\x1b\\"},
	{"OSC title, 8-bit ST", "\x1b]0;pwned\u009c"},
	{"DCS", "\x1bP1$r0m\x1b\\"},
	{"APC", "\x1b_Gf=100;AAAA\x1b\\"},
	{"PM", "\x1b^private\x1b\\"},
	{"SOS", "\x1bXstring\x1b\\"},
	{"two-byte reset", "\x1bc"},
	{"charset designation", "\x1b(0"},
	{"DEC test", "\x1b#8"},
	{"lone ESC", "\x1b"},
	{"8-bit CSI", "\u009b2J"},
	{"8-bit OSC", "\u009d52;c;eA==\a"},
	{"8-bit DCS", "\u0090q\u009c"},
	{"8-bit APC", "\u009fdata\u009c"},
	{"other C1", "\u0085\u0084\u008d"},
	{"raw 8-bit CSI byte", "\x9b2J"},
	{"carriage return", "\r"},
	{"backspace", "\b\b\b"},
	{"bell", "\a"},
	{"NUL and DEL", "\x00\x7f"},
	{"vertical tab and form feed", "\v\f"},
}

func TestInertDropsEveryControlSequence(t *testing.T) {
	for _, tc := range inertCases {
		in := "before" + tc.seq + "\nafter"
		want := "before\nafter"
		if tc.name == "raw 8-bit CSI byte" {
			// Not UTF-8: the byte becomes U+FFFD; its parameters are text.
			want = "before\ufffd2J\nafter"
		}
		if got := inert(in); got != want {
			t.Errorf("%s: inert(%q) = %q, want %q", tc.name, in, got, want)
		}
	}
}

func TestInertKeepsText(t *testing.T) {
	for _, s := range []string{
		"plain",
		"lines\nand\ttabs\n",
		"ünïcödé ✓ ⏳ `code` — 日本語 🙂",
		"[brackets] ]not osc[ ^caret _under",
		"",
	} {
		if got := inert(s); got != s {
			t.Errorf("inert(%q) = %q, want it unchanged", s, got)
		}
	}
}

func TestInertUnterminatedString(t *testing.T) {
	// An OSC without terminator runs to the end of the text (a terminal
	// would swallow what follows); one ended by another ESC stops there.
	for in, want := range map[string]string{
		"a\x1b]52;c;AAAA":                   "a",
		"a\x1b]52;c;AAAA\x1b[31mb":          "ab",
		"a\x1b[31":                          "a",
		"a\x1b[31\nb":                       "a\nb",
		"\x1b\x1b[2Jx":                      "x",
		"x\x1b\u0085y":                      "xy",
		"\x1b]8;;u\x1b\\link\x1b]8;;\x1b\\": "link",
	} {
		if got := inert(in); got != want {
			t.Errorf("inert(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzInert: whatever the input, the output has no ESC, no C1 control (as a
// rune or a stray byte), no C0 control but newline and tab, is valid UTF-8,
// and inert changes it no further.
func FuzzInert(f *testing.F) {
	for _, tc := range inertCases {
		f.Add("x" + tc.seq + "y")
	}
	f.Add("\x1b]52;c;\x1b")
	f.Add("\xc2\x9b31m")
	f.Fuzz(func(t *testing.T, s string) {
		out := inert(s)
		if !utf8.ValidString(out) {
			t.Fatalf("inert(%q) = %q: not UTF-8", s, out)
		}
		for _, r := range out {
			if r == 0x1b || r >= 0x80 && r <= 0x9f || r < 0x20 && r != '\n' && r != '\t' || r == 0x7f {
				t.Fatalf("inert(%q) = %q: contains %U", s, out, r)
			}
		}
		if strings.ContainsRune(out, 0x1b) {
			t.Fatalf("inert(%q) kept an ESC", s)
		}
		if again := inert(out); again != out {
			t.Fatalf("inert is not idempotent: inert(%q) = %q, inert of that = %q", s, out, again)
		}
	})
}

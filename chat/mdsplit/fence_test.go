package mdsplit

import (
	"strings"
	"testing"
)

// The fence rules Slack, Discord and splitting share (CommonMark's), each
// pinned: the splitter's own checks use the same parser, so they would not
// see it change.
func TestOpeningFence(t *testing.T) {
	for _, c := range []struct {
		line                 string
		marker, indent, info string
		ok                   bool
	}{
		{"```", "```", "", "", true},
		{"   ~~~~ go  ", "~~~~", "   ", "go", true},
		{"````md", "````", "", "md", true},
		{"```a``` is a code span", "", "", "", false},
		{"~~~ a`b", "~~~", "", "a`b", true}, // a tilde fence's info may hold a backtick
		{"    ```", "", "", "", false},      // four spaces: indented code
		{"``", "", "", "", false},
		{"see ``` here", "", "", "", false}, // in prose: text
		{"", "", "", "", false},
	} {
		m, in, info, ok := OpeningFence(c.line)
		if m != c.marker || in != c.indent || info != c.info || ok != c.ok {
			t.Errorf("OpeningFence(%q) = %q %q %q %v, want %q %q %q %v", c.line, m, in, info, ok, c.marker, c.indent, c.info, c.ok)
		}
	}
}

func TestClosesFence(t *testing.T) {
	for _, c := range []struct {
		line, marker string
		want         bool
	}{
		{"```", "```", true},
		{"   `````  ", "```", true}, // longer, indented, trailing spaces
		{"``", "```", false},        // shorter
		{"~~~", "```", false},       // other character
		{"```go", "```", false},     // an info string opens, never closes
		{"    ```", "```", false},   // four spaces: code
		{"``` x", "```", false},
	} {
		if got := ClosesFence(c.line, c.marker); got != c.want {
			t.Errorf("ClosesFence(%q, %q) = %v, want %v", c.line, c.marker, got, c.want)
		}
	}
}

func TestBreakFences(t *testing.T) {
	for in, want := range map[string]string{
		"no fence ``":   "no fence ``",
		"```go":         "``\u200b`go",
		"a ```` b":      "a ``\u200b`` b",
		"``````":        "``\u200b``\u200b``",
		"x ``` y ``` z": "x ``\u200b` y ``\u200b` z",
	} {
		if got := BreakFences(in); got != want {
			t.Errorf("BreakFences(%q) = %q, want %q", in, got, want)
		}
		if strings.Contains(BreakFences(in), "```") {
			t.Errorf("BreakFences(%q) leaves ```", in)
		}
	}
}

// Backticks the model writes in prose (a code span on a line of its own,
// ``` mid-sentence, an indented fence) open no block: splitting them must
// not close and reopen code around the prose that follows.
func TestChunksProseFencesOpenNoBlock(t *testing.T) {
	prose := strings.Repeat("plain words here ", 30)
	for _, head := range []string{"```a``` is inline", "see ``` here", "    ```"} {
		chunks := Chunks(head+"\n"+prose, 100, nil)
		for i, c := range chunks {
			if strings.HasSuffix(c, "\n```") || i > 0 && strings.HasPrefix(c, "```") {
				t.Errorf("%q: chunk %d is made code: %q", head, i, c)
			}
		}
	}
}

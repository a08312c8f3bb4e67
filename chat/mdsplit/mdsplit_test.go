package mdsplit

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

func checkChunks(t *testing.T, text string, limit int, chunks []string) {
	t.Helper()
	for i, c := range chunks {
		if n := utf8.RuneCountInString(c); n > limit {
			t.Fatalf("chunk %d has %d runes, limit %d", i, n, limit)
		}
		if f := openFence(c, limit); f != nil {
			t.Fatalf("chunk %d leaves a code block open:\n%s", i, c)
		}
	}
	// Nothing is lost: the words of the text appear in order.
	if got, want := words(strings.Join(chunks, "\n"), limit), words(text, limit); got != want {
		t.Fatalf("content changed by splitting:\nwant %q\n got %q", want, got)
	}
}

var longFence = regexp.MustCompile("(?m)^ {0,3}(?:`+|~+)")

// words is the text without its fence lines (which splitting adds) and
// whitespace (where it cuts).
func words(s string, limit int) string {
	var kept []string
	var f *fence
	for _, l := range strings.Split(s, "\n") {
		switch {
		case f == nil && parseFence(l, limit) != nil:
			f = parseFence(l, limit)
		case f != nil && f.closedBy(l):
			f = nil
		default:
			kept = append(kept, l)
		}
	}
	return strings.Join(strings.Fields(strings.Join(kept, " ")), "")
}

func TestChunksShortTextIsOneChunk(t *testing.T) {
	if got := Chunks("hello\nworld", 100, nil); len(got) != 1 || got[0] != "hello\nworld" {
		t.Fatalf("Chunks = %q", got)
	}
}

func TestChunksPrefersParagraphs(t *testing.T) {
	p1 := strings.Repeat("a", 60)
	p2 := strings.Repeat("b", 60)
	text := p1 + "\n\n" + p2
	got := Chunks(text, 100, nil)
	if len(got) != 2 || got[0] != p1 || got[1] != p2 {
		t.Fatalf("Chunks = %q, want the two paragraphs", got)
	}
}

func TestChunksKeepsCodeBlocksBalanced(t *testing.T) {
	var b strings.Builder
	b.WriteString("Here is the change:\n\n```go\n")
	for i := range 200 {
		fmt.Fprintf(&b, "fmt.Println(%d) // line %d\n", i, i)
	}
	b.WriteString("```\n\nThat's all.")
	text := b.String()
	chunks := Chunks(text, 2000, nil)
	if len(chunks) < 3 {
		t.Fatalf("chunks = %d", len(chunks))
	}
	checkChunks(t, text, 2000, chunks)
	for i, c := range chunks[1 : len(chunks)-1] {
		if !strings.HasPrefix(c, "```go\n") {
			t.Fatalf("chunk %d does not reopen the block with its language: %q", i+1, c[:20])
		}
	}
	if !strings.HasSuffix(chunks[len(chunks)-1], "That's all.") {
		t.Fatal("lost the tail")
	}
}

func TestChunksCutsOverlongLines(t *testing.T) {
	line := strings.Repeat("word ", 1000)
	chunks := Chunks(line, 500, nil)
	checkChunks(t, line, 500, chunks)
	unbroken := strings.Repeat("x", 1234)
	chunks = Chunks(unbroken, 100, nil)
	checkChunks(t, unbroken, 100, chunks)
	if strings.Join(chunks, "") != unbroken {
		t.Fatal("unbroken line not reassembled")
	}
}

func TestChunksRandomMarkdown(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"text line with some words", "", "```go", "```", "code();", "ünïcødé ✓ 漢字", strings.Repeat("long ", 80)}
	for iter := range 200 {
		var b strings.Builder
		inFence := false
		for range 50 + r.IntN(300) {
			p := pieces[r.IntN(len(pieces))]
			if p == "```go" || p == "```" {
				if inFence {
					p = "```"
				} else {
					p = "```go"
				}
				inFence = !inFence
			}
			b.WriteString(p + "\n")
		}
		if inFence {
			b.WriteString("```\n")
		}
		limit := 100 + r.IntN(3000)
		text := b.String()
		t.Run(fmt.Sprint(iter), func(t *testing.T) { checkChunks(t, text, limit, Chunks(text, limit, nil)) })
	}
}

// Fences that are hard to keep whole, each case on its own.
func TestChunksFenceDefects(t *testing.T) {
	t.Run("four backticks keep their room to close", func(t *testing.T) {
		// A line inside a ```` block leaves room for its own closing
		// fence, not for ``` only (which makes 2,001 characters).
		text := "````md\n" + strings.Repeat("y", 1993) + "\n" + strings.Repeat("z", 100) + "\n````"
		chunks := Chunks(text, 2000, nil)
		checkChunks(t, text, 2000, chunks)
		for i, c := range chunks {
			if !strings.HasPrefix(c, "````md\n") || !strings.HasSuffix(c, "\n````") {
				t.Errorf("chunk %d is not a whole ```` block: %q…%q", i, c[:10], c[len(c)-10:])
			}
		}
	})
	t.Run("no empty code block when the first line does not fit", func(t *testing.T) {
		text := strings.Repeat("a", 90) + "\n```go\n" + strings.Repeat("b", 50) + "\n```"
		chunks := Chunks(text, 100, nil)
		checkChunks(t, text, 100, chunks)
		for i, c := range chunks {
			if strings.Contains(c, "```go\n```") {
				t.Errorf("chunk %d is an empty code block: %q", i, c)
			}
		}
		if len(chunks) != 2 || chunks[1] != "```go\n"+strings.Repeat("b", 50)+"\n```" {
			t.Errorf("chunks %q, want the prose, then the whole block", chunks)
		}
	})
	t.Run("a longer closing fence closes", func(t *testing.T) {
		text := "```\ncode\n`````\n" + strings.Repeat("after the block ", 20)
		chunks := Chunks(text, 100, nil)
		checkChunks(t, text, 100, chunks)
		if strings.HasPrefix(chunks[len(chunks)-1], "```") {
			t.Errorf("the text after the block was reopened as code: %q", chunks)
		}
	})
	t.Run("an unclosed block is closed", func(t *testing.T) {
		// A streaming preview stops mid-block; Slack would show its backticks.
		for _, limit := range []int{1000, 40} {
			got := Chunks("Here:\n```go\nfunc main() {", limit, nil)
			if f := openFence(got[len(got)-1], limit); f != nil || !strings.HasSuffix(got[len(got)-1], "\n```") {
				t.Errorf("limit %d: %q, want the block closed", limit, got)
			}
		}
	})
}

// Measured on what is sent: a platform that escapes < into &lt; gets chunks
// that fit after escaping.
func TestChunksMeasuresTheSentText(t *testing.T) {
	escaped := func(s string) int {
		return utf8.RuneCountInString(strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s))
	}
	text := strings.Repeat("<div>&nbsp;</div>\n", 400) + "```html\n" + strings.Repeat("<p>&amp;</p>\n", 400) + "```"
	chunks := Chunks(text, 3500, escaped)
	for i, c := range chunks {
		if n := escaped(c); n > 3500 {
			t.Errorf("chunk %d measures %d, over 3500", i, n)
		}
	}
	if strings.Join(strings.Fields(strings.Join(chunks, "\n")), "") == "" {
		t.Fatal("no content")
	}
}

// A construct the platform renders across lines (a Slack table becomes a
// code block) measures more as a whole than its lines one by one: the chunk
// is split again until the whole fits.
func TestChunksRefitsWhatMeasuresMoreAsAWhole(t *testing.T) {
	// Every line break costs 4 more in the sent text than the splitter's
	// per-line estimate counts.
	measure := func(s string) int { return utf8.RuneCountInString(s) + 4*strings.Count(s, "\n") }
	text := strings.Repeat("| a row of a table |\n", 60)
	chunks := Chunks(text, 200, measure)
	for i, c := range chunks {
		if n := measure(c); n > 200 {
			t.Errorf("chunk %d measures %d, over 200", i, n)
		}
	}
	if got := strings.Count(strings.Join(chunks, "\n"), "a row"); got != 60 {
		t.Errorf("the chunks hold %d rows, want 60", got)
	}
}

// FuzzChunks: for any text and limit, chunks fit, no block is left open, and
// the words come out in order (fence lines aside).
func FuzzChunks(f *testing.F) {
	f.Add("hello\n\nworld", 100)
	f.Add("````md\n```go\nx\n```\n````", 20)
	f.Add("```\n"+strings.Repeat("a ", 300), 50)
	f.Add(strings.Repeat("~~~\n", 9), 16)
	f.Fuzz(func(t *testing.T, text string, limit int) {
		if !utf8.ValidString(text) || limit < 0 || limit > 5000 {
			return
		}
		limit = max(limit, MinLimit)
		chunks := Chunks(text, limit, nil)
		for i, c := range chunks {
			if n := utf8.RuneCountInString(c); n > limit {
				t.Fatalf("chunk %d has %d runes, limit %d", i, n, limit)
			}
			if openFence(c, limit) != nil {
				t.Fatalf("chunk %d leaves a block open: %q", i, c)
			}
		}
		// A fence longer than a quarter of the limit is text to Chunks but
		// still closes a block: words cannot tell, so such texts are not
		// compared.
		if longFence.MatchString(text) && strings.ContainsAny(text, "`~") {
			for _, l := range strings.Split(text, "\n") {
				if m := longFence.FindString(l); len(strings.TrimLeft(m, " ")) > limit/4 {
					return
				}
			}
		}
		if got, want := words(strings.Join(chunks, "\n"), limit), words(text, limit); got != want {
			t.Fatalf("content changed:\nwant %q\n got %q", want, got)
		}
	})
}

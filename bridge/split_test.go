package bridge

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

func fenceCount(s string) int {
	n := 0
	for _, l := range strings.Split(s, "\n") {
		if isFence(l) {
			n++
		}
	}
	return n
}

func checkChunks(t *testing.T, text string, limit int, chunks []string) {
	t.Helper()
	for i, c := range chunks {
		if n := utf8.RuneCountInString(c); n > limit {
			t.Fatalf("chunk %d has %d runes, limit %d", i, n, limit)
		}
		if fenceCount(c)%2 != 0 {
			t.Fatalf("chunk %d leaves a code block open:\n%s", i, c)
		}
	}
	// Nothing is lost: the words of the text appear in order.
	joined := strings.Join(chunks, "\n")
	want := strings.Fields(strings.NewReplacer("```go", "", "```", "").Replace(text))
	got := strings.Fields(strings.NewReplacer("```go", "", "```", "").Replace(joined))
	if strings.Join(got, "") != strings.Join(want, "") {
		t.Fatalf("content changed by splitting")
	}
}

func TestSplitShortTextIsOneChunk(t *testing.T) {
	if got := Split("hello\nworld", 100); len(got) != 1 || got[0] != "hello\nworld" {
		t.Fatalf("Split = %q", got)
	}
}

func TestSplitPrefersParagraphs(t *testing.T) {
	p1 := strings.Repeat("a", 60)
	p2 := strings.Repeat("b", 60)
	text := p1 + "\n\n" + p2
	got := Split(text, 100)
	if len(got) != 2 || got[0] != p1 || got[1] != p2 {
		t.Fatalf("Split = %q, want the two paragraphs", got)
	}
}

func TestSplitKeepsCodeBlocksBalanced(t *testing.T) {
	var b strings.Builder
	b.WriteString("Here is the change:\n\n```go\n")
	for i := range 200 {
		fmt.Fprintf(&b, "fmt.Println(%d) // line %d\n", i, i)
	}
	b.WriteString("```\n\nThat's all.")
	text := b.String()
	chunks := Split(text, 2000)
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

func TestSplitCutsOverlongLines(t *testing.T) {
	line := strings.Repeat("word ", 1000)
	chunks := Split(line, 500)
	checkChunks(t, line, 500, chunks)
	unbroken := strings.Repeat("x", 1234)
	chunks = Split(unbroken, 100)
	checkChunks(t, unbroken, 100, chunks)
	if strings.Join(chunks, "") != unbroken {
		t.Fatal("unbroken line not reassembled")
	}
}

func TestSplitRandomMarkdown(t *testing.T) {
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
		t.Run(fmt.Sprint(iter), func(t *testing.T) { checkChunks(t, text, limit, Split(text, limit)) })
	}
}

package compaction

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/threadsmith/threadsmith/agent/llm"
)

// fresh is EstimateTokens without the cache: every text and argument
// measured anew.
func fresh(m llm.Message) int {
	chars := 0
	for _, c := range m.Content {
		switch c.Type {
		case llm.ContentText:
			chars += utf16Len(c.Text)
		case llm.ContentThinking:
			chars += utf16Len(c.Thinking)
		case llm.ContentToolCall:
			chars += utf16Len(c.Name) + measureArguments(c.Arguments)
		case llm.ContentImage:
			chars += imageChars
		}
	}
	return (chars + 3) / 4
}

// A second estimate of the same long text and arguments measures nothing.
func TestEstimateRemembersLengths(t *testing.T) {
	msgs := []llm.Message{
		userMsg(strings.Repeat("a long question ", 100)),
		toolCallMsg("write", fmt.Sprintf(`{"path":"a.go","content":%q}`, strings.Repeat("func f() {}\n", 100))),
	}
	for _, m := range msgs {
		EstimateTokens(m)
	}
	before := lengths.misses.Load()
	for _, m := range msgs {
		if got, want := EstimateTokens(m), fresh(m); got != want {
			t.Errorf("EstimateTokens = %d, want %d", got, want)
		}
	}
	if n := lengths.misses.Load() - before; n != 0 {
		t.Errorf("the second estimate measured %d texts again", n)
	}
}

// No remembered length outlives what it measured: an edited text, a text
// that starts where another did, arguments changed in place, and texts whose
// memory the collector could hand to new ones all get their own length.
func TestRememberedLengthsNeverGoStale(t *testing.T) {
	check := func(what string, m llm.Message) {
		t.Helper()
		if got, want := EstimateTokens(m), fresh(m); got != want {
			t.Fatalf("%s: EstimateTokens = %d, want %d", what, got, want)
		}
	}
	// An edit: the same length in bytes, another length in UTF-16.
	m := userMsg(strings.Repeat("ab", 200))
	check("original", m)
	m.Content[0].Text = strings.Repeat("é", 200)
	check("edited", m)

	// The same address, another length.
	long := strings.Repeat("x", 1000) + strings.Repeat("😀", 100)
	check("whole", userMsg(long))
	check("prefix", userMsg(long[:1000]))
	check("longer prefix", userMsg(long[:1040]))

	// Arguments changed in place: same slice, same length, other content.
	args := []byte(`{"content":"` + strings.Repeat("é", 100) + `"}`)
	call := llm.Message{Role: llm.RoleAssistant, Content: []llm.Content{llm.ToolCall("c1", "write", json.RawMessage(args))}}
	check("arguments", call)
	copy(args[len(`{"content":"`):], strings.Repeat("a", 200))
	check("arguments changed in place", call)

	// Texts dropped, collected, and new texts of the same size allocated:
	// large ones, which the allocator tends to put where the last one was
	// (it would, were the memory not kept).
	for i := range 200 {
		s := strings.Repeat("ab", 40<<10)
		if i%2 == 1 {
			s = strings.Repeat("é", 40<<10)
		}
		check(fmt.Sprint("generation ", i), userMsg(s))
		runtime.GC()
	}
}

// More texts than the cache has room for: every estimate stays right, and
// what was replaced is let go.
func TestLengthCacheReplaces(t *testing.T) {
	var keep []llm.Message
	for i := range 3 * cacheSlots {
		m := userMsg(fmt.Sprintf("%0200d", i))
		if i%1000 == 0 {
			m = userMsg(strings.Repeat("é", 100+i%7))
		}
		if got, want := EstimateTokens(m), fresh(m); got != want {
			t.Fatalf("text %d: EstimateTokens = %d, want %d", i, got, want)
		}
		if i%5000 == 0 {
			keep = append(keep, m)
		}
	}
	for _, m := range keep {
		if got, want := EstimateTokens(m), fresh(m); got != want {
			t.Fatalf("EstimateTokens = %d, want %d", got, want)
		}
	}
	if b := lengths.bytes.Load(); b > cacheBytes || b < 0 {
		t.Errorf("the cache counts %d bytes, bound %d", b, cacheBytes)
	}
}

// Estimates from many goroutines at once, of shared messages and of their
// edits, agree with fresh measurements (and the race detector is quiet).
func TestLengthCacheConcurrent(t *testing.T) {
	shared := []llm.Message{
		userMsg(strings.Repeat("shared text ", 50)),
		toolCallMsg("edit", fmt.Sprintf(`{"old":%q,"new":%q}`, strings.Repeat("a\n", 100), strings.Repeat("é\n", 100))),
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				m := shared[i%2]
				if i%3 == 0 {
					m = userMsg(strings.Repeat(string(rune('a'+g)), 200+i))
				}
				if got, want := EstimateTokens(m), fresh(m); got != want {
					t.Errorf("goroutine %d: EstimateTokens = %d, want %d", g, got, want)
					return
				}
			}
		})
	}
	wg.Wait()
}

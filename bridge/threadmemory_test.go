package bridge

import (
	"fmt"
	"testing"

	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

// The Bridge's memory of threads does not grow with the threads it served:
// past its bound it forgets the oldest, and a reply in a forgotten thread is
// still taken, the store answering for it.
func TestThreadMemoryIsBoundedAndForgottenThreadsStillAnswer(t *testing.T) {
	t.Parallel()
	const bound, threads = 4, 12
	r := newRig(t, func(c *Config, _ *Platform) { c.threadMemory = bound })
	r.llm.Handle(func(q llmfake.Request) llmfake.Response {
		texts := userTexts(q)
		return llmfake.TextReply("ok: " + texts[len(texts)-1])
	})
	for i := range threads {
		th := testThread(fmt.Sprintf("90.%d", i+1))
		r.say(th, alice, fmt.Sprintf("hello %d", i), true)
		r.waitRuns(th, 1)
	}
	r.b.mu.Lock()
	n := r.b.known.Len()
	r.b.mu.Unlock()
	if n > bound {
		t.Fatalf("the bridge holds %d threads' keys after %d threads, want at most %d", n, threads, bound)
	}
	first := testThread("90.1")
	r.say(first, alice, "still there?", false)
	r.waitText(first, "ok: still there?")
}

package bridge

import (
	"fmt"
	"strconv"
	"testing"

	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

func TestBoundedKeepsTheLastKeysPut(t *testing.T) {
	b := newBounded[string, int](3)
	for i := range 5 {
		b.put("k"+strconv.Itoa(i), i)
	}
	if b.len() != 3 || b.has("k0") || b.has("k1") {
		t.Fatalf("holds %d keys (k0 %v, k1 %v), want the last 3", b.len(), b.has("k0"), b.has("k1"))
	}
	if v, ok := b.get("k4"); !ok || v != 4 {
		t.Fatalf("k4 = %d, %v", v, ok)
	}
	// A key deleted and put again is not forgotten when its old slot is.
	b.delete("k2")
	b.put("k2", 22)
	b.put("k5", 5) // takes k2's old slot
	if v, ok := b.get("k2"); !ok || v != 22 {
		t.Fatalf("k2 = %d, %v after its old slot was reused", v, ok)
	}
	if b.len() != 3 {
		t.Fatalf("holds %d keys, want 3", b.len())
	}
}

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
	n := r.b.known.len()
	r.b.mu.Unlock()
	if n > bound {
		t.Fatalf("the bridge holds %d threads' keys after %d threads, want at most %d", n, threads, bound)
	}
	first := testThread("90.1")
	r.say(first, alice, "still there?", false)
	r.waitText(first, "ok: still there?")
}

package bridge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

// Through the whole bridge — thread context in the system prompt, the real
// tools, storage, an eviction and a reload — every request of a thread repeats
// the previous one byte for byte before adding to it, so the provider's prompt
// cache serves the history.
func TestThreadRequestsExtendEachOtherAcrossAnEviction(t *testing.T) {
	t.Parallel()
	r := newRig(t, func(c *Config, _ *Platform) { c.IdleEvict = 100 * time.Millisecond })
	var turn atomic.Int32
	r.llm.Handle(func(req llmfake.Request) llmfake.Response {
		if req.LastMessage().Role == "tool" {
			return llmfake.TextReply("listed <it> & done")
		}
		n := turn.Add(1)
		return llmfake.ToolCallReply(llmfake.Call{ID: fmt.Sprintf("call_%d", n), Name: "ls", Args: `{"path": "."}`})
	})
	th := testThread("64.1")
	r.say(th, alice, "list the files", true)
	r.waitRuns(th, 1)
	r.say(th, alice, "again", false)
	r.waitRuns(th, 2)
	r.waitUntil("the idle thread is evicted", func() bool { return !r.live(th) })
	r.say(th, alice, "and once more", false)
	r.waitRuns(th, 3)

	reqs := r.requests()
	if len(reqs) != 6 {
		t.Fatalf("%d requests, want 6", len(reqs))
	}
	requestsExtendEachOther(t, reqs)
}

// requestsExtendEachOther checks that each request's messages begin with all
// of the previous request's.
func requestsExtendEachOther(t *testing.T, reqs []llmfake.Request) {
	t.Helper()
	for i := 1; i < len(reqs); i++ {
		prev, cur := messagesOf(t, reqs[i-1].Body), messagesOf(t, reqs[i].Body)
		head := bytes.TrimSuffix(prev, []byte("]"))
		if !bytes.HasPrefix(cur, head) {
			n := commonPrefix(head, cur)
			t.Errorf("request %d does not extend request %d; they differ from byte %d:\nnow: %.120s\nwas: %.120s", i+1, i, n, cur[n:], head[n:])
		}
	}
}

// commonPrefix is the length of the prefix a and b share.
func commonPrefix(a, b []byte) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func messagesOf(t *testing.T, body []byte) []byte {
	t.Helper()
	var fields struct {
		Messages json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &fields); err != nil {
		t.Fatal(err)
	}
	return fields.Messages
}

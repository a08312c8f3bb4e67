package bridge

import (
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/agent/tools"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

// A thread that fills its disk quota is told once, its model is told what
// to do, and another thread goes on as before.
func TestDiskQuotaIsToldInTheThreadOnce(t *testing.T) {
	t.Parallel()
	r := newRig(t, func(c *Config, _ *Platform) { c.Agent.DiskQuota = tools.Quota{Bytes: 64 << 10, Files: 1000} })
	big := `{"path":"big.txt","content":"` + strings.Repeat("x", 100<<10) + `"}`
	r.llm.Handle(func(req llmfake.Request) llmfake.Response {
		last := req.LastMessage()
		switch {
		case last.Role == "tool":
			return llmfake.TextReply("tool said: " + last.Content)
		case strings.Contains(last.Content, "fill"):
			return llmfake.ToolCallReply(llmfake.Call{ID: "fill", Name: "write", Args: big})
		}
		return llmfake.TextReply("hello back")
	})
	a, b := testThread("90.1"), testThread("90.2")
	r.say(a, alice, "fill the disk", true)
	r.waitRuns(a, 1)
	r.say(a, alice, "fill it again", false)
	r.waitRuns(a, 2)
	r.say(b, bob, "hello", true)
	r.waitText(b, "hello back")
	r.flush()

	ta := r.chat.Transcript(a)
	if n := strings.Count(ta, "This thread reached its disk quota"); n != 1 {
		t.Errorf("thread A was told %d times, want once:\n%s", n, ta)
	}
	if n := strings.Count(ta, "past this thread's disk quota"); n != 2 {
		t.Errorf("the model was told %d times of the refused write, want 2:\n%s", n, ta)
	}
	if tb := r.chat.Transcript(b); strings.Contains(tb, "disk quota") {
		t.Errorf("thread B was told of A's quota:\n%s", tb)
	}
}
